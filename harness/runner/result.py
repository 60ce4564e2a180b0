"""result.json, version 1: the contract that reports, sweeps and tests read (docs/design.md)."""
from __future__ import annotations

import json
import os
from dataclasses import asdict
from pathlib import Path

from harness.runner.metrics import summary_from_hlog, summary_ms
from harness.runner.state import RunState
from harness.scenario.thresholds import NotEvaluable

RESULT_VERSION = 1
MIN_BLOCKS_FOR_TAIL = 100        # below this a p99 is barely more than the max
GENERATOR_WAIT_WARN_SHARE = 0.01
RATE_SHORTFALL_WARN = 0.9


def build_metrics(state: RunState, ctx: dict) -> dict:
    secs, window_s = state.measured_s(), state.window_s()
    final, load = ctx.get("final_storage", {}), ctx.get("load", {})
    ck = state.gauges.get("checkpoints")
    logical = final.get("logical_bytes") or 0
    m = {
        "measured_s": round(secs, 3),
        "commit_latency_ms": summary_ms(state.commit.total),
        "service_time_ms": summary_ms(state.service.total),
        "head_lag_ms": summary_ms(state.lag.total),
        "window_s": round(window_s, 3),
        "blocks": state.blocks,
        "rows": state.rows,
        "rows_committed_in_window": state.rows_in_window,
        # sustained: rows committed inside the measured window, over the window; offered: the rows of
        # every block due in it (an engine that falls behind commits the rest after the window)
        "rows_per_s": round(state.rows_in_window / window_s, 1) if window_s else None,
        "offered_rows_per_s": round(state.rows / window_s, 1) if window_s else None,
        "blocks_per_s": round(state.blocks / secs, 3) if secs else None,
        "db_bytes_max": max(filter(None, [state.peak("db_bytes"), final.get("db_bytes")]), default=None),
        "wal_bytes_max": max(filter(lambda v: v is not None, [state.peak("wal_bytes"), final.get("wal_bytes")]),
                             default=None),
        "db_bytes_after_load": load.get("db_bytes"),
        "db_bytes_final": final.get("db_bytes"),
        "logical_bytes_final": logical or None,
        "bloat_ratio": round(final["db_bytes"] / logical, 3) if logical and final.get("db_bytes") else None,
        "bloat_ratio_after_load": round(load["db_bytes"] / load["logical_bytes"], 3)
        if load.get("logical_bytes") and load.get("db_bytes") else None,
        "checkpoints": int(ck["last"] - ck["min"]) if ck else None,
        "manual_checkpoint_ms": {"count": len(state.checkpoint_ms),
                                 "max": round(max(state.checkpoint_ms), 3) if state.checkpoint_ms else None},
        "mem_bytes_max": state.peak("mem_bytes"),
        "rss_bytes_max": state.peak("rss_bytes"),
        "harness": {**harness_share(ctx["plan"], state),
                    "generator_wait_s": round(state.generator_wait_s, 4),
                    "generator_wait_share": round(state.generator_wait_s / secs, 5) if secs else None,
                    "latency_values_clamped": state.commit.clamped + state.read.clamped,
                    "spool": ctx.get("spool")},
    }
    if state.reads or state.read_errors:
        m["read_latency_ms"] = summary_ms(state.read.total)
        m["reads"], m["read_errors"] = state.reads, state.read_errors
        m["reads_per_s"] = round(state.reads / secs, 1) if secs else None
    return m


def harness_share(plan, state: RunState) -> dict:
    """What the harness holds inside MEM: an embedded engine's runner (its RSS includes the engine's own
    heap); nothing for a server engine, whose runner is its client, outside MEM."""
    if plan.client_mem_limit_bytes:
        return {"inside_limit_bytes": 0, "inside_limit_bytes_max": 0, "inside_limit_bytes_end": 0}
    peak = state.peak("rss_bytes")
    known = [v for v in (state.rss_at_measure_start, state.rss_at_measure_end, peak) if v is not None]
    return {"inside_limit_bytes": state.rss_at_measure_start, "inside_limit_bytes_end": state.rss_at_measure_end,
            "inside_limit_bytes_max": max(known) if known else None}


def warnings_for(ctx: dict) -> list[str]:
    plan, m, out = ctx["plan"], ctx.get("metrics") or {}, []
    n = (m.get("commit_latency_ms") or {}).get("count") or 0
    if ctx.get("status") in ("passed", "failed") and n < MIN_BLOCKS_FOR_TAIL:
        out.append(f"only {n} measured blocks: p99 is close to the max; run longer for a stable tail")
    spool = (m.get("harness") or {}).get("spool") or {}
    if spool.get("live_blocks"):
        out.append(f"{spool['live_blocks']} blocks of warmup + measure ran past the {spool['blocks']}-block "
                   "spool and were generated during the run, taking CPU from the engine (the spool is capped "
                   "in bytes; an unthrottled run sizes it from the load's rate)")
    share = (m.get("harness") or {}).get("generator_wait_share")
    if share and share > GENERATOR_WAIT_WARN_SHARE:
        out.append(f"the block generator made the writer late for {share:.1%} of the measured phase: "
                   "these latencies include harness time")
    if plan.readers.threads and m.get("reads_per_s") is not None \
            and m["reads_per_s"] < RATE_SHORTFALL_WARN * plan.readers.rate_per_s:
        out.append(f"readers completed {m['reads_per_s']}/s of the {plan.readers.rate_per_s}/s target "
                   "(their latency from intended start shows the queueing)")
    st: RunState = ctx["state"]
    if st is not None and st.read_errors:
        out.append(f"{st.read_errors} reads failed; first: {st.read_error}")
    if (m.get("harness") or {}).get("latency_values_clamped"):
        out.append("some latencies exceeded one hour and were clamped")
    if ctx.get("sampler_error"):
        out.append(f"storage sampling failed: {ctx['sampler_error']}")
    return out


def metric_source(state: RunState, ctx: dict):
    hist = {"commit_ms": state.commit.total, "service_ms": state.service.total, "lag_ms": state.lag.total,
            "read_ms": state.read.total}
    # rows: those committed inside the measured window, so rate(rows) is the sustained rate
    counters = {"rows": state.rows_in_window, "blocks": state.blocks, "reads": state.reads}
    m = ctx.get("metrics", {})

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
            if agg.startswith("p"):
                return h.get_value_at_percentile(float(agg[1:])) / 1000
            return {"max": h.get_max_value() / 1000, "min": h.get_min_value() / 1000,
                    "mean": h.get_mean_value() / 1000, "count": h.get_total_count()}[agg]
        if metric in counters:
            return counters[metric] / state.window_s() if agg == "rate" else counters[metric]
        if metric == "bloat_ratio":
            return m.get("bloat_ratio")
        g = state.gauges.get(metric)
        if not g:
            return None
        return {"max": g["max"], "min": g["min"], "mean": g["sum"] / g["n"], "last": g["last"]}[agg]
    return source


def write_result(run_dir: Path, ctx: dict) -> Path:
    """ctx: plan, environment, status and what the run got to (metrics, load, thresholds, integrity...).
    Used by the runner, and by the parent process when the runner was killed (OOM) before writing."""
    plan, env = ctx["plan"], ctx["environment"]
    if "metrics" not in ctx:
        ctx["metrics"] = build_metrics(ctx["state"], ctx)
    if "warnings" not in ctx:
        ctx["warnings"] = warnings_for(ctx)
    info = ctx.get("engine_info")
    files = {k: v for k, v in {"hlog": "commit.hlog", "read_hlog": "read.hlog", "timeseries": "timeseries.csv",
                               "blocks": "blocks.csv", "plan": "plan.yaml", "log": "runner.log"}.items()
             if (run_dir / v).exists()}
    result = {
        "version": RESULT_VERSION,
        "run_id": plan.run_id,
        "engine": plan.engine,
        "scenario": plan.scenario,
        "profile": plan.profile,
        "runtime": plan.runtime,
        "status": ctx.get("status", "error"),
        "error": ctx.get("error"),
        # MEM as the process holding the data sees it: the runner, or a server engine's server
        "memory_limit_bytes": (info.server_memory_limit_bytes if info else None) if plan.client_mem_limit_bytes
        else env.get("memory_limit_bytes_seen"),
        "memory_limit_requested_bytes": plan.mem_limit_bytes,
        "client_memory_limit_bytes": env.get("memory_limit_bytes_seen") if plan.client_mem_limit_bytes else None,
        "memory_enforcement": env.get("memory_enforcement", "none"),
        "image_id": env.get("image_id"),
        # a server engine in its own container (docker runtime): the limit that server saw itself
        "server_environment": read_json(run_dir / "server-environment.json"),
        "scale": plan.scale,
        "engine_version": info.version if info else None,
        "engine_settings": info.settings if info else plan.engine_settings,
        "plan": plan.model_dump(mode="json", by_alias=True),
        "environment": env,
        "load": ctx.get("load"),
        "metrics": ctx["metrics"],
        "thresholds": ctx.get("thresholds", []),
        "early_abort": ctx.get("early_abort"),      # {threshold, measured_s, block} when a cell stopped early
        "integrity": ctx.get("integrity", {"ok": None, "expected": None, "actual": None}),
        "final_storage": ctx.get("final_storage"),
        "warnings": ctx["warnings"],
        "files": files,
    }
    path = run_dir / "result.json"
    write_json(path, result, default=_json_default)
    return path


def write_failed_result(plan, status: str, error: str) -> Path:
    """A result for a runner that died before writing one: its last progress snapshot, marked partial."""
    run_dir = Path(plan.run_dir)
    progress = read_json(run_dir / "progress.json") or {}
    env = read_json(run_dir / "environment.json") or {"memory_enforcement": "none"}
    peaks = progress.get("peaks") or {}
    metrics = {"partial": True, "measured_s": progress.get("measured_s"),
               # warmup intervals are in the log too: the partial summary covers both phases
               "commit_latency_ms": summary_from_hlog(run_dir / "commit.hlog"), "blocks": progress.get("blocks"),
               "rows": progress.get("rows"), "phase_reached": progress.get("phase", "start"),
               "db_bytes_max": peaks.get("db_bytes"), "wal_bytes_max": peaks.get("wal_bytes"),
               "mem_bytes_max": peaks.get("mem_bytes")}
    ctx = {"plan": plan, "environment": env, "state": None, "status": status, "error": error,
           "metrics": metrics, "warnings": [f"partial result: the runner died in phase "
                                            f"{metrics['phase_reached']!r}; timeseries.csv holds what it sampled"]}
    return write_result(run_dir, ctx)


def mark_oom(run_dir: Path, why: str) -> None:
    """A server engine's server was OOM-killed and its runner wrote a result: that result, as an oom."""
    path = run_dir / "result.json"
    r = read_json(path)
    r["status"], r["error"] = "oom", f"{why} (the runner saw: {r.get('error')})"
    write_json(path, r)


def write_json(path: Path, obj: dict, indent: int | None = 2, default=None) -> None:
    """Atomically: a reader (a resumed sweep, a report, the parent of a killed runner) sees the old file
    or the new one, never half of one."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(obj, indent=indent, default=default))
    os.replace(tmp, path)


def read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _json_default(o):
    if hasattr(o, "__dataclass_fields__"):
        return asdict(o)
    raise TypeError(f"not JSON serializable: {type(o).__name__}")
