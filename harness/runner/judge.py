"""Judging a run after its clock: the rows against the model, the thresholds against what was measured, the
early abort's verdict, and the run's status."""
from __future__ import annotations

from harness.results import Integrity, Metrics, ThresholdResult
from harness.runner.abort import EarlyAbort
from harness.runner.counters import RunState
from harness.runner.metrics import percentile_rank
from harness.runner.outcome import Outcome, bounds_source, build_metrics, metric_source
from harness.runner.trends import phase_points, phase_s, unlined_trends, with_trends
from harness.scenario.plan import RunPlan
from harness.scenario.thresholds import evaluate
from harness.workload.digest import digest_rows


def verify(engine, plan: RunPlan, expected: dict, method: str | None = None) -> Integrity:
    """method: the plan's (model: every row's digest; counts: the row counts), unless given."""
    method = method or plan.integrity
    if method == "model":
        actual = digest_rows({t: engine.iter_rows(t) for t in expected})
    else:   # counts only: for scales where a full scan per table is too slow
        counts = engine.row_counts()
        actual = {t: f"{counts[t]}:*" for t in expected}
        expected = {t: f"{v.split(':')[0]}:*" for t, v in expected.items()}
    mismatched = sorted(t for t in expected if expected[t] != actual.get(t))
    return Integrity(ok=not mismatched, method=method, expected=expected, actual=actual,
                     mismatched_tables=mismatched or None)


# A percentile needs this many values to be more than the largest few: below it, a window's pNN is said as
# what it is. The walk judges on it all the same (the exact rank, as the whole phase's summary uses).
PERCENTILE_MIN_VALUES = 100


def window_note(t, plan: RunPlan) -> str | None:
    """A windowed pNN over fewer than PERCENTILE_MIN_VALUES blocks per window is the window's max (or
    near it): said, so 'p99 over 60s' at a 2 s cadence (30 blocks) reads as the max it is."""
    interval_ms = plan.workload.block_interval_ms
    if not t.window_s or not t.agg.startswith("p") or not interval_ms:
        return None
    n = int(t.window_s * 1000 / interval_ms)
    if n >= PERCENTILE_MIN_VALUES:
        return None
    k = n - percentile_rank(float(t.agg[1:]), n) + 1
    which = "max" if k == 1 else f"{k}{'nd' if k == 2 else 'rd' if k == 3 else 'th'} largest value"
    return (f"each {t.window_s} s window holds {n} blocks, fewer than the {PERCENTILE_MIN_VALUES} a {t.agg} needs: "
            f"it is judged on each window's {which}")


def judge(plan: RunPlan, state: RunState, out: Outcome, thresholds, abort: EarlyAbort | None, log) -> Metrics:
    """Thresholds with their measured values, the early abort, and the run's status; the metrics they read."""
    metrics = build_metrics(state, plan, out.load, out.final, out.spool, out.io)
    horizon_s, points, phase = plan.phases.horizon_s, phase_points(state), phase_s(state)
    metrics = metrics.model_copy(update={"trends": unlined_trends(points, phase, horizon_s)})
    results = [ThresholdResult(**t, note=window_note(th, plan)) for t, th in
               zip(evaluate(thresholds, metric_source(state, metrics), bounds_source(state)), thresholds)]
    results = with_trends(results, thresholds, points, phase, horizon_s, plan.phases.size_horizon(plan.scale))
    if abort and abort.reason:
        out.early_abort = abort.reason
        log(f"early abort after {abort.reason['measured_s']} s: {abort.reason['threshold']} can no longer pass"
            + (f" ({abort.reason['trend']})" if abort.reason.get("trend") else ""))
        results = [t.model_copy(update={"passed": False, "judged": "failed", "early_abort": True})
                   if t.expr == abort.reason["threshold"] else t for t in results]
    if abort and abort.settled:
        out.settled = abort.settled
        s = abort.settled
        log(f"settled after {s['block']} block{'s' * (s['block'] > 1)}: " + (
            f"past its {s['budget_s']:g} s budget with every block over {s['every_block_over_ms']:g} ms"
            if "budget_s" in s else f"service p50 cannot go below {s['service_p50_ms_not_below']:g} ms"))
    out.thresholds = results
    wrong = [c for c in state.answer_checks.values() if c.wrong]
    if not out.integrity.ok:
        out.status, out.error = "error", "integrity check failed: the engine's rows differ from the model"
    elif wrong:
        out.status, out.error = "error", (f"{sum(c.wrong for c in wrong)} read answers differ from the model "
                                          f"(reads_by_kind.*.wrong); first: {wrong[0].first_wrong}")
    else:
        out.status = "passed" if all(t.passed for t in results) else "failed"
    return metrics
