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
