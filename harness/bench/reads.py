"""`make bench-reads`: are the harness's readers ever the bottleneck they measure? Per engine, the harness
runs a read-only scenario with unthrottled readers (readers.rate_per_s=0: each query as the last one ends),
and a raw loop runs the same mix's SQL on the engine's own connection (the one a reader opens), over the
same cloned starting state, its queries and parameters drawn before its clock, timing only execute + fetch.
ratio = harness QPS ÷ loop QPS, each engine `repeats` times with the sides alternated; the verdict is on the
median."""
from __future__ import annotations

import itertools
import shutil
import time
from pathlib import Path

from harness import registry
from harness.bench import (TARGET_RATIO, BenchFile, check_repeats, data_root, median_of, paired, ratio_line,
                           ratio_record, reaches_target)
from harness.bench.overhead import harness_side
from harness.errors import ConfigError
from harness.reads import params
from harness.reads.picker import Picker, reader_rng
from harness.reads.queries import resolve
from harness.scenario.plan import RunPlan, resolve_plan
from harness.state import build, store
from harness.state.clone import clone
from harness.workload.expected import LiveModel
from harness.workload.shapes import SHAPES

READS_BENCH_VERSION = 1
PREBUILT_QUERIES = 200_000       # the loop's drawn queries, cycled: drawing is off its clock


def drawn_queries(plan: RunPlan, state_dir: Path, placeholder: str, n: int) -> list[tuple]:
    """The first n queries the harness's reader 0 asks, as (statement SQL, parameters) tuples: the feed's
    sample of the state's live entities, the reader's seed and choice."""
    spec = plan.workload_spec()
    model, _ = LiveModel.restore(state_dir / store.MODEL, SHAPES[spec.shape], spec.seed, spec.variant,
                                 spec.long_lived_fraction)
    pick = Picker(resolve(plan.readers.mix, plan.engine, plan.workload.variant, placeholder))
    pick.draw.refresh(params.sample(model, params.sample_rng(spec.seed), params.READ_SAMPLE))
    rng = reader_rng(plan.workload.seed, 0)
    out = []
    while len(out) < n:
        i, p = pick.next(rng)
        if p is not None:        # the harness counts it as empty, asks nothing
            out.append(tuple((s.sql, a) for s, a in zip(pick.queries[i].statements, p)))
    return out


def loop_side(plan: RunPlan, state_dir: Path) -> dict:
    """The engine opened on a clone of the state, settled as the runner settles it; one reader's raw
    connection runs the drawn queries back to back: warmup_s untimed, then measure_s timed."""
    data_dir = Path(plan.data_dir + "-loop")
    clone(state_dir / store.DATA, data_dir)
    engine = registry.engine_class(plan.engine)()
    try:
        engine.open(plan.engine_settings, data_dir)
        engine.use_schema(plan.workload.variant)
        engine.settle()
        reader = engine.reader()
        handle = reader.handle                     # the driver's own connection (or DuckDB cursor)
        drawn = drawn_queries(plan, state_dir, reader.placeholder, PREBUILT_QUERIES)
        n = rows = 0
        busy_s = 0.0
        warm_end = time.perf_counter() + plan.phases.warmup_s
        end = warm_end + plan.phases.measure_s
        for q in itertools.cycle(drawn):
            t = time.perf_counter()
            if t >= end:
                break
            got = sum(len(handle.execute(sql, a).fetchall()) for sql, a in q)
            if t >= warm_end:
                busy_s += time.perf_counter() - t
                n, rows = n + 1, rows + got
        reader.close()
    finally:
        try:
            engine.close()
        finally:
            shutil.rmtree(data_dir, ignore_errors=True)
    return {"queries": n, "rows": rows, "busy_s": round(busy_s, 3), "qps": round(n / busy_s, 1) if busy_s else None}


def _harness(plan: RunPlan) -> dict:
    side = harness_side(plan)
    m = side["metrics"]
    return {"status": side["status"], "qps": m.reads_per_s if m else None, "reads": m.reads if m else None,
            "reader_mode": m.harness.readers.mode if m and m.harness.readers else None, "result": side["result"]}


def bench_reads(engines: list[str], scenario: str, profile: str | None, duration_s: float | None, threads: int,
                results_root: Path, repeats: int = 3, data_dir: Path | None = None) -> int:
    check_repeats(repeats)
    if threads != 1:
        raise ConfigError(f"THREADS: the raw loop is one connection; the bench compares one reader, got {threads}")
    with data_root(data_dir) as root:
        out = BenchFile("bench-reads", READS_BENCH_VERSION, results_root, scenario=scenario, profile=profile,
                        target_ratio=TARGET_RATIO, repeats=repeats, readers=threads, data_root=str(root.resolve()))
        for engine in engines:
            plans = {}

            def side(name: str, r: int) -> dict:
                if r not in plans:
                    plan = resolve_plan(scenario, engine, profile=profile, duration_s=duration_s,
                                        results_root=results_root, data_root=root,
                                        overrides=["readers.rate_per_s=0", f"readers.threads={threads}",
                                                   "load.age_blocks=0", "thresholds=[]"])
                    plans[r] = (plan, build.ensure(plan)[0])
                plan, state_dir = plans[r]
                return _harness(plan) if name == "harness" else loop_side(plan, state_dir)

            tries, stats = paired("bench-reads", engine, repeats, side, "qps")
            mode = tries[0]["harness"].get("reader_mode")
            line = ratio_line(engine, stats)
            if stats["median"]:
                line += (f"; harness {median_of(tries, 'harness', 'qps'):.0f} QPS ({mode}), "
                         f"loop {median_of(tries, 'loop', 'qps'):.0f} QPS")
            out.add(engine, ratio_record(stats, tries, reader_mode=mode), line)
    return out.finish(reaches_target)
