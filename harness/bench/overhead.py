"""`make bench-overhead`: is the harness ever the bottleneck it measures? For each engine, the harness
runs the scenario unthrottled (block_interval_ms=0), and a minimal hand-written loop (engines/<name>/
baseline.py: the raw driver, the same SQL) applies the same seeded blocks after the same load, timing
only its own apply calls. ratio = harness rows/s ÷ loop rows/s; both sides' raw figures are kept; the
verdict is on the median ratio of the repeats, with its spread. Method and findings: docs/overhead.md."""
from __future__ import annotations

import collections
import gc
import math
import shutil
import time
from pathlib import Path

from harness import environment, registry
from harness.bench import BenchFile, check_repeats, data_root, log, paired, ratio_line, ratio_record, reaches_target
from harness.bench import TARGET_RATIO
from harness.cell import execute
from harness.results import load_result
from harness.scenario.plan import RunPlan, resolve_plan
from harness.stats import summarize
from harness.workload.generator import BlockGenerator

OVERHEAD_VERSION = 2
# Blocks the loop builds before it starts (p99_5x quick: ~0.75 MB each as Python objects).
PREBUILT_MARGIN = 1.5
PREBUILT_MIN_BLOCKS = 16
PREBUILT_DEFAULT_BLOCKS = 1000
PREBUILT_MAX_BLOCKS = 4000
PREPARE_SAMPLE_BLOCKS = 200     # blocks the adapter's prepare_block is timed on


def prebuilt_count(expected_rows_per_s: float | None, phase_s: float, rows_per_block: int) -> int:
    """How many blocks the loop builds before it starts: the expected rate on this engine, with a
    margin, over the timed phase (an underestimate only costs a counted refill)."""
    if not expected_rows_per_s:
        return PREBUILT_DEFAULT_BLOCKS
    want = math.ceil(PREBUILT_MARGIN * expected_rows_per_s * phase_s / max(1, rows_per_block))
    return min(PREBUILT_MAX_BLOCKS, max(PREBUILT_MIN_BLOCKS, want))


def _load_blocks(gen: BlockGenerator, plan: RunPlan):
    return gen.load_blocks(plan.load_entities, plan.load.batch_rows, plan.load.expiry_spread_blocks)


def timed_blocks(plan: RunPlan, n: int, prepare, adapter_prepare) -> tuple[collections.deque, BlockGenerator, float]:
    """The first n blocks after the load as (rows, prepare(block)), from a generator with the same seed
    that replays the load (generation only) to reach the same model state; it is returned to build any
    refill. Also adapter_prepare's milliseconds per block, timed on up to PREPARE_SAMPLE_BLOCKS of them."""
    gen = BlockGenerator(plan.workload_spec())
    for _ in _load_blocks(gen, plan):
        pass
    raw = [gen.next_block() for _ in range(n)]
    sample = raw[:PREPARE_SAMPLE_BLOCKS]
    t0 = time.perf_counter()
    for b in sample:
        adapter_prepare(b)
    prepare_ms = 1000 * (time.perf_counter() - t0) / max(1, len(sample))
    return collections.deque(_prepared(b, prepare) for b in raw), gen, prepare_ms


def _prepared(b, prepare) -> tuple[int, object]:
    return b.rows_written, prepare(b)


def loop_side(plan: RunPlan, expected_rows_per_s: float | None = None) -> dict:
    """The same blocks as the harness (same seed), applied back to back by the engine's hand-written
    loop after the same load and settle. Every block of the timed phase is built and converted for the
    driver (the adapter's prepare_block, as in the feed) between the settle and the clock, as the runner
    spools them: blocks built on the clock would hand the engine idle time (docs/overhead.md)."""
    loop_cls = registry.baseline_loop(plan.engine)
    adapter_prepare = registry.engine_class(plan.engine)().prepare_block    # as the feed converts: never opened
    # A loop that binds the generator's values as they are (libsql's raw binding) measures the adapter's
    # conversion too: the harness's ratio then includes what binding exactly costs the engine.
    prepare = adapter_prepare if loop_cls.adapter_prepare else (lambda b: b)
    data_dir = Path(plan.data_dir + "-loop")
    loop = loop_cls(data_dir, plan.engine_settings, plan.workload.variant)
    try:
        load_rows, load_s = 0, 0.0
        for b in _load_blocks(BlockGenerator(plan.workload_spec()), plan):   # its model is freed after
            p = prepare(b)
            t = time.perf_counter()
            loop.apply(p)
            load_s, load_rows = load_s + time.perf_counter() - t, load_rows + b.rows_written
        loop.settle()       # as the runner's engine.settle(): the same SQL
        # sized by the higher of the harness's rate and the loop's own load rate: either alone can fall short
        rates = [r for r in (expected_rows_per_s, load_rows / load_s if load_s else None) if r]
        n = prebuilt_count(max(rates, default=None), plan.phases.warmup_s + plan.phases.measure_s,
                           plan.workload.rows_per_block)
        blocks, gen_after, prepare_ms = timed_blocks(plan, n, prepare, adapter_prepare)
        timed = _apply_timed(loop, blocks, gen_after, prepare, n, plan.phases.warmup_s, plan.phases.measure_s)
    finally:
        loop.close()
        shutil.rmtree(data_dir, ignore_errors=True)
    rows, apply_s = timed["rows"], timed["apply_s"]
    return {**timed, "rows_per_s": round(rows / apply_s, 1) if apply_s else None,
            "prebuilt_blocks": n, "adapter_prepare": loop_cls.adapter_prepare,
            # the adapter's prepare_block per block: feed CPU, outside MEM and off the clock in the harness
            "prepare_ms_per_block": round(prepare_ms, 3)}


def _apply_timed(loop, blocks: collections.deque, gen_after: BlockGenerator, prepare, n: int,
                 warmup_s: float, measure_s: float) -> dict:
    """The pre-built blocks back to back, warmup_s untimed then measure_s timed, with the collector frozen
    as in the runner; a shortfall is refilled off the clock and counted."""
    rows = applied = refills = 0
    apply_s = 0.0
    gc.collect()
    gc.freeze()
    gc.disable()
    try:
        warm_end = time.perf_counter() + warmup_s
        wall_end = warm_end + measure_s
        while time.perf_counter() < wall_end:
            if not blocks:
                r0 = time.perf_counter()
                blocks.extend(_prepared(gen_after.next_block(), prepare) for _ in range(max(1, n // 4)))
                gap = time.perf_counter() - r0
                warm_end, wall_end, refills = warm_end + gap, wall_end + gap, refills + 1
            block_rows, p = blocks.popleft()
            t = time.perf_counter()
            loop.apply(p)
            dt = time.perf_counter() - t
            if t >= warm_end:
                apply_s, rows, applied = apply_s + dt, rows + block_rows, applied + 1
    finally:
        gc.unfreeze()
        gc.enable()
    return {"rows": rows, "blocks": applied, "apply_s": round(apply_s, 3), "refills": refills}


def harness_side(plan: RunPlan) -> dict:
    """One run as `make run` makes it; its result.json's figures (status error when it wrote none)."""
    execute(plan)
    path = Path(plan.run_dir) / "result.json"
    r = load_result(path)
    if r is None:
        return {"status": "error", "rows": None, "rows_per_s": None, "generator_wait_s": None, "result": str(path),
                "metrics": None}
    return {"status": r.status, "rows": r.metrics.rows, "rows_per_s": r.metrics.rows_per_s,
            "generator_wait_s": r.metrics.harness.generator_wait_s, "result": str(path), "metrics": r.metrics}


def bench_overhead(engines: list[str], scenario: str, profile: str, duration_s: float | None,
                   results_root: Path, repeats: int = 3, data_dir: Path | None = None) -> int:
    check_repeats(repeats)
    with data_root(data_dir) as root:
        fstype = environment.filesystem(root)["fstype"]
        log("bench-overhead", f"databases in {root} ({fstype}{'; DATA=dir to choose' if data_dir is None else ''})")
        out = BenchFile("overhead", OVERHEAD_VERSION, results_root, scenario=scenario, profile=profile,
                        target_ratio=TARGET_RATIO, repeats=repeats, data_root=str(root.resolve()), data_fstype=fstype)
        for engine in engines:
            harness_rate, plans = None, {}

            def side(name: str, r: int) -> dict:
                nonlocal harness_rate
                if r not in plans:          # both sides of a try start from the same row-by-row load
                    plans[r] = resolve_plan(scenario, engine, profile=profile, duration_s=duration_s,
                                            results_root=results_root, data_root=root,
                                            overrides=["workload.block_interval_ms=0", "load.method=organic",
                                                       "load.age_blocks=0"])
                if name == "loop":          # it sizes its pre-built blocks by the harness's latest rate
                    return loop_side(plans[r], harness_rate)
                got = harness_side(plans[r])
                del got["metrics"]
                harness_rate = got["rows_per_s"] or harness_rate
                return got

            tries, stats = paired("bench-overhead", engine, repeats, side, "rows_per_s")
            prep = summarize([t["loop"]["prepare_ms_per_block"] for t in tries])["median"]
            raw = not tries[0]["loop"]["adapter_prepare"]
            line = ratio_line(engine, stats)
            if stats["median"]:
                line += (f"; prepare_block {prep:.3f} ms/block in the feed"
                         + ("; loop binds raw values: the ratio includes the adapter's conversion" if raw else ""))
            out.add(engine, ratio_record(stats, tries, loop_without_adapter_conversion=raw,
                                         prepare_ms_per_block=prep), line)
    return out.finish(reaches_target)
