"""`make bench-reads`: are the harness's readers ever the bottleneck they measure? Per engine, the harness
runs a read-only scenario with unthrottled readers (readers.rate_per_s=0: each query as the last one ends),
and a raw loop runs the same mix's SQL on the engine's own connection (the one a reader opens), over the
same cloned starting state, its queries and parameters drawn before its clock, timing only execute + fetch.
ratio = harness QPS ÷ loop QPS, each engine `repeats` times with the sides alternated (as bench-overhead);
the verdict is on the median."""
from __future__ import annotations

import itertools
import json
import shutil
import sys
import time
from pathlib import Path

from harness import environment, registry
from harness.errors import ConfigError
from harness.feed.server import READ_SAMPLE
from harness.overhead import TARGET_RATIO, default_data_root, harness_side, print_bench
from harness.reads import params
from harness.reads.queries import resolve
from harness.scenario.plan import RunPlan, resolve_plan
from harness.state import build, store
from harness.state.clone import clone
from harness.stats import summarize
from harness.runner.readers import Picker, reader_rng
from harness.workload.model import LiveModel
from harness.workload.shapes import SHAPES

READS_BENCH_VERSION = 1
PREBUILT_QUERIES = 200_000       # the loop's drawn queries, cycled: drawing is off its clock


def _log(msg: str) -> None:
    print(f"[bench-reads] {msg}", file=sys.stderr, flush=True)


def drawn_queries(plan: RunPlan, state_dir: Path, placeholder: str, n: int) -> list[tuple]:
    """The first n queries the harness's reader 0 asks, as (statement SQL, parameters) tuples: the feed's
    sample of the state's live entities, the reader's seed and choice."""
    spec = plan.workload_spec()
    model, _ = LiveModel.restore(state_dir / store.MODEL, SHAPES[spec.shape], spec.seed, spec.variant,
                                 spec.long_lived_fraction)
    pick = Picker(resolve(plan.readers.mix, plan.engine, plan.workload.variant, placeholder))
    pick.draw.refresh(params.sample(model, params.sample_rng(spec.seed), READ_SAMPLE))
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


def bench_reads(engines: list[str], scenario: str, profile: str | None, duration_s: float | None, threads: int,
                results_root: Path, repeats: int = 3, data_root: Path | None = None) -> int:
    if repeats < 1:
        raise ConfigError(f"REPEATS: must be >= 1, got {repeats}")
    if threads != 1:
        raise ConfigError(f"THREADS: the raw loop is one connection; the bench compares one reader, got {threads}")
    chosen = data_root is None
    data_root = default_data_root() if chosen else data_root
    env = environment.bench_environment()
    out = {"version": READS_BENCH_VERSION, "scenario": scenario, "profile": profile, "target_ratio": TARGET_RATIO,
           "repeats": repeats, "readers": threads, "data_root": str(data_root.resolve()), "environment": env,
           "engines": {}}
    results_root.mkdir(parents=True, exist_ok=True)
    path = results_root / f"bench-reads-{time.strftime('%Y%m%d-%H%M%S')}.json"
    lines = []
    try:
        for engine in engines:
            tries = []
            for r in range(repeats):
                plan = resolve_plan(scenario, engine, profile=profile, duration_s=duration_s,
                                    results_root=results_root, data_root=data_root,
                                    overrides=["readers.rate_per_s=0", f"readers.threads={threads}",
                                               "load.age_blocks=0", "thresholds=[]"])
                state_dir, _, _ = build.ensure(plan)
                sides = {}
                for side in (("harness", "loop") if r % 2 == 0 else ("loop", "harness")):
                    _log(f"{engine} {r + 1}/{repeats}: {side}")
                    sides[side] = _harness(plan) if side == "harness" else loop_side(plan, state_dir)
                h, lp = sides["harness"]["qps"], sides["loop"]["qps"]
                tries.append({**sides, "ratio": round(h / lp, 3) if h and lp else None})
            stats = summarize([t["ratio"] for t in tries])
            out["engines"][engine] = {"ratio": round(stats["median"], 3) if stats["median"] else None,
                                      "ratio_stats": stats, "reader_mode": tries[0]["harness"].get("reader_mode"),
                                      "repeats": tries}
            lines.append(f"{engine} ratio {stats['median']:.3f} (n={stats['n']}, min {stats['min']:.3f}, "
                         f"max {stats['max']:.3f}{', NOISY' if stats['noisy'] else ''}); harness "
                         f"{summarize([t['harness']['qps'] for t in tries])['median']:.0f} QPS "
                         f"({tries[0]['harness'].get('reader_mode')}), loop "
                         f"{summarize([t['loop']['qps'] for t in tries])['median']:.0f} QPS"
                         if stats["median"] else f"{engine} ratio n/a")
            path.write_text(json.dumps(out, indent=2))     # after each engine: a later failure loses nothing
    finally:
        if chosen:
            shutil.rmtree(data_root, ignore_errors=True)
    return print_bench(lines, path, out["engines"])


def _harness(plan: RunPlan) -> dict:
    side = harness_side(plan)
    from harness.results import load_result
    r = load_result(Path(side["result"]))
    m = r.metrics if r else None
    return {"status": side["status"], "qps": m.reads_per_s if m else None, "reads": m.reads if m else None,
            "reader_mode": m.harness.readers.mode if m and m.harness.readers else None, "result": side["result"]}
