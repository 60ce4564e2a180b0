"""verdict.json's answers: per memory level, the tree's answer as one typed object (v9: what a script reads), and
the stricter readers' answer from the same cells (harness/walks/verdict/answer.py, leaf.py, typed.py)."""
from __future__ import annotations

from typing import Literal, Optional

from harness.results.base import Model
from harness.results.headroom import Capacity, Headroom


class MemAnswer(Model):
    """The tree's answer at one memory level: the first engine that met every criterion there."""
    mem: str
    at_reference: Optional[str] = None          # the same ratio at the criterion's scale: "≈ 8.0 GB at 5x"
    status: Literal["answered", "none", "inconclusive"]
    engine: Optional[str] = None
    decision: str
    why: Optional[str] = None                   # inconclusive: the cell that errored
    tuned_with: Optional[str] = None            # the answer holds with this option (decision.yaml's tune)
    trade_offs: list[str] = []                  # what would pass there only by giving something up
    design: Optional[str] = None                # v4: no engine as deployed; the leaf's design that passed
    leaf: Optional[str] = None                  # v4: what the leaf measured there, in one sentence
    unstable: list[str] = []                    # v5: engines whose close calls' runs disagreed there, with them
    runs: list[str] = []                        # v6: the answer's close calls, k of n: "p99_5x: passed 3 of 3"
    headroom: Optional[Headroom] = None         # v7: the answer's pass at m times the load (v9: its capacity)
    fragile: bool = False                       # v7: it passes today only, and nothing with headroom passed here
    # v9: the answer as one typed object, what a script reads (harness/walks/verdict/typed.py)
    kind: Literal["engine", "option", "design", "none"] = "none"
    settings: dict = {}                         # the step's engine settings, and the option's or design's
    measured_at: Optional[str] = None           # the level whose cells it stands on (another: implied from there)
    capacity: Optional[float] = None            # the smallest capacity on record (multiple of the offered load)
    capacity_at_least: bool = False             # it passed at the search's ceiling: at least `capacity`
    capacity_sitting: Optional[str] = None      # the sitting that smallest came from
    durable_p99_ms: Optional[float] = None      # acknowledged (durable), from a block's due time
    queryable_p99_ms: Optional[float] = None    # a reader can see it, from its due time
    binding: Optional[str] = None               # the deciding figure closest to its line, beside it
    held: Optional[str] = None                  # "k of n" sittings it held with headroom in

    def headline(self) -> str:
        """Its decision (or why it is inconclusive), with its close calls' k of n: the summary's and report's line."""
        said = self.decision if self.status != "inconclusive" else f"inconclusive: {self.why}"
        return (said + (f" (a close call: {'; '.join(self.runs)})" if self.runs else "")
                + (f" (fragile: {self.headroom.says()})" if self.fragile and self.headroom else
                   f" ({self.headroom.says()})" if self.headroom else ""))

    def in_full(self) -> str:
        """The headline with what else the level found: trade-offs, unstable engines, the last leaf's design."""
        return (self.figures()
                + (f"; only with a trade-off: {'; '.join(self.trade_offs)}" if self.trade_offs else "")
                + (f"; unstable, so no answer: {'; '.join(self.unstable)}" if self.unstable else "")
                + (f"; the last leaf, measured: {self.leaf}" if self.leaf and not self.design else ""))

    def figures(self) -> str:
        """The headline, then a leaf design's figures after a colon (the design is the answer, said first)."""
        return self.headline() + (f": {self.leaf}" if self.design and self.leaf else "")


class ReaderAnswer(Model):
    """v9: per level, the answer for readers who must see a block within `line_ms` of its due time, from the walk's
    own cells (every criterion passed, queryable p99 under the line), or none with the closest and its figure."""
    mem: str
    line_ms: float
    status: Literal["answered", "none"]
    what: Optional[str] = None                  # "sqlite at its own settings", "sqlite: current_history_block_log"
    queryable_p99_ms: Optional[float] = None
    closest: Optional[str] = None               # none: the passing candidate nearest the line
    closest_ms: Optional[float] = None


class Alternative(Model):
    """v9: the candidate that came closest to passing among those that failed, and how far it is: its capacity (a
    multiple under 1), or why no load carries it."""
    engine: str
    what: str                                   # "sqlite with a block log in front", "sqlite at its own settings"
    mem: str                                    # where it came closest
    closeness: Optional[float] = None           # its largest measured / limit (over 1: failed)
    capacity: Optional[Capacity] = None
    why: Optional[str] = None                   # no steps run: why no load carries it

    def says(self) -> str:
        far = (f"carries {self.capacity.figure()} the offered load" + (f" ({self.capacity.binding()})"
               if self.capacity.binding() else "")) if self.capacity is not None else self.why or "-"
        return f"the closest alternative, {self.what} at {self.mem}: {far}"


def answer_source(a: MemAnswer, matrix: list, leaf: list):
    """The matrix or leaf cell an answer stands on (a leaf pass implied from another level: that level's)."""
    if a.design:
        engine, design = a.design.split(": ", 1)
        cells = {c.mem: c for c in leaf if c.engine == engine and c.design == design}
        c = cells.get(a.mem)
        return cells.get(c.implied_from, c) if c is not None and c.implied_from else c
    return next((c for c in matrix if c.engine == a.engine and c.mem == a.mem), None) if a.engine else None

