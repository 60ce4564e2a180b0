"""What a cell is for, and so what it may cost (harness/walks/verdict/walk.py runs them)."""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass

from harness.scenario.thresholds import parse_threshold


def log(msg: str) -> None:
    print(f"[verdict] {msg}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Role:
    """A candidate could be the answer: every criterion in full, then its capacity's steps (or, in a walk without a
    reference cell, a close call run again). Nothing else is confirmed: a control runs once; a trade-off (never the
    answer) is screened, once, on the first criterion over a short phase. A capacity step runs its blocks due
    `load` times as often; the reference cell is `fixed`: the same cell in every sitting, whatever the walk's
    durability or horizon."""
    label: str
    criteria: int | None = None          # how many of the criteria, in order (None: all)
    confirm: bool = False
    screen_blocks: int | None = None     # a screen's measured blocks
    load: float = 1.0                    # the offered load's multiple: blocks due this many times as often
    fixed: bool = False


CANDIDATE = Role("candidate", confirm=True)
CONTROL = Role("control")


def screen(blocks: int, what: str = "") -> Role:
    """The first criterion over `blocks` measured blocks, once; `what` before the label ("control, ")."""
    return Role(f"{what}screened over {blocks} blocks", criteria=1, screen_blocks=blocks)


def at_load(blocks: int, load: float) -> Role:
    """A step of a candidate's capacity: the first criterion with its blocks due `load` times as often."""
    return Role(f"capacity step at {load:.2f}x the load, over {blocks} blocks", criteria=1, screen_blocks=blocks,
                load=load)


def reference_role(blocks: int) -> Role:
    return Role("reference cell", criteria=1, screen_blocks=blocks, fixed=True)


def scaled_rates(thresholds: tuple[str, ...] | None, load: float) -> tuple[str, ...] | None:
    """An absolute rate's line at `load` times the offered rate ('rate(rows) > 5700' at 1.5x: > 8550); a share of
    the offered rate ('>= 95%') and every other line stand as they are."""
    if load == 1 or not thresholds:
        return thresholds
    out = []
    for expr in thresholds:
        t = parse_threshold(expr)
        out.append(f"{t.agg}({t.metric}) {t.op} {t.limit * load:.0f}" if t.agg == "rate" and not t.of_offered else expr)
    return tuple(out)


def headroom_tag(tag: str) -> str:
    """A candidate's headroom screen's tag before verdict v9 (a published walk's screen): apart from its cells."""
    return f"{tag}-headroom" if tag else "headroom"


_STEP = re.compile(r"(^|-)(headroom|at-\d+\.\d+x)$")


def candidate_of(tag: str) -> str:
    """headroom_tag's and load_tag's inverse: the candidate a step's tag belongs to (any other tag as it is)."""
    return _STEP.sub("", tag)
