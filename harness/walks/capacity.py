"""How much more than the offered load a candidate carries, measured on itself (issue 84): the largest multiple of
the load (the same blocks, due more often) at which every line of its criterion holds, the applier's busy share
line included, up to CEILING, to within RESOLUTION. A multiple measured on another cell (a reference cell's
speed) does not track the candidate: between sittings the reference moved 1.89x while the design's busy share
moved 1.53x, and a rule built on it asked more than 1 / busy, which no screen can pass.

The search is the knee's bracket (walks/bracket.py) in the load's multiple, led by the candidate's own figure
where it has one: a block log's applier busy share is about linear in the load (M/D/1: its apply per block is the
same work), so the first step is just under where that line predicts the 0.85 bound is met, and the next one
RESOLUTION above it; two steps settle a design whose busy share is linear. Each step is judged only once steady
at its own load: a step whose applier was already behind at the clock (a warm-up backlog) failed to carry that
load, and the blocks it measured before it stopped are not its figure.

A step is a short screen from a fresh clone: its busy share is the phase's first minutes'. The candidate's own line
is judged where its trend carries it by the hour's growth (runner/trends.py), so a step's share is carried as far
(Growth): by the candidate's own rise per hour relative to its share, m times as steep at m times the load (its
database grows m times as fast). 12-05 (AMD, 2568m): the design's 0.707 rose +0.37/h to 0.750 by 12 min; its 1.33x
step read 83% over its 60 blocks, which that rise carries past 0.85."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from harness.results import RunResult
from harness.results.design import behind_at_clock, queryable_p99_ms
from harness.results.headroom import Capacity, CapacityStep
from harness.scenario.thresholds import parse_threshold
from harness.walks.bracket import Bracket

CEILING = 2.5              # the search's top: a candidate passing there carries "at least 2.5x"
FLOOR = 0.25               # below it, a failing alternative is "under 0.25x" (how far it is from the load)
RESOLUTION = 0.10          # fails_at / multiple once converged
MAX_STEPS = 6
UNDER_PREDICTION = 0.95    # the first step this far under the busy share's predicted capacity
NO_FIGURE_START = 1.15     # where to start without a figure to predict from: the within-sitting band


@dataclass(frozen=True)
class Growth:
    """The candidate's busy share's rise as its database grows, from its own full cell's trend at the offered load."""
    slope_per_h: float          # the fitted line's slope (share per hour of its phase)
    at_horizon: float           # its value at the horizon
    horizon_s: float            # the share of the criterion's hour it is carried to (Phases.size_horizon)

    @classmethod
    def of(cls, result: RunResult | None) -> "Growth | None":
        """From the busy-share line's trend of the candidate's cell; None where it has none or does not rise (a share
        that falls is not carried down: a step's own figure stands)."""
        t, _ = busy_line(result)
        tr = t.trend if t is not None else None
        if tr is None or tr.slope_per_h <= 0 or tr.at_horizon is None or not tr.horizon_s:
            return None
        return cls(tr.slope_per_h, tr.at_horizon, tr.horizon_s)

    def carried(self, busy: float, multiple: float, at_s: float) -> float:
        """A step's share measured about `at_s` into its phase, at `multiple` times the load, carried to the horizon:
        the candidate's relative rise from there, m times as steep."""
        fitted = self.at_horizon - self.slope_per_h * max(0.0, self.horizon_s - at_s) / 3600
        if fitted <= 0:
            return busy
        return busy * (1 + multiple * (self.at_horizon - fitted) / fitted)


def busy_line(result: RunResult | None):
    """(its threshold result, the parsed line) of a result's busy-share line, or (None, None)."""
    for t in result.thresholds if result is not None else []:
        line = parse_threshold(t.expr)
        if line.metric == "apply_utilisation":
            return t, line
    return None, None


def load_tag(tag: str, load: float) -> str:
    """A capacity step's cell tag: apart from the candidate's cells and from its other steps."""
    return f"{tag}-at-{load:.2f}x" if tag else f"at-{load:.2f}x"


def predicted(multiple: float, busy: float | None, bound: float | None) -> float | None:
    """The multiple at which a busy share measured at `multiple` reaches `bound`, if it is linear in the load."""
    if not busy or not bound or busy <= 0:
        return None
    return multiple * bound / busy


def first_multiple(busy_at_1x: float | None, bound: float | None) -> float:
    p = predicted(1.0, busy_at_1x, bound)
    return _clamp(p * UNDER_PREDICTION) if p else NO_FIGURE_START


def _clamp(x: float) -> float:
    return round(min(CEILING, max(FLOOR, x)), 3)


def search(measure: Callable[[float], CapacityStep], first: float, bound: float | None = None,
           max_steps: int = MAX_STEPS, passed_at_load: bool | None = None) -> Capacity:
    """Steps (measure(multiple) -> its step) until the bracket closes: a pass and a failure within RESOLUTION, a pass
    at CEILING, a failure at FLOOR, or max_steps. After the first step, each failure's busy share (where linear)
    guides the next step under it; otherwise the bracket's doubling and geometric bisection. passed_at_load: how its
    own cells at 1x came out (a candidate passed, an alternative failed), a known outcome with no step of its own:
    the 1284m design of 12-05 passed at 1x (78% busy), failed at 1.04x (98%), and its busy share then led a step
    to 0.85x, under what it had already carried."""
    # led by a prediction, the step just above it closes the bracket; without one, the bracket's doubling does
    fixed = [first, _clamp(first * (1 + RESOLUTION * 0.95))] if bound is not None and first != NO_FIGURE_START \
        else [first]
    br = Bracket(fixed, FLOOR, CEILING, RESOLUTION)
    if passed_at_load is not None:
        br.record(1.0, passed_at_load)
    steps: list[CapacityStep] = []
    while len(steps) < max_steps:
        x = _next(br, steps, bound)
        if x is None:
            break
        step = measure(x)
        steps.append(step)
        if step.error:              # neither a pass nor a failure: what it brackets so far, and why it stopped
            break
        br.record(x, step.passed)
    lo, hi = br.bounds()
    err = next((f"the step at {s.multiple:.2f}x: {s.why}" for s in steps if s.error), None)
    return Capacity(multiple=lo, fails_at=hi, ceiling=CEILING, resolution=RESOLUTION,
                    steps=sorted(steps, key=lambda s: s.multiple), error=err)


def _next(br: Bracket, steps: list[CapacityStep], bound: float | None) -> float | None:
    x = br.next()
    lo, hi = br.bounds()
    if x is None:       # every step passed: the ceiling itself, where the bracket's doubling stopped short of it
        return CEILING if hi is None and lo is not None and lo < CEILING else None
    last = steps[-1] if steps else None
    p = predicted(last.multiple, last.judged_busy(), bound) if last is not None and last.steady else None
    if p is not None and not last.passed and hi == last.multiple:      # under a failure: where its busy share says
        guess = _clamp(p * UNDER_PREDICTION)
        if guess < hi / (1 + RESOLUTION) and (lo is None or guess > lo * (1 + RESOLUTION)):
            return guess
    if p is not None and last.passed and lo == last.multiple and hi is None:
        # over a pass: where its busy share says the line is, a step past it if it is within reach, else under it
        # (the 5137m block log: 82% busy at 1.63x, sub-linear; doubling to 2.5x fell behind in its warm-up)
        nearest = lo * (1 + RESOLUTION * 0.95)
        return _clamp(nearest if p <= nearest * 1.05 else max(nearest, p * UNDER_PREDICTION))
    return _clamp(x)


def step_of(multiple: float, result: RunResult | None, cell: str | None, growth: Growth | None = None) -> CapacityStep:
    """A step's judgement from its cell's result: every threshold (the busy share's included, carried by `growth`
    where the candidate's share rises), and steady at the clock (a block log's backlog carried from its warm-up, past
    the lag bound, is no steady state)."""
    if result is None or result.status not in ("passed", "failed", "oom"):
        why = "no result" if result is None else f"{result.status}: {result.error or '-'}"
        return CapacityStep(multiple=multiple, passed=False, error=True, why=why, cell=cell)
    m, bl = result.metrics, result.metrics.block_log
    behind = behind_at_clock(result)
    if behind is not None:
        return CapacityStep(multiple=multiple, passed=False, steady=False, cell=cell,
                            why=f"fell {behind:g} blocks behind in its warm-up (bound {bl.lag_bound_blocks})")
    passed = result.status == "passed"
    crossed = [_crossed(t) for t in result.thresholds if not t.passed]
    busy = bl.apply_utilisation if bl else None
    _, line = busy_line(result)
    carried = growth.carried(busy, multiple, m.measured_s / 2) if growth and busy is not None and line else None
    if carried is not None and not line.passes(carried):
        passed = False
        crossed.append(f"applier {busy:.0%} busy, {carried:.0%} by {growth.horizon_s / 60:g} min as its database "
                       f"grows ({line.op} {line.limit:.0%})")
    return CapacityStep(multiple=multiple, passed=passed, why=None if passed else "; ".join(crossed) or result.error
                        or result.status, cell=cell, busy=busy, busy_at_horizon=carried,
                        lag_p99_blocks=bl.apply_lag_blocks.p99 if bl else None,
                        p99_ms=m.commit_latency_ms.p99, queryable_p99_ms=queryable_p99_ms(m))


def _crossed(t) -> str:
    th = parse_threshold(t.expr)
    if t.value is None:
        return f"{t.expr}: {t.error or 'no value'}"
    if th.metric == "apply_utilisation":
        return f"applier {t.value:.0%} busy ({th.op} {th.limit:.0%})"
    return f"{th.agg}({th.metric}) {t.value:,.4g} ({th.op} {th.limit:,.4g})"
