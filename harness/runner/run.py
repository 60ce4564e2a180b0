"""One run: open -> load + settle -> spool -> warmup + measure -> verify -> judge -> result.json, each a
phase with its own return value. The runner is the memory-limited process for an embedded engine (a
server engine's client otherwise); blocks come from the feed, outside the limit. Whatever happens,
result.json is written (status error with the partial numbers if the run broke)."""
from __future__ import annotations

import gc
import json
import math
import os
import shutil
import subprocess
import sys
import time
import traceback
from pathlib import Path

from harness import designs
from harness.engine_api import observed_storage, server_contract
from harness.environment import capture
from harness.errors import EXIT_BAD_INPUT, EXIT_PASSED, EXIT_RUN_FAILED, EXIT_THRESHOLD_FAILED, run_failure
from harness.feed.protocol import PREFETCH_BLOCKS
from harness.platform import cgroup
from harness.reads import dc_check
from harness.reads.queries import resolve as resolve_queries
from harness.results import Spool
from harness.runner.abort import EarlyAbort, expected_measured_blocks
from harness.runner.io_watch import IoWatch, io_figures, start_page_map
from harness.runner.judge import judge, verify
from harness.runner.feed_client import BlockFeed
from harness.runner.readers import ReaderPool
from harness.runner.phases import CpuProbe
from harness.runner.outcome import FinalStorage, Outcome, write_result
from harness.runner.sampler import Sampler
from harness.trend import WINDOW_S
from harness.runner.counters import RunState
from harness.runner.writer import hold_phases, write_blocks
from harness.runner.design_figures import design_figures
from harness.scenario.plan import RunPlan
from harness.scenario.thresholds import parse_threshold
from harness.state.clone import CLONE_RECORD
from harness.state.preload import PRELOAD_FILE, preload, preload_record

LOAD_PROGRESS_EVERY_S = 5.0
# An unthrottled run spools for this multiple of the load's rate: the measured mix can run faster than
# the insert-only load.
UNTHROTTLED_SPOOL_MARGIN = 1.5
# The writer gives up the GIL inside every driver call; when another runner thread holds it then (the
# feed's receiver, the sampler, readers), CPython hands it back only after the switch interval (5 ms by
# default): a short one keeps the writer from waiting on the harness (docs/overhead.md).
TIMED_SWITCH_INTERVAL_S = 0.0001


class LimitNotEnforced(RuntimeError):
    """MEM was asked but the process holding the data does not see it: refuse rather than mislabel."""


def log(plan: RunPlan, msg: str) -> None:
    print(f"[{plan.scenario}/{plan.engine}] {msg}", file=sys.stderr, flush=True)


def spool_blocks(plan: RunPlan, load_rows_per_s: float | None) -> int:
    """Blocks to pre-generate for warmup + measure: the schedule's count, or for an unthrottled run
    what the load's rate (with a margin) would apply; any shortfall is generated live and reported."""
    span_s, w = plan.phases.warmup_s + plan.phases.measure_s, plan.workload
    if not w.writes:
        return 0
    if w.block_interval_ms:
        return math.ceil(span_s * 1000 / w.block_interval_ms) + PREFETCH_BLOCKS
    return math.ceil(UNTHROTTLED_SPOOL_MARGIN * (load_rows_per_s or 0) * span_s / w.rows_per_block) + PREFETCH_BLOCKS


def data_memory_dir(plan: RunPlan) -> Path | None:
    """The cgroup whose usage is the database's: the runner's own for an embedded engine; a server engine's
    server cgroup where the runner can see it (local runtime), else none (its container is not ours)."""
    if not plan.capabilities.server:
        return cgroup.run_memory_dir()
    path = os.environ.get(cgroup.SERVER_CGROUP_ENV)
    return Path(path) if path else None


def load_phase(engine, feed: BlockFeed, plan: RunPlan, state: RunState) -> dict:
    """The starting database (untimed): a cloned state (load.method state) or the load's blocks applied
    row by row (organic); then load.age_blocks blocks of the mix; then the engine settles."""
    t0 = time.perf_counter()
    last_print, rows, blocks = t0, 0, 0
    aged = {"blocks": 0, "rows": 0, "seconds": 0.0}
    for built in feed.load_blocks():
        t_block = time.perf_counter()
        engine.apply_block(built.prepared)
        if built.block.kind == "load":
            rows += built.block.rows_written
            blocks += 1
        else:          # ageing
            aged["blocks"] += 1
            aged["rows"] += built.block.rows_written
            aged["seconds"] += time.perf_counter() - t_block
        state.rows, state.blocks = rows + aged["rows"], blocks + aged["blocks"]   # the sampler's load-phase rows
        now = time.perf_counter()
        if now - last_print >= LOAD_PROGRESS_EVERY_S:
            last_print = now
            log(plan, f"load {built.live_entities}/{plan.load_entities} entities, {rows} rows, "
                      f"{rows / (now - t0):.0f} rows/s" if not aged["blocks"] else
                      f"ageing: {aged['blocks']}/{plan.load.age_blocks} blocks, ETA "
                      f"{aged['seconds'] / aged['blocks'] * (plan.load.age_blocks - aged['blocks']):.0f} s")
    secs = time.perf_counter() - t0 - aged["seconds"]
    after = observed_storage(engine, plan.capabilities)
    load = {"method": "state" if plan.state else "organic", "entities": plan.load_entities,
            "rows": rows, "blocks": blocks, "seconds": round(secs, 3),
            "rows_per_s": round(rows / secs, 1) if secs > 0 and rows else None,
            "age_blocks": aged["blocks"], "age_rows": aged["rows"], "age_s": round(aged["seconds"], 3),
            "age_rows_per_s": round(aged["rows"] / aged["seconds"], 1) if aged["seconds"] > 0 else None,
            **_state_record(plan),
            "db_bytes": after.db_bytes, "wal_bytes": after.wal_bytes,
            "logical_bytes": feed.after_load.logical_bytes_after,
            # sweeps check that every cell started from the same database; the counts are the model's, so
            # nothing scans the clone between its eviction and the clock
            "digest": feed.after_load.digest_after,
            "row_counts": {t: int(d.split(":")[0]) for t, d in feed.after_load.digest_after.items()}}
    t0 = time.perf_counter()
    if plan.state:
        # a state was settled when built (statistics, checkpoint): only the ageing's WAL is checkpointed,
        # with the strongest mode the engine has (listed last), so the clock starts on an empty WAL
        if plan.capabilities.checkpoint_modes:
            log(plan, "checkpointing the ageing blocks")
            engine.checkpoint(plan.capabilities.strongest_checkpoint)
    else:
        log(plan, "settling after the load")
        engine.settle()
    load["settle_s"] = round(time.perf_counter() - t0, 3)
    return load


def preload_phase(plan: RunPlan) -> dict:
    """load.preload: the clone read once inside MEM before the engine opens it (harness/state/preload.py),
    by the process that holds the data: this runner, else a process in the server's cgroup (local runtime),
    else the server's own container, which did it before it started (harness/engine_api/server_contract.py)."""
    log(plan, "preloading the database into the page cache, inside the limit")
    data_dir = Path(plan.data_dir)
    if not plan.memory.runner_is_client:
        record = preload(data_dir)
    elif server_contract.external_server():
        record = preload_record(Path(plan.run_dir))
    else:
        out = Path(plan.run_dir) / PRELOAD_FILE
        subprocess.run([sys.executable, "-m", "harness.state.preload", str(data_dir), str(out)], check=True,
                       preexec_fn=cgroup.join_server_cgroup)
        record = json.loads(out.read_text())
    log(plan, f"preloaded {record['preload_bytes'] / 2**30:.2f} GiB in {record['preload_s']:.1f} s: "
              f"{record['resident_bytes_after_preload'] / 2**30:.2f} GiB resident "
              f"(before: {record['resident_bytes_before_preload'] / 2**30:.2f} GiB)")
    return {"preload": True, **record}


def _state_record(plan: RunPlan) -> dict:
    """What the cell recorded of the cloned state (harness/cell.py: state.json): id, clone, build."""
    return json.loads((Path(plan.run_dir) / CLONE_RECORD).read_text()) if plan.state else {}


def spool_phase(feed: BlockFeed, plan: RunPlan, load_rows_per_s: float | None) -> Spool:
    want = spool_blocks(plan, load_rows_per_s)
    log(plan, f"spooling {want} blocks for warmup + measure (generated before the clock starts)")
    sp = feed.spool(want, progress=lambda s: log(plan, f"spooling: {s:.0f} s"))
    if sp.reused:
        log(plan, f"spool: {sp.blocks} blocks an earlier cell generated from the same state, copied in {sp.seconds:.1f} s")
    if sp.short_of:
        log(plan, f"spool: {sp.blocks} of {want} blocks, the rest generated live beside the engine: {sp.short_of}")
    return Spool(planned_blocks=want, blocks=sp.blocks, bytes=sp.bytes, seconds=sp.seconds, reused=sp.reused or None,
                 short_of=sp.short_of or None)


def timed_phase(engine, feed: BlockFeed, plan: RunPlan, state: RunState, readers: ReaderPool,
                abort: EarlyAbort | None):
    """Warmup + measure on one open-loop schedule, with nothing the harness allocates able to trigger a
    collection pause; returns the last block applied."""
    default_switch_s = sys.getswitchinterval()
    gc.collect()
    gc.freeze()
    gc.disable()
    sys.setswitchinterval(TIMED_SWITCH_INTERVAL_S)
    state.phase = "warmup"
    try:
        readers.start()
        if not plan.workload.writes:
            hold_phases(engine, state, warmup_s=plan.phases.warmup_s, measure_s=plan.phases.measure_s)
            return None
        return write_blocks(engine, feed, state, interval_ms=plan.workload.block_interval_ms,
                            warmup_s=plan.phases.warmup_s, measure_s=plan.phases.measure_s,
                            checkpoint_every=plan.checkpoint.every_blocks, checkpoint_mode=plan.checkpoint.mode,
                            abort=abort)
    finally:
        readers.stop()
        sys.setswitchinterval(default_switch_s)
        gc.unfreeze()
        gc.enable()
        time.sleep(plan.phases.cooldown_s)


def run(plan: RunPlan) -> int:
    run_dir, data_dir = Path(plan.run_dir), Path(plan.data_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    state = RunState()
    out = Outcome(environment=capture(data_dir, plan.runtime, plan.engine))
    (run_dir / "environment.json").write_text(json.dumps(out.environment, indent=2))
    seen = out.environment["runner_limit_bytes_seen"]
    own = plan.memory.runner_limit_bytes      # MEM for an embedded engine; a server engine's client's own
    if own and (seen is None or seen > own):
        # Never run unlimited while claiming a limit.
        log(plan, f"refusing: a {own}-byte limit was asked but this process sees {seen}")
        return EXIT_BAD_INPUT
    engine = designs.engine_for(plan)
    if plan.design:         # a block is queryable from its due time at its apply: the writer's schedule says when
        engine.due_clock = lambda: state.next_due_ns
    try:
        return _run(plan, engine, state, out)
    except LimitNotEnforced as e:
        log(plan, f"refusing: {e}")
        return EXIT_BAD_INPUT
    except BaseException as e:
        out.status, out.error = run_failure(e)
        (run_dir / "runner.log").write_text(traceback.format_exc())
        log(plan, f"run failed: {out.error}")
        write_result(plan, out, state)
        return EXIT_RUN_FAILED
    finally:
        try:
            engine.close(discard=not plan.keep_data)
        except Exception:
            pass
        if not plan.keep_data:
            shutil.rmtree(data_dir, ignore_errors=True)


def check_server_limit(plan: RunPlan, info) -> None:
    """A server engine's server must see MEM (its own cgroup or container): refuse rather than mislabel."""
    seen, limit = info.data_limit_bytes_seen, plan.memory.data_limit_bytes
    if plan.memory.runner_is_client and (seen is None or seen > limit):
        raise LimitNotEnforced(f"a {limit}-byte limit was asked for the {plan.engine} server, which sees {seen}")


def _run(plan: RunPlan, engine, state: RunState, out: Outcome) -> int:
    run_dir = Path(plan.run_dir)
    preloaded = preload_phase(plan) if plan.state and plan.load.preload else {"preload": False}
    engine.open(plan.engine_settings, Path(plan.data_dir))
    if plan.state:
        engine.use_schema(plan.workload.variant)
    else:
        engine.create_schema(plan.workload.variant, plan.workload.indexes)
    out.engine = engine.info()
    check_server_limit(plan, out.engine)
    feed = BlockFeed(run_dir, Path(plan.data_dir)).start()
    state.feed_cpu = feed.cpu_s
    state.io_watch = watch = IoWatch.for_plan(plan, data_memory_dir(plan))
    state.cpu_probe = CpuProbe(data_memory_dir(plan), plan.capabilities.server)
    sampler = Sampler(state, engine, plan.capabilities, run_dir, f"{plan.scenario}/{plan.engine}",
                      plan.phases.warmup_s + plan.phases.measure_s, mem_dir=data_memory_dir(plan))
    sampler.start()       # from the start, so a run killed during the load keeps its time series
    readers = ReaderPool(engine, plan.readers, lambda: feed.read_sample, state, plan.workload.seed, plan.engine,
                         plan.workload.variant, in_process=plan.capabilities.readers_in_process_only,
                         dc=plan.dc_dims, answers_path=run_dir / dc_check.ANSWERS)
    thresholds = [parse_threshold(t) for t in plan.thresholds]
    abort = EarlyAbort(thresholds if plan.early_abort else [],
                       expected_measured_blocks(plan.workload.block_interval_ms, plan.phases.warmup_s,
                                                plan.phases.measure_s), plan.settle_service_p50_ms,
                       plan.settle_budget_s, horizon_s=plan.phases.size_horizon(plan.scale)[0],
                       share=lambda a, b: engine.applier_busy_share(state.measure_start_ns + int(a * 1e9),
                                                                   state.measure_start_ns + int(b * 1e9))) or None
    try:
        dc = plan.workload_spec().dc
        log(plan, f"load: {plan.load_entities} entities (scale {plan.scale})" + (
            f" + the DC seed: {dc.data_centres} DCs of {dc.nodes_per_dc} nodes and {5 * dc.nodes_per_dc} workloads "
            f"(fraction {dc.fraction:g} of a DC)" if dc else ""))
        out.load = {**load_phase(engine, feed, plan, state), **preloaded}
        if plan.design:             # the load's blocks and checkpoint applied before the clock
            out.load["block_log_drain_s"] = round(engine.drain(), 3)
        out.spool = spool_phase(feed, plan, out.load["age_rows_per_s"] or out.load["rows_per_s"])
        last = timed_phase(engine, feed, plan, state, readers, abort)
        watch.take_end_residency()
    finally:
        feed.stop()
        if out.spool:     # blocks of warmup + measure generated while the engine worked
            out.spool = out.spool.model_copy(
                update={"live_blocks": max(0, feed.taken_after_load - out.spool.blocks)})
        state.phase = "verify"
        sampler.stop()
        out.sampler_error = sampler.storage_error

    return _after_clock(plan, engine, state, out, last or feed.after_load, watch, thresholds, abort)


def _after_clock(plan: RunPlan, engine, state: RunState, out: Outcome, last, watch, thresholds, abort) -> int:
    """Off the clock: a design's figures, I/O, storage, integrity, the read answers, the result; the exit code."""
    run_dir = Path(plan.run_dir)
    if plan.design:         # every acknowledged block applied, then the design's own figures
        log(plan, f"draining the {plan.design}: applying every acknowledged block")
        state.design_figures, state.design_hists = design_figures(
            engine, state.measure_start_ns, state.window_end_ns, engine.drain())
        state.design_points = engine.trend_points(state.measure_start_ns, state.window_end_ns, WINDOW_S)
    # a cell stopped once it could no longer pass has its outcome: it counts its rows (none lost or doubled) and
    # skips the every-row scan and the page map beside it, ~2.5 of the ~4.5 minutes of a stopped 1x cell here
    stopped = abort is not None and abort.reason is not None
    page_map = (lambda: None) if stopped else start_page_map(engine, plan, state, lambda msg: log(plan, msg))
    final = observed_storage(engine, plan.capabilities)
    out.final = FinalStorage(final.db_bytes, final.wal_bytes,
                             None if final.checkpoints is None else final.checkpoints + state.manual_checkpoints,
                             last.logical_bytes_after, engine.row_counts())
    method = "counts" if stopped else plan.integrity
    log(plan, f"verifying integrity ({method}: {'every row of ' if method == 'model' else 'the row counts of '}"
              f"{sum(out.final.row_counts.values())} rows{', the cell stopped early' if stopped else ''})")
    out.integrity = verify(engine, plan, last.digest_after, method).model_copy(
        update={"last_block": last.block.number if last.block else None})
    out.io = io_figures(state, watch, lambda msg: log(plan, msg), page_map())
    if plan.checked_reads:       # against the feed's log, off the clock (reads/dc_check.py)
        queries = resolve_queries(plan.readers.mix, plan.engine, plan.workload.variant, "?")
        state.answer_checks = dc_check.check_answers(run_dir, [q.check for q in queries], [q.name for q in queries])
        log(plan, "read answers checked: " + ", ".join(f"{k} {c.checked - c.wrong}/{c.checked} right"
                                                      for k, c in state.answer_checks.items()))
    with open(run_dir / "blocks.csv", "w") as f:
        state.block_log.write_csv(f, state.phase_log)
    if state.design_points:        # a design's figures over the measured phase: the report's per-minute plot
        with open(run_dir / "design.csv", "w") as f:
            f.write("metric,t_s,value\n")
            f.writelines(f"{k},{t:.3f},{v:g}\n" for k, pts in state.design_points.items() for t, v in pts)
    write_result(plan, out, state, judge(plan, state, out, thresholds, abort, lambda msg: log(plan, msg)))
    return {"passed": EXIT_PASSED, "failed": EXIT_THRESHOLD_FAILED}.get(out.status, EXIT_RUN_FAILED)
