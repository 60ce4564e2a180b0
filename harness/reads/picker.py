"""Which query a reader asks next, and with what: the mix's weighted choice and its parameters (params.py
Draw), from a seed per reader. Every reader asks in this order, and bench-reads' loop the same queries."""
from __future__ import annotations

import bisect
import itertools
import random

from harness.reads.params import Draw


class Picker:
    """The mix's weighted choice of the next query and its parameters (reads/params.py Draw): what every
    reader asks, and bench-reads' loop in the same order from the same seed."""

    def __init__(self, queries, dc: tuple[int, int] | None = None) -> None:
        self.queries, self.draw = queries, Draw(queries, dc)
        self.cum = list(itertools.accumulate(q.weight for q in queries))

    def next(self, rng: random.Random) -> tuple[int, list[tuple] | None]:
        """(query index, its statements' parameters, or None when no sampled entity offers them)."""
        i = min(bisect.bisect_right(self.cum, rng.random() * self.cum[-1]), len(self.queries) - 1)
        return i, self.draw.params(i, rng)


def reader_rng(seed: int, i: int) -> random.Random:
    return random.Random(seed * 7919 + i)
