"""verdict.json's headroom (v7): the sitting's reference cells, and whether a candidate's pass holds with room for
the slowest sitting on record (harness/walks/verdict/headroom.py)."""
from __future__ import annotations

from typing import Optional

from harness.results.base import Model


class ReferenceRun(Model):
    """One reference cell of the walk: where in the walk it ran and its figure (the sitting's speed)."""
    at: str                                     # "start", "before libsql", "before the leaf", "end"
    cell: str                                   # <scenario>/<dir>
    started_utc: Optional[str] = None
    service_p50_ms: Optional[float] = None
    status: Optional[str] = None


class Headroom(Model):
    """A candidate that passed, at m times the offered load: m, where it comes from, and what held."""
    multiple: float
    basis: str                                  # the slowest sitting on record against this one
    passed: bool
    screen: str                                 # the screen's outcome: "passed", "failed: <why>"
    screen_cells: list[str] = []
    latency_over: list[str] = []                # its deciding latencies times m that cross their lines
    screen_p99_ms: Optional[float] = None       # the screen's commit (a block log's acknowledgement) p99 at m
    screen_busy: Optional[float] = None         # a block log's applier busy share at m
    reference_ms: Optional[float] = None        # this sitting's reference figure (service p50) m came from

    def at_m(self) -> str:
        """The screen's figures at m: '(at 1.52x: p99 12 ms, applier 71% busy)'."""
        parts = [*([f"p99 {self.screen_p99_ms:,.0f} ms"] if self.screen_p99_ms is not None else []),
                 *([f"applier {self.screen_busy:.0%} busy"] if self.screen_busy is not None else [])]
        return f" (at {self.multiple:.2f}x: {', '.join(parts)})" if parts else ""

    def says(self) -> str:
        if self.passed:
            return f"passes with headroom at {self.multiple:.2f}x the load{self.at_m()}"
        why = "; ".join([*([f"its screen {self.screen}"] if self.screen != "passed" else []), *self.latency_over])
        return f"passes today only: not at {self.multiple:.2f}x the load ({why}){self.at_m()}"


def fragile(cell) -> bool:
    """A pass without headroom: a matrix or leaf cell whose headroom check failed."""
    h = getattr(cell, "headroom", None)
    return cell.outcome == "pass" and h is not None and not h.passed
