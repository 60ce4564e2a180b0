"""Opt-in early abort: stop the measured phase once a latency threshold can no longer pass, whatever the
remaining blocks do. Only decidable cases abort, so an aborted cell is one that would have failed:
- max(x) < L: one block over L;
- pNN(x) over Ws < L: a complete window (W s of the phase behind it) ending at this block has its pNN
  over L;
- pNN(x) < L over the whole phase: more blocks over L than the final block count allows. That count is
  known only for a throttled writer (blocks are due on a fixed schedule); unthrottled runs skip it.
The same counts apply to a block log's `p99(apply_lag_blocks) < N`, on the lag each acknowledgement found: an
applier that falls behind stops as a latency failure does (its lag passes N on more blocks than the p99 allows).
Rate, gauge and '>' thresholds never abort.
With the criterion's hour (phases.horizon_s), a whole-phase latency line also aborts on its trend, as the end of the
phase would fail it (runner/trends.py: the slope's interval excludes 0 and the line carries the figure past its
limit by the hour): from JUDGE_MIN_WINDOWS complete 30 s windows up, once even the slope's lower bound carries it
past the limit by the hour. The end judges the same windows and more with the point estimate, which is steeper, so
an abort here fails there too unless later windows flatten it: a tune option that held its line for 300 blocks and
failed on its rise (SQLite's, 12-05: +370 ms/h [225, 516]) no longer runs every block to say so. A design's
busy-share line (`last(apply_utilisation) < 0.85`) does the same on the applier's share per window, read from the
design once the window is over.
A matrix cell may also end once it is settled: its service p50 can no longer go below the limit it was given
(the baseline's less the matrix's noise), the same whole-phase count on `p50(service_ms) < limit`. That is not
a failure: the cell is judged on the blocks it ran, and says it was settled. Given a time budget too, a cell
also settles once its clock (warm-up included) has passed the budget with every measured block over the
limit: so an option many times slower than the baseline (SQLite's mmap under a memory cgroup, ~30 s a block
against ~2 s) does not spend ten minutes proving what its first blocks showed; its row says it stopped so."""
from __future__ import annotations

from collections import deque

from harness.runner.metrics import percentile_rank
from harness.scenario.thresholds import Threshold, parse_threshold
from harness.trend import JUDGE_MIN_WINDOWS, WINDOW_S, aggregate, fit
from harness.units import format_figure

# the per-block metrics a rule can watch, and which of check()'s values each is
WATCHED = ("commit_ms", "service_ms", "apply_lag_blocks")

# HdrHistogram keeps 3 significant digits: count a block as over the limit only when it is clearly over,
# so rounding can never turn a passing threshold into an abort.
OVER_MARGIN = 1.002


class _Rule:
    def __init__(self, t: Threshold, expected_blocks: int | None) -> None:
        self.expr, self.metric = t.expr, t.metric
        self.limit_ms = t.limit * OVER_MARGIN
        self.pct = 100.0 if t.agg == "max" else float(t.agg[1:])
        self.window_s = t.window_s
        self.window: deque[tuple[float, bool]] = deque()
        self.window_over = 0
        # whole phase: how many blocks may be over the limit with pNN still under it
        self.allowed_over = (None if t.window_s is not None or expected_blocks is None
                             else expected_blocks - percentile_rank(self.pct, expected_blocks))
        self.over = 0

    def breached(self, end_s: float, value_ms: float, measured_s: float) -> bool:
        over = value_ms > self.limit_ms
        if self.pct == 100.0 and self.window_s is None:
            return over
        if self.window_s is None:
            self.over += over
            return self.allowed_over is not None and self.over > self.allowed_over
        self.window.append((end_s, over))
        self.window_over += over
        while end_s - self.window[0][0] > self.window_s:
            self.window_over -= self.window.popleft()[1]
        if measured_s < self.window_s:
            return False                     # not a complete window: the threshold does not judge it
        n = len(self.window)
        return n - self.window_over < percentile_rank(self.pct, n)   # the pNN rank lands on a value over L


class _TrendRule:
    """A whole-phase latency line carried to the horizon on its windows' trend (the module's docstring)."""

    def __init__(self, t: Threshold, horizon_s: float) -> None:
        self.t, self.expr, self.metric, self.horizon_s = t, t.expr, t.metric, horizon_s
        self.windows: list[tuple[float, float]] = []       # complete windows: (middle s, the window's figure)
        self.current: list[float] = []
        self.index = 0
        self.said: str | None = None

    def after_block(self, at: dict, values: dict, measured_s: float, share) -> bool:
        """After a measured block (EarlyAbort.check's figures): whether the line now crosses by the horizon."""
        return self.breached(at[self.metric], values[self.metric])

    def breached(self, at_s: float, value_ms: float) -> bool:
        """at_s: the sample's time in the measured phase, as the trend places it (a commit's due time, a service
        time's start); samples come in that order."""
        i = int(at_s // WINDOW_S)
        if i > self.index:
            if self.current:
                self.windows.append((self.index * WINDOW_S + WINDOW_S / 2, aggregate(self.t.agg, self.current)))
            self.current, self.index = [], i
            if len(self.windows) >= JUDGE_MIN_WINDOWS and self._crosses():
                return True
        self.current.append(value_ms)
        return False

    def _crosses(self) -> bool:
        f = fit(self.windows)
        if f is None or f.lo_per_s <= 0:
            return False
        low = f.at(0) + f.lo_per_s * self.horizon_s
        if self.t.passes(low):
            return False
        self.said = (f"even its slope's lower bound, +{format_figure(f.lo_per_s * 3600, '')}/h over {f.windows} "
                     f"windows, carries it to {format_figure(low, '')} by {self.horizon_s / 60:g} min")
        return True


class _ShareTrendRule(_TrendRule):
    """A design's busy-share line (`last(apply_utilisation) < 0.85`) carried to the horizon: its figure per window
    is the share itself, read from the design once the window is over, the windows the end's trend reads (12-05:
    SQLite's block log at 2568m and 5137m ran all 300 blocks to fail on a rise its first 150 already showed)."""

    def after_block(self, at: dict, values: dict, measured_s: float, share) -> bool:
        """share(start_s, end_s): the applier's busy share over that span of the measured phase, or None; no share
        (no applier apart): never."""
        if share is None:
            return False
        done, grew = int(measured_s // WINDOW_S), False
        while self.index < done:
            v = share(self.index * WINDOW_S, (self.index + 1) * WINDOW_S)
            if v is not None:
                self.windows.append((self.index * WINDOW_S + WINDOW_S / 2, v))
                grew = True
            self.index += 1
        return grew and len(self.windows) >= JUDGE_MIN_WINDOWS and self._crosses()


def trend_rules(thresholds: list[Threshold], horizon_s: float | None) -> list[_TrendRule]:
    """The lines runner/trends.py judges on a block's latency or a design's busy share, where the plan has an hour
    to carry them to (horizon_s: the plan's size horizon, Phases.size_horizon: both figures follow the database's
    size)."""
    if not horizon_s:
        return []
    judged = [t for t in thresholds if t.op in ("<", "<=") and not t.window_s and t.agg not in ("count", "rate")]
    return [_TrendRule(t, horizon_s) for t in judged if t.metric in ("commit_ms", "service_ms")] + \
        [_ShareTrendRule(t, horizon_s) for t in judged if t.metric == "apply_utilisation"]


class EarlyAbort:
    def __init__(self, thresholds: list[Threshold], expected_blocks: int | None,
                 settle_service_p50_ms: float | None = None, settle_budget_s: float | None = None,
                 horizon_s: float | None = None, share=None) -> None:
        """share(start_s, end_s): a design's applier busy share over a span of the measured phase (None: no
        applier apart), read by its busy-share line's trend."""
        self.rules = [_Rule(t, expected_blocks) for t in thresholds
                      if t.metric in WATCHED and t.op in ("<", "<=")
                      and (t.agg == "max" or t.percentile is not None)]
        self.trends = trend_rules(thresholds, horizon_s)
        self.share = share
        # settling needs the final block count: only a throttled writer's phase has one
        self.settle = (_Rule(parse_threshold(f"p50(service_ms) < {settle_service_p50_ms:.3f}"), expected_blocks)
                       if settle_service_p50_ms and expected_blocks else None)
        self.budget_s = settle_budget_s if self.settle is not None else None
        self.settle_limit_ms = round(self.settle.limit_ms / OVER_MARGIN, 3) if self.settle is not None else None
        self.reason: dict | None = None
        self.settled: dict | None = None

    def __bool__(self) -> bool:
        return bool(self.rules) or bool(self.trends) or self.settle is not None

    def check(self, end_s: float, commit_ms: float, service_ms: float, measured_s: float, block: int,
              lag_blocks: int | None = None) -> bool:
        """After each measured block; True once some threshold is certain to fail, or the cell is settled.
        lag_blocks: what the block's acknowledgement found unapplied (None: the engine applies what it commits)."""
        values = {"commit_ms": commit_ms, "service_ms": service_ms, "apply_lag_blocks": lag_blocks}
        for r in self.rules:
            value = values[r.metric]
            if value is not None and r.breached(end_s, value, measured_s):
                self.reason = {"threshold": r.expr, "measured_s": round(measured_s, 3), "block": block}
                return True
        at = {"commit_ms": measured_s - commit_ms / 1000, "service_ms": measured_s - service_ms / 1000}
        for tr in self.trends:
            if tr.after_block(at, values, measured_s, self.share):
                self.reason = {"threshold": tr.expr, "measured_s": round(measured_s, 3), "block": block,
                               "trend": tr.said}
                return True
        if self.settle is None:
            return False
        if self.settle.breached(end_s, service_ms, measured_s):
            self.settled = {"service_p50_ms_not_below": self.settle_limit_ms, "measured_s": round(measured_s, 3),
                            "block": block}
            return True
        if self.budget_s and end_s > self.budget_s and self.settle.over == block:
            self.settled = {"every_block_over_ms": self.settle_limit_ms, "budget_s": self.budget_s,
                            "measured_s": round(measured_s, 3), "block": block}
            return True
        return False


def expected_measured_blocks(interval_ms: float, warmup_s: float, measure_s: float) -> int | None:
    """Blocks due in [warmup_s, warmup_s + measure_s) on a fixed schedule; None when unthrottled."""
    interval_ns = int(interval_ms * 1e6)       # the writer's own integer schedule
    if interval_ns <= 0:
        return None
    warm_ns, end_ns = int(warmup_s * 1e9), int((warmup_s + measure_s) * 1e9)
    return -(-end_ns // interval_ns) - -(-warm_ns // interval_ns)
