"""An aged starting state (load.aged_state): a state after load.age_blocks blocks of the scenario's own mix,
built once from its base state and cloned by every cell of the same layout and workload, whatever its cache,
mmap, checkpoint or synchronous settings: those change no byte of the checkpointed files, so the cells of a
matrix need not each age a clone of their own for minutes. Options that change the layout (page size,
indexes, schema) or the blocks (rows per block) have other inputs, so another aged state.

Its id hashes the base state's inputs, the block count, the workload that makes the blocks and the source of
the writer's transactional write path (which writes them, where the base's bulk path wrote the load). The writer
is the engine whose states the plan's opens (its manifest's state_of: libSQL opens SQLite's), as for the base:
one aged state serves both steps of a walk, and libSQL's step does not age a copy of its own (2.5 min at 1x)."""
from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
import time
from pathlib import Path

from harness import environment, registry
from harness.state import store
from harness.state.clone import clone, release, take
from harness.workload.generator import BlockGenerator

APPLY_METHODS = ("open", "use_schema", "prepare_block", "apply_block", "checkpoint")
PROGRESS_EVERY_S = 10.0


def wanted(plan) -> bool:
    return bool(plan.load.aged_state and plan.load.age_blocks)


def writer(plan) -> str:
    """The engine whose write path ages the plan's state: the one whose states it opens (state_of), else its own."""
    return store.owner(plan.engine)


def indexed_after(plan) -> bool:
    """The plan's aged state is its engine's aged state without secondary indexes, indexed after (capabilities.
    indexes_after_ageing): every secondary index asked, and the schema has some."""
    return (plan.capabilities.indexes_after_ageing and wanted(plan) and plan.workload.indexes is None
            and bool(registry.ddl_split(plan.engine, plan.workload.variant)[1].strip()))


def unindexed(plan):
    """The plan without secondary indexes: the layout an indexed_after state is aged at (no_indexes's)."""
    return plan.model_copy(update={"workload": plan.workload.model_copy(update={"indexes": []})})


def aged_inputs(plan, base: store.StateInputs) -> store.StateInputs:
    """base: the plan's own base state's inputs. An indexed_after state keeps them, its ageing names the base
    without indexes it was aged from, and says it was indexed after."""
    if indexed_after(plan):
        src = unindexed(plan)
        return base.model_copy(update={"aged": {**aged_inputs(src, store.inputs_for(src)).aged,
                                                "indexed_after": True}})
    spec = json.dumps(dataclasses.asdict(plan.ageing_spec()), sort_keys=True, default=str)
    return base.model_copy(update={"aged": {
        "base": base.id, "blocks": plan.load.age_blocks, "writer": writer(plan),
        "workload_sha256": hashlib.sha256(spec.encode()).hexdigest(),
        "apply_sha256": store.code_digest(writer(plan), APPLY_METHODS)}})


def unlimited_settings(plan, engine: str | None = None) -> dict:
    """The plan's settings outside MEM as `engine` (the plan's by default) takes them, with the build's cache: the
    bytes written are the same."""
    engine = engine or plan.engine
    settings = store.shared_settings(engine, plan.unsized_engine_settings())
    cache_keys = set(registry.manifest(engine).memory.sized)
    settings.update({k: v for k, v in registry.engine_class(engine).build_settings(settings).items()
                     if k in cache_keys})
    return settings


def _age(engine, gen: BlockGenerator, blocks: int) -> tuple[int, float]:
    """The blocks applied as a run's writer applies them, with progress; (rows written, seconds)."""
    rows, t0 = 0, time.perf_counter()
    last = t0
    for i in range(1, blocks + 1):
        block = gen.next_block()
        engine.apply_block(engine.prepare_block(block))
        rows += block.rows_written
        now = time.perf_counter()
        if now - last >= PROGRESS_EVERY_S:
            last = now
            store.log(f"ageing: {i}/{blocks} blocks, ETA {(now - t0) / i * (blocks - i):.0f} s")
    return rows, time.perf_counter() - t0


def build_aged(plan, inputs: store.StateInputs, root: Path, base_dir: Path,
               base: store.StateManifest) -> tuple[Path, store.StateManifest]:
    """The base state cloned into <id>.partial (moved, where plan.take_base_state: no later cell needs it), its
    model restored, the blocks applied outside MEM with the plan's settings (unsized, the build's cache),
    checkpointed with the engine's strongest mode, row counts checked. A moved base is gone whatever happens
    next: a failed ageing leaves neither state listed."""
    final, partial = root / inputs.id, root / f"{inputs.id}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    t0 = time.perf_counter()
    # a copy of the base leaves room for the aged state and for a cell's clone of it (each about the base's
    # size), else the base is moved in: 12-06, a 24 GiB base copied beside its aged state left 26 GB for a 26 GB
    # clone of it
    room = 2 * base.data_bytes + store.MARGIN_BYTES <= store.free_bytes(root)
    if plan.take_base_state or not room:
        with store.lock(root, base.id):
            base_dir, c = take(base_dir, partial / store.DATA)
        store.log(f"took the base {base.id} into {partial}: moved, not copied (" + (
            "no later cell needs it)" if plan.take_base_state else
            "no room for a copy and a cell's clone beside it; a later cell that needs the base builds it again)"))
    else:
        c = clone(base_dir / store.DATA, partial / store.DATA)
    store.copy_models(base_dir, partial)
    release(base_dir)               # a taken base's remains; a listed one stays
    gen = BlockGenerator(plan.ageing_spec())
    gen.restore(partial / store.MODEL)
    engine = registry.engine_class(inputs.aged["writer"])()
    try:
        engine.open(unlimited_settings(plan, inputs.aged["writer"]), partial / store.DATA)
        engine.use_schema(inputs.variant)
        store.log(f"ageing {base.id} by {inputs.aged['blocks']} blocks into {partial}")
        rows, age_s = _age(engine, gen, int(inputs.aged["blocks"]))
        if plan.capabilities.checkpoint_modes:
            engine.checkpoint(plan.capabilities.strongest_checkpoint)
        counts = store.checked_counts(engine, gen.model, "aged")
        version, db_bytes = engine.info().version, engine.storage().db_bytes
    except BaseException:
        store.close_quietly(engine, discard=True)
        shutil.rmtree(partial, ignore_errors=True)
        raise
    engine.close()
    gen.save(partial / store.MODEL)
    build_s = time.perf_counter() - t0
    model_bytes = store.files_bytes(partial)
    man = base.model_copy(update=dict(
        id=inputs.id, inputs=inputs, method="aged", engine_version=version,
        model_digest=gen.model.digest.as_dict(), logical_bytes=gen.model.digest.logical_bytes,
        row_counts=counts, rows=sum(counts.values()), data_bytes=store.tree_bytes(partial / store.DATA),
        db_bytes=db_bytes, model_bytes=model_bytes, build_s=round(build_s, 3),
        phases_s={"clone": round(c.clone_s + c.evict_s, 3), "age": round(age_s, 3),
                  "finish": round(build_s - c.clone_s - c.evict_s - age_s, 3)},
        rows_per_s=round(rows / age_s, 1) if age_s > 0 else 0.0, built_utc=environment.utc_now()))
    (partial / store.MANIFEST).write_text(man.model_dump_json(indent=2))
    partial.rename(final)
    store.log(f"aged {inputs.id} in {build_s:.0f} s ({inputs.aged['blocks']} blocks, {rows} rows, "
         f"{man.data_bytes / 2**30:.2f} GiB)")
    return final, man
