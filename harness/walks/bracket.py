"""One search for a knee along any axis (read rate, rows per block, MEM, database size): the largest value
of a monotone pass/fail whose cell passes. Values are stepped in *difficulty*: an axis where more is easier
(MEM) is searched on its reciprocal, so one bracket serves every axis. First the fixed steps (up to the first
failure), then doubling (up from a pass) or halving (down from a failure) within the axis's bounds, then
geometric bisection down to the resolution. Where a step's lines grow in proportion with the axis (a block's
latency with its rows), how far it was from its tightest line (`load`) says where the knee likely is: the next
step goes there instead of blindly (never further than the doubling, halving or bisection would), and at the
resolution's distance from the steps already run, so a failure there settles it. The knee is confirmed by a run
of its own; a refuted one moves the search below it. A step that errors is neither a pass nor a fail: it is run
once more, and a second error at the same value ends the search there, inconclusive."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Literal, Optional

Verdict = Literal["pass", "fail", "error"]


def verdict_of(status: str) -> Verdict:
    """A cell's status as a step: an oom is its answer (MEM too small); an error or a state that could not be
    built measured nothing."""
    return "pass" if status == "passed" else "fail" if status in ("failed", "oom") else "error"


class Bracket:
    """The values to try next, in difficulty (larger: harder), from the outcomes so far."""

    def __init__(self, fixed: list[float], floor: float, ceiling: float, resolution: float,
                 down: float | None = None, load: Optional[Callable[[float], Optional[float]]] = None) -> None:
        """down: the first value below a failure of every fixed step, before halving (a knee started where an
        earlier one was found: its neighbour below). load(x): the step at x's measured value over its limit on its
        tightest line (above 1: it failed there), where the lines grow in proportion with the axis; None unknown."""
        self.fixed, self.floor, self.ceiling, self.resolution = sorted(fixed), floor, ceiling, resolution
        self.down, self.load = down, load
        self.passed: set[float] = set()
        self.failed: set[float] = set()

    def record(self, x: float, ok: bool) -> None:
        (self.passed if ok else self.failed).add(x)

    def refute(self, x: float) -> None:
        """A knee whose confirmation failed: it is a failure now."""
        self.passed.discard(x)
        self.failed.add(x)

    def bounds(self) -> tuple[float | None, float | None]:
        """(the hardest pass below every failure, the easiest failure)."""
        hi = min(self.failed, default=None)
        lo = max((x for x in self.passed if hi is None or x < hi), default=None)
        return lo, hi

    def next(self) -> float | None:
        lo, hi = self.bounds()
        # the fixed steps between the hardest pass and the first failure: one under a pass (a step the search ran
        # ahead of, the 5137m block log's 1.12x after 1.40x passed) says again what the pass said
        for x in self.fixed:
            if x not in self.passed and x not in self.failed and (hi is None or x < hi) and (lo is None or x > lo):
                return x
        # up to the bound itself, unless a value already run is within the resolution of it (19,856m failed:
        # 20,009m would only say it again)
        near = 1 + 0.95 * self.resolution          # a pass and a failure this far apart have converged
        if hi is None:                             # everything passed: double, up to the ceiling
            base = lo if lo is not None else self.fixed[-1]
            if base * (1 + self.resolution) >= self.ceiling:
                return None
            return min(self._within(self._guess(base), base * near, 2 * base), self.ceiling)
        if lo is None:                             # everything failed: halve, down to the floor
            guess = self._guess(hi)
            if guess is None and self.down is not None and self.down < hi:     # once: a failed down is the new hi
                return self.down
            if hi <= self.floor * (1 + self.resolution):
                return None
            return self._within(guess, max(hi / 2, self.floor), hi / near, blind=max(hi / 2, self.floor))
        if hi / lo <= 1 + self.resolution:
            return None
        return self._within(self._between(lo, hi), lo * near, hi / near, blind=math.sqrt(lo * hi))

    def _load(self, x: float) -> float | None:
        """The step at x's load where it explains its outcome: above 1 for a failure, below for a pass (a step that
        failed on a line that does not grow with the axis, a rate, says nothing of where the knee is)."""
        r = self.load(x) if self.load else None
        if r is None or r <= 0 or (x in self.failed) != (r > 1):
            return None
        return r

    def _guess(self, x: float) -> float | None:
        """Where the step at x's tightest line would meet its limit: as the power of the axis through x and the
        next step beyond it on its side (a failure above it, a pass below), where it has one; else in
        proportion. At 5x (12-07) a checkpoint's ~300 ms rode on every fourth block whatever its rows: 1,400
        and 1,050 rows a block failed at 658 and 607 ms, a power of 0.28, not 1."""
        r = self._load(x)
        if not r:
            return None
        side = self.failed if x in self.failed else self.passed
        beyond = [y for y in side if (y > x if x in self.failed else y < x) and self._load(y)]
        if beyond:
            y = min(beyond, key=lambda v: abs(math.log(v / x)))
            power = math.log(self._load(y) / r) / math.log(y / x)
            if power > 0:
                return x * r ** (-1 / power)
        return x / r

    def _between(self, lo: float, hi: float) -> float | None:
        """Where the line crosses its limit between a pass and a failure, as a power of the axis through both
        steps (the 12-07 1x knee: 9% more rows, 31% more p99); one step's proportion where the other has none."""
        r_lo, r_hi = self._load(lo), self._load(hi)
        if r_lo and r_hi:
            return math.exp(math.log(lo) - math.log(r_lo) * math.log(hi / lo) / math.log(r_hi / r_lo))
        return self._guess(hi) or self._guess(lo)

    @staticmethod
    def _within(guess: float | None, low: float, high: float, blind: float | None = None) -> float:
        """The guess kept between low and high (no further than the blind step, the resolution's distance from
        the steps run); the blind step (default: high) without a guess or where no room is left between them."""
        blind = high if blind is None else blind
        if guess is None or low > high:
            return blind
        return min(max(guess, low), high)


@dataclass
class Walk:
    """What a search found: the knee (in difficulty), whether it converged, and where it stopped on errors."""
    knee: float | None = None
    converged: bool = False
    inconclusive_at: float | None = None
    verdicts: list[tuple[float, Verdict, bool]] = field(default_factory=list)   # (x, verdict, a confirmation)


def walk(bracket: Bracket, run_step: Callable[[float, bool], Verdict], max_steps: int,
         snap: Callable[[float], float] = lambda x: x) -> Walk:
    """Run steps (run_step(x, confirming) -> pass | fail | error) until the bracket has no next value, then
    confirm its knee. snap rounds a value to what the axis can run (whole rows, MiB)."""
    out = Walk()

    def step(x: float, confirming: bool) -> Verdict:
        v = run_step(x, confirming)
        out.verdicts.append((x, v, confirming))
        return v

    errors: dict[float, int] = {}
    while len(out.verdicts) < max_steps:
        x = bracket.next()
        if x is None:
            lo, _ = bracket.bounds()
            if lo is None:                         # not even the easiest value passed
                out.converged = True
                return out
            v = step(lo, True)
            if v == "pass":
                out.knee, out.converged = lo, True
                return out
            if v == "error":
                out.inconclusive_at = lo
                return out
            bracket.refute(lo)                     # refuted: the search goes on below it
            continue
        x = snap(x)
        if x in bracket.passed or x in bracket.failed:    # snapping met a value already run: converged
            bracket.resolution = math.inf
            continue
        v = step(x, False)
        if v == "error":
            errors[x] = errors.get(x, 0) + 1
            if errors[x] >= 2:
                out.inconclusive_at = x
                return out
            continue                               # the same value next: run once more
        bracket.record(x, v == "pass")
    return out
