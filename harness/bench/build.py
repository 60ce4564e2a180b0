"""`make bench-build`: per engine, at one scale, in one run: a state built on the bulk path (rows/s over
the whole build, indexes included) against the same load replayed row by row through the engine's
transactional path (organic, as the runs did before states), the state's cold clone, and what the row
generator alone reaches (the build must never wait on it)."""
from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

from harness import environment, registry
from harness.bench import BenchFile, log
from harness.errors import RunFailed
from harness.scenario.plan import resolve_plan
from harness.state import store
from harness.state.build import build
from harness.state.clone import clone
from harness.platform.pagecache import resident_bytes
from harness.state.rows import generator_rate
from harness.workload.generator import BlockGenerator

BENCH_BUILD_VERSION = 1
TARGET_RATIO = 10.0           # bulk ÷ organic rows/s


def organic(plan, data_dir: Path) -> dict:
    """The load's blocks through prepare_block + apply_block, as load.method organic does, then settle."""
    engine = registry.engine_class(plan.engine)()
    gen = BlockGenerator(plan.workload_spec())
    rows, t0 = 0, time.perf_counter()
    try:
        engine.open(plan.engine_settings, data_dir)
        engine.create_schema(plan.workload.variant, plan.workload.indexes)
        for b in gen.load_blocks(plan.load_entities, plan.load.batch_rows, plan.load.expiry_spread_blocks):
            engine.apply_block(engine.prepare_block(b))
            rows += b.rows_written
        engine.settle()
        secs = time.perf_counter() - t0
        counts, expected = engine.row_counts(), {t: d.count for t, d in gen.model.digest.tables.items()}
    finally:
        engine.close()
    if counts != expected:        # a rate over a load that lost rows compares nothing
        raise RunFailed(f"{plan.engine}: the row-by-row load left {counts} rows, the model {expected}")
    return {"rows": rows, "seconds": round(secs, 3), "rows_per_s": round(rows / secs, 1)}


def bulk(plan, work: Path) -> tuple[dict, str]:
    """The state built on the bulk path, then cloned cold: its part of the engine's record, and its printed line's
    middle."""
    d, man = build(plan, store.inputs_for(plan), work / "states")
    target = work / f"clone-{plan.engine}"
    c = clone(d / store.DATA, target)
    resident = resident_bytes(target)
    shutil.rmtree(target, ignore_errors=True)
    shutil.rmtree(d, ignore_errors=True)
    record = {"bulk": {"rows": man.rows, "seconds": man.build_s, "rows_per_s": man.rows_per_s,
                       "phases_s": man.phases_s, "data_bytes": man.data_bytes,
                       "build_only_settings": man.build_only_settings},
              "clone": c.as_dict(), "resident_after_evict_bytes": resident, "engine_version": man.engine_version}
    said = (f"(bulk {man.build_s:.1f} s: model {man.phases_s['model']:.1f}, rows {man.phases_s['rows']:.1f}"
            f" (inside bulk_insert {man.phases_s['insert']:.1f}), indexes+settle {man.phases_s['finish']:.1f});"
            f" clone {c.bytes / 2**20:.0f} MiB {c.method}"
            f" in {c.clone_s:.2f} s + evict {c.evict_s:.2f} s, {resident if resident is not None else '?'}"
            f" bytes resident after")
    return record, said


def bench_build(engines: list[str], scenario: str, scale: float, results_root: Path, data_root: Path) -> int:
    data_root.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="bench-build-", dir=data_root)).resolve()
    work.chmod(0o755)        # a server engine's own user builds its cluster in here
    out = BenchFile("bench-build", BENCH_BUILD_VERSION, results_root, scenario=scenario, scale=scale,
                    target_ratio=TARGET_RATIO)
    out.out["environment"]["filesystem"] = environment.filesystem(work)
    try:
        for engine in engines:
            plan = resolve_plan(scenario, engine, scale=scale, results_root=results_root, data_root=work)
            if engine == engines[0]:
                rows, secs = generator_rate(_model(plan), plan.workload.shape)
                out.out["generator_rows_per_s"] = round(rows / secs, 1)
                log("bench-build", f"the row generator alone: {rows} rows in {secs:.1f} s, {rows / secs:.0f} rows/s")
            log("bench-build", f"{engine}: bulk build of {plan.load_entities} entities")
            b, said = bulk(plan, work)
            log("bench-build", f"{engine}: organic load of the same {plan.load_entities} entities")
            org = organic(plan, work / f"organic-{engine}")
            shutil.rmtree(work / f"organic-{engine}", ignore_errors=True)
            ratio = b["bulk"]["rows_per_s"] / org["rows_per_s"]
            out.add(engine, {**b, "organic": org, "ratio": round(ratio, 2)},
                    f"{engine} bulk {b['bulk']['rows_per_s']:.0f} organic {org['rows_per_s']:.0f} ratio {ratio:.1f}x {said}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"generator alone {out.out.get('generator_rows_per_s', 0):.0f} rows/s "
          f"({len(os.sched_getaffinity(0))} processes)")
    return out.finish(lambda e: e["ratio"] >= TARGET_RATIO)


def _model(plan):
    gen = BlockGenerator(plan.workload_spec())
    gen.load_model(plan.load_entities, plan.load.batch_rows, plan.load.expiry_spread_blocks)
    return gen.model
