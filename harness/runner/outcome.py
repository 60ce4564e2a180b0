"""Building result.json (harness/results.py's RunResult) from what a run measured: by the runner at its
end, and by the runtime for a runner that died before writing one."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from harness.engine_api import EngineInfo
from harness.results import (EngineCounterFigures, HarnessShare, Integrity, IoFigures, LatencySummary, MemoryFigures,
                             Metrics, RunResult, Spool, ThresholdResult, read_json, write_json)
from harness.runner.metrics import percentile_bounds_ms, summary_from_hlog, summary_ms
from harness.runner.counters import RunState
from harness.runner.phases import summarise as summarise_phases
from harness.scenario.thresholds import DESIGN_FIGURES, NotEvaluable

MIN_BLOCKS_FOR_TAIL = 100        # below this a p99 is barely more than the max
GENERATOR_WAIT_WARN_SHARE = 0.01
RATE_SHORTFALL_WARN = 0.9
RUN_FILES = {"hlog": "commit.hlog", "read_hlog": "read.hlog", "timeseries": "timeseries.csv",
             "blocks": "blocks.csv", "plan": "plan.yaml", "log": "runner.log"}


@dataclass
class FinalStorage:
    db_bytes: int
    wal_bytes: int | None
    checkpoints: int | None
    logical_bytes: int
    row_counts: dict[str, int]


@dataclass
class Outcome:
    """What one run got to, phase by phase; the runner fills it in, make_result turns it into a result."""
    environment: dict
    status: str = "error"
    error: str | None = None
    engine: EngineInfo | None = None
    load: dict | None = None
    spool: Spool | None = None
    final: FinalStorage | None = None
    integrity: Integrity = field(default_factory=Integrity)
    thresholds: list[ThresholdResult] = field(default_factory=list)
    early_abort: dict | None = None
    settled: dict | None = None
    sampler_error: str | None = None
    io: IoFigures | None = None


def _feed_cpu(state: RunState, secs: float) -> dict:
    a, b = state.feed_cpu_s_at
    if a is None or b is None or not secs:
        return {}
    return {"feed_cpu_s": round(b - a, 3), "feed_cores": round((b - a) / secs, 4)}


def harness_share(plan, state: RunState, spool: Spool | None) -> HarnessShare:
    """What the harness holds inside MEM: an embedded engine's runner (its RSS includes the engine's own
    heap); nothing for a server engine, whose runner is its client, outside MEM."""
    secs = state.measured_s()
    common = {"generator_wait_s": round(state.generator_wait_s, 4),
              "generator_wait_share": round(state.generator_wait_s / secs, 5) if secs else None,
              "latency_values_clamped": state.commit.clamped + state.read.clamped, "spool": spool,
              "readers": state.readers, **_feed_cpu(state, secs)}
    if plan.memory.runner_is_client:
        return HarnessShare(inside_limit_bytes=0, inside_limit_bytes_end=0, inside_limit_bytes_max=0, **common)
    known = [v for v in (state.rss_at_measure_start, state.rss_at_measure_end, state.peak("rss_bytes"))
             if v is not None]
    heap = [c.gauges.get("engine_heap_bytes") if c else None
            for c in (state.counters_at_measure_start, state.counters_at_measure_end)]
    rss = [state.rss_at_measure_start, state.rss_at_measure_end]
    own = [r - h if r is not None and h is not None else None for r, h in zip(rss, heap)]
    return HarnessShare(inside_limit_bytes=rss[0], inside_limit_bytes_end=rss[1],
                        inside_limit_bytes_max=max(known) if known else None, engine_heap_bytes=heap[0],
                        engine_heap_bytes_end=heap[1], harness_bytes=own[0], harness_bytes_end=own[1], **common)


def build_metrics(state: RunState, plan, load: dict | None = None, final: FinalStorage | None = None,
                  spool: Spool | None = None, io: IoFigures | None = None) -> Metrics:
    secs, window_s = state.measured_s(), state.window_s()
    load = load or {}
    ck = state.gauges.get("checkpoints")
    logical = final.logical_bytes if final else 0
    m = dict(
        measured_s=round(secs, 3), window_s=round(window_s, 3),
        commit_latency_ms=summary_ms(state.commit.total), service_time_ms=summary_ms(state.service.total),
        head_lag_ms=summary_ms(state.lag.total),
        blocks=state.blocks, rows=state.rows, rows_committed_in_window=state.rows_in_window,
        # sustained: rows committed inside the measured window, over the window; offered: the rows of
        # every block due in it (an engine that falls behind commits the rest after the window)
        rows_per_s=round(state.rows_in_window / window_s, 1) if window_s else None,
        offered_rows_per_s=round(offered_rows(state, plan) / window_s, 1) if window_s else None,
        blocks_per_s=round(state.blocks / secs, 3) if secs else None,
        db_bytes_max=max(filter(None, [state.peak("db_bytes"), final and final.db_bytes]), default=None),
        wal_bytes_max=max((v for v in (state.peak("wal_bytes"), final and final.wal_bytes) if v is not None),
                          default=None),
        db_bytes_after_load=load.get("db_bytes"), db_bytes_final=final.db_bytes if final else None,
        logical_bytes_final=logical or None,
        bloat_ratio=round(final.db_bytes / logical, 3) if logical and final.db_bytes else None,
        bloat_ratio_after_load=round(load["db_bytes"] / load["logical_bytes"], 3)
        if load.get("logical_bytes") and load.get("db_bytes") else None,
        checkpoints=int(ck["last"] - ck["min"]) if ck else None,
        manual_checkpoint_ms={"count": len(state.checkpoint_ms),
                              "max": round(max(state.checkpoint_ms), 3) if state.checkpoint_ms else None},
        mem_bytes_max=state.peak("mem_bytes"), rss_bytes_max=state.peak("rss_bytes"),
        harness=harness_share(plan, state, spool), engine_counters=engine_counter_figures(state), io=io,
        block_phases=summarise_phases(state.phase_log, state.block_log.service_ms()), block_log=state.design_figures)
    if state.reads or state.read_errors or state.reads_empty or state.reads_late:
        m.update(read_latency_ms=summary_ms(state.read.total), reads=state.reads, read_errors=state.read_errors,
                 # over the window: the reads counted are those due in it (readers.ReadSink)
                 reads_per_s=round(state.reads / window_s, 1) if window_s else None, reads_empty=state.reads_empty,
                 reads_late=state.reads_late,
                 reads_by_kind={k: {**v.summary(window_s), **_checks(state.answer_checks.get(k))}
                                for k, v in sorted(state.read_kinds.items())})
    return Metrics(**m)


def _checks(c) -> dict:
    return {"checked": c.checked, "wrong": c.wrong, "unknown": c.unknown} if c is not None else {}


def engine_counter_figures(state: RunState) -> EngineCounterFigures | None:
    start, end = state.counters_at_measure_start, state.counters_at_measure_end
    if start is None or end is None:
        return None
    measured = {k: v - start.counters[k] for k, v in end.counters.items() if k in start.counters}
    hits, misses = measured.get("page_cache_hits"), measured.get("page_cache_misses")
    ratio = round(hits / (hits + misses), 5) if hits is not None and misses is not None and hits + misses else None
    return EngineCounterFigures(measured=measured, at_end=dict(end.gauges), page_cache_hit_ratio=ratio)


def warnings_for(plan, m: Metrics, status: str, state: RunState | None, sampler_error: str | None) -> list[str]:
    out = []
    n = m.commit_latency_ms.count
    if status in ("passed", "failed") and n < MIN_BLOCKS_FOR_TAIL and plan.workload.writes:
        lo, hi = m.commit_latency_ms.p99_bounds or (None, None)
        width = (f"its one-sided 95% bounds are {lo:g} to {hi:g} ms" if lo is not None and hi is not None else
                 f"{n} blocks bound it from below only, at {lo:g} ms" if lo is not None else
                 f"{n} blocks cannot bound it from either side")
        out.append(f"only {n} measured blocks: the p99 is one of the largest few ({width})")
    spool = m.harness.spool
    if spool and spool.live_blocks:
        out.append(f"{spool.live_blocks} blocks of warmup + measure ran past the {spool.blocks}-block "
                   "spool and were generated during the run, beside the engine ("
                   + (spool.short_of if spool.short_of else "an unthrottled run sizes its spool from the load's rate")
                   + (f"; the feed took {m.harness.feed_cores:.2f} of a core over the measured phase)"
                      if m.harness.feed_cores is not None else ")"))
    share = m.harness.generator_wait_share
    if share and share > GENERATOR_WAIT_WARN_SHARE:
        out.append(f"the block generator made the writer late for {share:.1%} of the measured phase: "
                   "these latencies include harness time")
    if plan.readers.threads and m.reads_per_s is not None \
            and m.reads_per_s < RATE_SHORTFALL_WARN * plan.readers.rate_per_s:
        out.append(f"readers completed {m.reads_per_s}/s of the {plan.readers.rate_per_s}/s target "
                   "(their latency from intended start shows the queueing)")
    if m.reads_empty:
        out.append(f"{m.reads_empty} reads found nothing where the data says they must (reads_by_kind.*.empty): "
                   "not timed as successes")
    if m.reads_late:
        out.append(f"{m.reads_late} reads fell due in the measured window but had not started when the readers "
                   "stopped: not in reads (nor reads_per_s); in read_latency_ms at a lower bound, the stop")
    if state is not None and state.read_errors:
        out.append(f"{state.read_errors} reads failed; first: {state.read_error}")
    if m.harness.latency_values_clamped:
        out.append("some latencies exceeded one hour and were clamped")
    if sampler_error:
        out.append(f"storage sampling failed: {sampler_error}")
    return out


def offered_rows(state: RunState, plan) -> float:
    """The rows of every block due in the measured window: on a schedule, the blocks due in it at the rows a
    measured block wrote on average (an early abort has not started them all; a reorg block writes its rows
    twice, deleted and inserted); unthrottled, the rows the writer took."""
    w = plan.workload
    if not w.block_interval_ms or state.measure_start_ns is None or not state.blocks:
        return state.rows
    due_blocks = max(state.blocks, round(state.window_s() * 1000 / w.block_interval_ms))
    return due_blocks * state.rows / state.blocks


# the thresholds' I/O figures (scenario/thresholds.py METRICS), each as the values its aggregates run over
IO_FIGURES = {
    "resident_share": lambda io: [io.residency.share_start, io.residency.share_end] if io.residency else [],
    "index_resident_share": lambda io: [r.share_end for r in (io.index_residency or {}).values()],
    "read_iops": lambda io: [io.read_iops],
    "write_amplification": lambda io: [io.write_amplification],
}


def histogram_value(h, agg: str) -> float:
    """A latency aggregate of an HdrHistogram in µs, in ms (count: a count)."""
    if agg.startswith("p"):
        return h.get_value_at_percentile(float(agg[1:])) / 1000
    return {"max": h.get_max_value() / 1000, "min": h.get_min_value() / 1000,
            "mean": h.get_mean_value() / 1000, "count": h.get_total_count()}[agg]


def _histograms(state: RunState) -> dict:
    return {"commit_ms": state.commit.total, "service_ms": state.service.total, "lag_ms": state.lag.total,
            "read_ms": state.read.total, **state.design_hists}


def bounds_source(state: RunState):
    """A whole-phase percentile's one-sided 95% bounds, from the metric's histogram (thresholds.BoundsSource)."""
    hist = _histograms(state)

    def bounds(agg: str, metric: str):
        h = hist.get(metric)
        return percentile_bounds_ms(h, float(agg[1:])) if h is not None and h.get_total_count() else None
    return bounds


def metric_source(state: RunState, metrics: Metrics | None = None):
    hist = _histograms(state)
    # rows: those committed inside the measured window, so rate(rows) is the sustained rate
    counters = {"rows": state.rows_in_window, "blocks": state.blocks, "reads": state.reads}
    if state.design_figures is not None:        # a block log's: the rows applied (rate% of the offered rows)
        counters["applied_rows"] = state.design_figures.applied_rows

    def source(agg: str, metric: str, window_s: int | None):
        if metric in hist:
            h = hist[metric]
            if not h.get_total_count():
                return None
            if window_s is not None:
                pct = 100.0 if agg == "max" else float(agg[1:])
                phase_start_s = (state.measure_start_ns - state.t0_ns) / 1e9
                worst = state.block_log.worst_window_percentile_ms(pct, window_s, metric, phase_start_s)
                if worst is None:
                    raise NotEvaluable(f"the measured phase ({state.measured_s():.1f} s) is shorter than "
                                       f"the {window_s} s window")
                return worst
            return histogram_value(h, agg)
        if metric in counters and agg == "rate%":
            rows = metrics.offered_rows_per_s * state.window_s() if metrics and metrics.offered_rows_per_s else state.rows
            offered = {"rows": rows, "applied_rows": rows, "reads": state.reads_offered_per_s * state.window_s()}[metric]
            return round(100 * counters[metric] / offered, 3) if offered else None
        if metric in counters:
            return counters[metric] / state.window_s() if agg == "rate" else counters[metric]
        if metric == "bloat_ratio":
            return metrics.bloat_ratio if metrics else None
        if metric in DESIGN_FIGURES:
            return getattr(state.design_figures, DESIGN_FIGURES[metric]) if state.design_figures is not None else None
        if metric in IO_FIGURES:
            values = [v for v in IO_FIGURES[metric](metrics.io) if v is not None] if metrics and metrics.io else []
            return {"max": max, "min": min, "mean": lambda v: sum(v) / len(v), "last": lambda v: v[-1]}[agg](values) \
                if values else None
        g = state.gauges.get(metric)
        if not g:
            return None
        return {"max": g["max"], "min": g["min"], "mean": g["sum"] / g["n"], "last": g["last"]}[agg]
    return source


def memory_figures(plan, env: dict, info: EngineInfo | None) -> MemoryFigures:
    """The plan's limits beside what the processes saw: the runner its own, a server engine's server (the
    data's) through the engine."""
    m, runner_seen = plan.memory, env.get("runner_limit_bytes_seen")
    data_seen = (info and info.data_limit_bytes_seen) if plan.capabilities.server else runner_seen
    return MemoryFigures(policy=m.policy, enforcement=env.get("memory_enforcement", "none"),
                         data_limit_bytes=m.data_limit_bytes, data_limit_bytes_seen=data_seen,
                         runner_limit_bytes=m.runner_limit_bytes, runner_limit_bytes_seen=runner_seen,
                         engine_cache_bytes=m.engine_cache_bytes, sized_settings=m.sized_settings)


def make_result(plan, out: Outcome, metrics: Metrics, warnings: list[str]) -> RunResult:
    env, run_dir, info = out.environment, Path(plan.run_dir), out.engine
    return RunResult(
        run_id=plan.run_id, engine=plan.engine, scenario=plan.scenario, profile=plan.profile, runtime=plan.runtime,
        status=out.status, error=out.error,
        memory=memory_figures(plan, env, info), image_id=env.get("image_id"),
        # a server engine in its own container (docker runtime): the limit that server saw itself
        server_environment=read_json(run_dir / "server-environment.json"),
        scale=plan.scale, engine_version=info and info.version, engine_library=info and info.library,
        engine_driver=info and info.driver, engine_related_versions=info.related if info else {},
        engine_settings=info.settings if info else plan.engine_settings,
        plan=plan.model_dump(mode="json", by_alias=True), environment=env, load=out.load, metrics=metrics,
        thresholds=out.thresholds, early_abort=out.early_abort, settled=out.settled,
        integrity=out.integrity,
        final_storage=vars(out.final) if out.final else None, warnings=warnings,
        files={k: v for k, v in RUN_FILES.items() if (run_dir / v).exists()})


def write_result(plan, out: Outcome, state: RunState, metrics: Metrics | None = None) -> Path:
    metrics = metrics or build_metrics(state, plan, out.load, out.final, out.spool)
    result = make_result(plan, out, metrics, warnings_for(plan, metrics, out.status, state, out.sampler_error))
    path = Path(plan.run_dir) / "result.json"
    write_json(path, result)
    return path


def write_failed_result(plan, status: str, error: str) -> Path:
    """A result for a runner that died before writing one: its last progress snapshot, marked partial."""
    run_dir = Path(plan.run_dir)
    progress = read_json(run_dir / "progress.json") or {}
    peaks = progress.get("peaks") or {}
    phase = progress.get("phase", "start")
    metrics = Metrics(partial=True, phase_reached=phase, measured_s=progress.get("measured_s"),
                      # warmup intervals are in the log too: the partial summary covers both phases
                      commit_latency_ms=summary_from_hlog(run_dir / "commit.hlog") or LatencySummary(),
                      blocks=progress.get("blocks"), rows=progress.get("rows"),
                      db_bytes_max=peaks.get("db_bytes"), wal_bytes_max=peaks.get("wal_bytes"),
                      mem_bytes_max=peaks.get("mem_bytes"))
    out = Outcome(environment=read_json(run_dir / "environment.json") or {"memory_enforcement": "none"},
                  status=status, error=error)
    result = make_result(plan, out, metrics, [f"partial result: the runner died in phase {phase!r}; "
                                              "timeseries.csv holds what it sampled"])
    path = run_dir / "result.json"
    write_json(path, result)
    return path
