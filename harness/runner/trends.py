"""Sustained means sustained: each threshold whose figure can accumulate (a latency, the apply lag, the WAL, the
applier's busy share) is tested for a trend over the measured phase (harness/trend.py) and fails "would fail within
the hour" where the slope is significant and carries the figure past its line by the plan's horizon (the criterion's
hour, phases.horizon_s). The figures without a line (the database's bytes) are reported with their slope."""
from __future__ import annotations

from harness.results import ThresholdResult
from harness.results.trend import TrendResult
from harness.runner.counters import RunState
from harness.scenario.thresholds import Threshold
from harness.trend import JUDGE_MIN_WINDOWS, METHOD, WINDOW_S, fit, windowed

ACCUMULATING = ("commit_ms", "service_ms", "apply_lag_blocks", "apply_lag_ms", "wal_bytes", "apply_utilisation")
# A block's cost follows the database's size (its indexes' share in memory): carried to the size horizon. A backlog
# (the apply lag) grows with time at the offered rate whatever the scale: carried to the whole hour.
FOLLOWS_SIZE = ("commit_ms", "service_ms", "apply_utilisation")
UNLINED = ("db_bytes", "wal_bytes")       # reported with their slope in metrics.trends


def phase_points(state: RunState) -> dict[str, list[tuple[float, float]]]:
    """Each figure's samples as (seconds since the measured phase's start, value): a block's latencies from its due
    time and its start, a gauge each sampler tick, a design's own (the lag at each acknowledgement, per-window busy)."""
    if state.measure_start_ns is None:
        return {}
    start_s = (state.measure_start_ns - state.t0_ns) / 1e9
    bl = state.block_log
    out = {"commit_ms": [(d - start_s, (e - d) * 1000) for d, e in zip(bl.due_s, bl.end_s)],
           "service_ms": [(s - start_s, (e - s) * 1000) for s, e in zip(bl.start_s, bl.end_s)]}
    out.update({k: [(t - start_s, v) for t, v in pts] for k, pts in state.gauge_points.items()})
    out.update(state.design_points)
    return out


def phase_s(state: RunState) -> float:
    end = state.window_end_ns or state.measure_end_ns
    return (end - state.measure_start_ns) / 1e9 if end and state.measure_start_ns else 0.0


def trend_of(points: list[tuple[float, float]], agg: str, phase: float, horizon_s: float | None,
             th: Threshold | None = None, horizon_of: str | None = None) -> TrendResult | None:
    """The trend of one figure read as `agg` per window; judged against th where there is a horizon."""
    f = fit(windowed(points, phase, agg))
    if f is None:
        return None
    at = f.at(horizon_s) if horizon_s else None
    # only an upper bound's figure is judged: it fails by growing, over a phase long enough to carry to the horizon
    rising = f.lo_per_s > 0 and f.windows >= JUDGE_MIN_WINDOWS
    return TrendResult(method=f"{METHOD}, {f.lags} lag{'s' * (f.lags > 1)}", window_s=WINDOW_S, windows=f.windows,
                       slope_per_h=round(f.slope_per_s * 3600, 6),
                       ci95_per_h=(round(f.lo_per_s * 3600, 6), round(f.hi_per_s * 3600, 6)), horizon_s=horizon_s,
                       horizon_of=horizon_of,
                       at_horizon=round(at, 6) if at is not None else None,
                       would_fail=bool(th is not None and at is not None and rising and not th.passes(at)))


def with_trends(results: list[ThresholdResult], thresholds: list[Threshold], points: dict, phase: float,
                horizon_s: float | None, size_horizon: tuple[float | None, str | None] = (None, None)
                ) -> list[ThresholdResult]:
    """Each accumulating upper-bound threshold with its trend; one that would fail by the horizon fails now.
    points, phase: phase_points(state), phase_s(state); size_horizon: Phases.size_horizon (None: horizon_s)."""
    out = []
    for r, th in zip(results, thresholds):
        if th.metric in ACCUMULATING and th.op in ("<", "<=") and not th.window_s and th.metric in points \
                and th.agg not in ("count", "rate"):
            at_s, why = size_horizon if th.metric in FOLLOWS_SIZE and size_horizon[0] else (horizon_s, None)
            tr = trend_of(points[th.metric], th.agg, phase, at_s, th, why)
            if tr is not None:
                r = r.model_copy(update={"trend": tr})
                if tr.would_fail and r.passed:
                    r = r.model_copy(update={"passed": False, "judged": "failed",
                                             "note": f"would fail within the hour: {tr.says()}"})
        out.append(r)
    return out


def unlined_trends(points: dict, phase: float, horizon_s: float | None) -> dict[str, TrendResult]:
    found = {k: trend_of(points[k], "last", phase, horizon_s) for k in UNLINED if points.get(k)}
    return {k: v for k, v in found.items() if v is not None}
