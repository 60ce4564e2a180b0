"""Arguments more than one sub-command takes."""
from __future__ import annotations

import argparse


def overrides(p: argparse.ArgumentParser) -> None:
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="overrides",
                   help="override a scenario field, e.g. engines.sqlite.cache_size=1GB (repeatable)")


def place_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--place", default="local", help="where the cells run: local (one after another, here) or swarm "
                                                     "(a Docker Swarm's nodes, one cell per node; docs/placement.md)")
    p.add_argument("--mixed-nodes", action="store_true",
                   help="report cells from unlike nodes in one table anyway (the report says so)")


# the make variable for each argument a walk's command line can carry (Makefile: the targets pass them on)
MAKE_VARS = (("engine", "ENGINE"), ("scenario", "SCENARIO"), ("axis", "AXIS"), ("profile", "PROFILE"), ("mem", "MEM"),
             ("scale", "SCALE"), ("scales", "SCALES"), ("ratio", "RATIO"), ("mem_1x", "MEM_1X"), ("mixes", "MIXES"),
             ("connections", "CONNECTIONS"), ("points", "POINTS"), ("start_rows", "START_ROWS"), ("duration", "DURATION"))


def make_command(target: str, args: argparse.Namespace) -> str:
    """The make command that asks for what `args` holds, as a user types it: what a published figure names so a
    reader can run it again (a SET's durability= is DURABILITY=, as the Makefile passes it)."""
    parts = [f"make {target}"]
    for attr, var in MAKE_VARS:
        v = getattr(args, attr, None)
        if v not in (None, ""):
            parts.append(_var(var, f"{v:g}" if isinstance(v, float) else str(v)))
    sets = list(getattr(args, "overrides", None) or [])
    durability = [s for s in sets if s.startswith("durability=")]
    if durability:
        parts.append(_var("DURABILITY", durability[-1].split("=", 1)[1]))
    if rest := [s for s in sets if not s.startswith("durability=")]:
        parts.append(_var("SET", " ".join(rest)))
    if getattr(args, "drop_states", False):
        parts.append("DROP_STATES=1")
    if getattr(args, "runtime", "auto") not in (None, "auto"):
        parts.append(_var("RUNTIME", args.runtime))
    return " ".join(parts)


def _var(name: str, value: str) -> str:
    return f'{name}="{value}"' if " " in value else f"{name}={value}"
