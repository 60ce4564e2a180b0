"""`make bench-overhead`: is the harness ever the bottleneck it measures? For each engine, the harness
runs the scenario unthrottled (block_interval_ms=0), and a minimal hand-written loop (engines/<name>/
baseline.py: the raw driver, the same SQL) applies the same seeded blocks after the same load, timing
only its own apply calls. ratio = harness rows/s ÷ loop rows/s; both sides' raw figures are kept.
Each engine is measured `repeats` times, the two sides interleaved and their order alternated so that
drift on this shared machine falls on both; the verdict is on the median ratio, with its spread."""
from __future__ import annotations

import importlib
import json
import shutil
import sys
import time
from pathlib import Path

from harness.errors import ConfigError
from harness.runner.run import workload_spec
from harness.runner.result import read_json
from harness.runtime.local import run_local
from harness.scenario.plan import RunPlan, resolve_plan
from harness.stats import summarize
from harness.workload.generator import BlockGenerator

TARGET_RATIO = 0.9
LOOP_CHUNK_BLOCKS = 16


def loop_side(plan: RunPlan) -> dict:
    """The same blocks as the harness (same seed), applied by the engine's hand-written loop."""
    loop_cls = importlib.import_module(f"engines.{plan.engine}.baseline").Loop
    data_dir = Path(plan.data_dir + "-loop")
    gen = BlockGenerator(workload_spec(plan))
    loop = loop_cls(data_dir, plan.engine_settings, plan.workload.variant)
    try:
        for b in gen.load_blocks(plan.load_entities, plan.load.batch_rows, plan.load.expiry_spread_blocks):
            loop.apply(b)
        rows = blocks = 0
        apply_s = 0.0
        wall_end = time.perf_counter() + plan.phases.warmup_s + plan.phases.measure_s
        warm_end = time.perf_counter() + plan.phases.warmup_s
        while time.perf_counter() < wall_end:
            # Generation is not timed, and happens a chunk at a time: generating between single blocks
            # would hand the engine an idle gap per block (checkpointer, writeback) that the harness's
            # back-to-back writer never gets, and flatter the loop.
            chunk = [gen.next_block() for _ in range(LOOP_CHUNK_BLOCKS)]
            t = time.perf_counter()
            for b in chunk:
                loop.apply(b)
            dt = time.perf_counter() - t
            if t >= warm_end:
                apply_s, rows, blocks = apply_s + dt, rows + sum(b.rows_written for b in chunk), blocks + len(chunk)
    finally:
        loop.close()
        shutil.rmtree(data_dir, ignore_errors=True)
    return {"rows": rows, "blocks": blocks, "apply_s": round(apply_s, 3),
            "rows_per_s": round(rows / apply_s, 1) if apply_s else None}


def harness_side(plan: RunPlan) -> dict:
    run_local(plan)
    result = read_json(Path(plan.run_dir) / "result.json") or {"status": "error", "metrics": {}}
    m = result["metrics"]
    return {"status": result["status"], "rows": m.get("rows"), "rows_per_s": m.get("rows_per_s"),
            "generator_wait_s": (m.get("harness") or {}).get("generator_wait_s"),
            "result": str(Path(plan.run_dir) / "result.json")}


def bench_overhead(engines: list[str], scenario: str, profile: str, duration_s: float | None,
                   results_root: Path, repeats: int = 3) -> int:
    if repeats < 1:
        raise ConfigError(f"REPEATS: must be >= 1, got {repeats}")
    out = {"scenario": scenario, "profile": profile, "target_ratio": TARGET_RATIO, "repeats": repeats,
           "engines": {}}
    lines = []
    results_root.mkdir(parents=True, exist_ok=True)
    path = results_root / f"overhead-{time.strftime('%Y%m%d-%H%M%S')}.json"
    for engine in engines:
        tries = []
        for r in range(repeats):
            plan = resolve_plan(scenario, engine, profile=profile, duration_s=duration_s,
                                results_root=results_root, overrides=["workload.block_interval_ms=0"])
            if plan.workload.variant != "bitemporal":
                raise ConfigError("bench-overhead's control loops implement the bitemporal schema only")
            sides = {}
            for side in (("harness", "loop") if r % 2 == 0 else ("loop", "harness")):
                print(f"[bench-overhead] {engine} {r + 1}/{repeats}: {side}", file=sys.stderr, flush=True)
                sides[side] = harness_side(plan) if side == "harness" else loop_side(plan)
            h, lp = sides["harness"]["rows_per_s"], sides["loop"]["rows_per_s"]
            tries.append({**sides, "ratio": round(h / lp, 3) if h and lp else None})
        stats = summarize([t["ratio"] for t in tries])
        out["engines"][engine] = {"ratio": round(stats["median"], 3) if stats["median"] else None,
                                  "ratio_stats": stats, "repeats": tries}
        lines.append(f"{engine} ratio {stats['median']:.3f}"
                     f" (n={stats['n']}, min {stats['min']:.3f}, max {stats['max']:.3f}"
                     f"{', NOISY' if stats['noisy'] else ''})" if stats["median"] else f"{engine} ratio n/a")
        path.write_text(json.dumps(out, indent=2))       # after each engine: a later failure loses nothing
    for line in lines:
        print(line)
    print(path)
    ok = all(e["ratio"] is not None and e["ratio"] >= TARGET_RATIO for e in out["engines"].values())
    return 0 if ok else 1
