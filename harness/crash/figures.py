"""What a crash run found, as result.json (v8, its `crash` section): each kill's record summed, the thresholds
evaluated over the acknowledged blocks and the restarts' recovery, the failures that make it an error."""
from __future__ import annotations

from pathlib import Path

from harness.results import CrashFigures, LatencySummary, Metrics, ThresholdResult, write_json
from harness.runner.metrics import percentile_rank, summary_ms
from harness.runner.outcome import Outcome, histogram_value, make_result
from harness.scenario.plan import RunPlan
from harness.scenario.thresholds import NotEvaluable, evaluate, parse_threshold


def crash_figures(plan: RunPlan, c) -> CrashFigures:
    survives = plan.survives
    promised = survives in (("process_kill", "power_cut") if plan.workload.crash.mode == "kill" else ("power_cut",))
    rec = [k.recovery_s for k in c.kills if k.recovery_s is not None]
    landed: dict[str, int] = {}
    for k in c.kills:
        landed[k.landed_in] = landed.get(k.landed_in, 0) + 1
    return CrashFigures(
        mode=plan.workload.crash.mode, durability=plan.durability, survives=survives, promised=promised,
        kills=c.kills, acknowledged_blocks=c.acked, lost_acked_blocks=sum(k.lost_acked_blocks for k in c.kills),
        unacked_blocks=sum(k.unacked_blocks for k in c.kills), corrupt_restarts=sum(k.corrupt for k in c.kills),
        recovery_s=_seconds_summary(rec), landed=landed)


def _seconds_summary(values: list[float]) -> LatencySummary:
    if not values:
        return LatencySummary()
    s = sorted(values)
    at = lambda p: s[percentile_rank(p, len(s)) - 1]        # noqa: E731
    return LatencySummary(count=len(s), p50=at(50), p95=at(95), p99=at(99), p999=at(99.9), max=s[-1],
                          mean=round(sum(s) / len(s), 4))


def crash_source(c, figures: CrashFigures):
    recovery_ms = sorted(k.recovery_s * 1000 for k in c.kills if k.recovery_s is not None)

    def source(agg: str, metric: str, window_s):
        if window_s is not None:
            raise NotEvaluable("a crash run has no windows")
        if metric == "lost_acked_blocks":
            return figures.lost_acked_blocks if agg == "count" else None
        if metric in ("commit_ms", "service_ms"):
            return histogram_value(c.hist, agg) if c.hist.get_total_count() else None
        if metric == "recovery_ms":
            if not recovery_ms:
                return None
            if agg.startswith("p"):
                return recovery_ms[percentile_rank(float(agg[1:]), len(recovery_ms)) - 1]
            return {"max": recovery_ms[-1], "min": recovery_ms[0], "mean": sum(recovery_ms) / len(recovery_ms),
                    "count": len(recovery_ms)}[agg]
        if metric in ("rows", "blocks") and agg == "count":
            return c.rows if metric == "rows" else c.acked
        raise NotEvaluable(f"{agg}({metric}) is not measured by a crash run")
    return source


def write_crash_result(plan: RunPlan, c, out: Outcome) -> Path:
    figures = crash_figures(plan, c)
    failures = []
    if figures.corrupt_restarts:
        failures.append(f"{figures.corrupt_restarts} restarts found rows that match no block of the model")
    if figures.unacked_blocks:
        failures.append(f"{figures.unacked_blocks} blocks present that were never sent")
    if figures.promised and figures.lost_acked_blocks:
        failures.append(f"{figures.lost_acked_blocks} acknowledged blocks lost where the settings promise "
                        f"they survive a {figures.mode.replace('_', ' ')} ({plan.durability})")
    if out.integrity.ok is False:
        failures.append("the last life's rows differ from the model at its last acknowledged block")
    figures = figures.model_copy(update={"final_ok": out.integrity.ok})
    thresholds = [parse_threshold(t) for t in plan.thresholds]
    out.thresholds = [ThresholdResult(**t) for t in evaluate(thresholds, crash_source(c, figures))]
    if failures and out.status in ("passed", "error") and not out.error:   # a corrupt restart stops the lives
        out.status, out.error = "error", "; ".join(failures)
    elif out.status == "passed" and not all(t.passed for t in out.thresholds):
        out.status = "failed"
    metrics = Metrics(service_time_ms=summary_ms(c.hist), blocks=c.acked, rows=c.rows)
    warnings = [] if plan.workload.crash.mode == "kill" else [
        "every file operation went through the power-cut layer (FUSE, in Python): commit latencies are that "
        "layer's, not the engine's, and its page cache is charged to the engine twice over"]
    warnings += [] if figures.promised else [
        f"these settings do not promise that an acknowledged block survives a {figures.mode.replace('_', ' ')} "
        f"({plan.durability}): lost blocks are counted, not failed"]
    result = make_result(plan, out, metrics, warnings).model_copy(update={"crash": figures})
    path = Path(plan.run_dir) / "result.json"
    write_json(path, result)
    return path
