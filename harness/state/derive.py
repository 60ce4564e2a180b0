"""A starting state with fewer secondary indexes (workload.indexes), derived from the same state with all of
them when that one is on disk, instead of built and aged anew: copied, the other indexes dropped,
checkpointed, its row counts checked. Only where the engine's DROP INDEX leaves the files as a build without
the index would (capabilities.drop_index_frees_space: PostgreSQL deletes an index's files; SQLite would keep
its pages on the freelist). A bulk-built state is then the same: the rows, and each kept index created after
them. An aged one too, where each table keeps an index on every column the blocks update: an update then
writes to the kept indexes whatever others exist (PostgreSQL's HOT updates skip the indexes of a row whose
indexed columns did not change, so with fewer indexes the ageing would write differently). Its id is the
built state's; its manifest says method "derived" and from which state.

Likewise a bulk-built state at other layout settings (PostgreSQL's index_fillfactor), from the default's, where
the engine rebuilds an index as its build would create it (capabilities.reindex_builds_layout): copied, its
secondary indexes rebuilt, settled. Not an aged one: its ageing wrote into indexes of the other layout.

And the other way, where ageing through the indexes is the slow part of a build (capabilities.indexes_after_ageing:
DuckDB's ART indexes, 296 s of 50 blocks at 1x, 88 s without them): an aged state with every secondary index is
the aged state without them (its trade-off's, no_indexes, kept), copied, the indexes created as a bulk build
creates them after the rows, settled. The rows are the same, checked; the index pages are a bulk build's, not an
aged one's, so its id is its own (aged.indexed_after) and a state aged through its indexes is never taken for it."""
from __future__ import annotations

import re
import shutil
import time
from pathlib import Path

from harness import environment, registry
from harness.engine_api import index_name
from harness.state import aged, store
from harness.state.clone import clone

UPDATED_COLUMNS = {"bitemporal": {"to_block"}}     # what a block's UPDATE sets (a version's end), by schema


def source_inputs(plan, aged_ok: bool) -> store.StateInputs | None:
    """The state this plan's derives from (every secondary index, the default layout), or None where it cannot
    derive."""
    if aged_ok and aged.indexed_after(plan):        # its indexes created after the ageing, on the one without them
        src = aged.unindexed(plan)
        return aged.aged_inputs(src, store.inputs_for(src))
    w = plan.workload
    layout = _layout_apart(plan)
    if (w.indexes is not None and not plan.capabilities.drop_index_frees_space) or (w.indexes is None and not layout):
        return None
    src = plan.model_copy(update={"workload": w.model_copy(update={"indexes": None}),
                                  "engine_settings": {**plan.engine_settings, **layout}})
    base = store.inputs_for(src)
    if not (aged_ok and aged.wanted(plan)):
        return base
    return aged.aged_inputs(src, base) if not layout and _updates_reach_kept_indexes(plan) else None


def sources(plan) -> list[store.StateInputs]:
    """The state a plan's derivation reads: its aged state's source, else its base's (then aged from it)."""
    for aged_ok in ((True, False) if aged.wanted(plan) else (False,)):
        src = source_inputs(plan, aged_ok)
        if src is not None:
            return [src]
    return []


def _layout_apart(plan) -> dict:
    """The layout settings (engine.toml state_settings) this plan sets apart from their defaults, each at its
    default (the source's); none where the engine cannot rebuild its indexes at them."""
    if not plan.capabilities.reindex_builds_layout:
        return {}
    defaults = registry.settings_model(plan.engine)().model_dump(mode="json")
    return {k: defaults[k] for k in registry.manifest(plan.engine).state_settings
            if plan.engine_settings.get(k) != defaults[k]}


def _updates_reach_kept_indexes(plan) -> bool:
    updated = UPDATED_COLUMNS.get(plan.workload.variant)
    kept = _indexed_columns(plan.engine, plan.workload.variant, plan.workload.indexes)
    return updated is not None and all(updated <= kept.get(t, set())
                                       for t in _indexed_columns(plan.engine, plan.workload.variant, None))


def _indexed_columns(engine: str, variant: str, indexes: list[str] | None) -> dict[str, set[str]]:
    """Per table, the columns its secondary indexes (those named, or all) cover."""
    out: dict[str, set[str]] = {}
    for stmt in registry.ddl_split(engine, variant, indexes)[1].split(";"):
        m = re.search(r"\bON\s+(\w+)\s*\(([^)]*)\)", stmt, re.I)
        if m:
            out.setdefault(m.group(1), set()).update(c.split()[0] for c in m.group(2).split(","))
    return out


def from_disk(plan, inputs: store.StateInputs, root: Path) -> tuple[Path, store.StateManifest] | None:
    """The state derived now, when its source is on disk; None otherwise (it is built as usual)."""
    src = source_inputs(plan, aged_ok=inputs.aged is not None)
    found = store.find(root, src) if src is not None else None
    if found is None:
        return None
    src_dir, src_man = found
    final, partial = root / inputs.id, root / f"{inputs.id}.partial"
    store.require_free(root, src_man.data_bytes, f"deriving the state {inputs.id}")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    every = _index_names(plan)
    drop = [i for i in every if i not in (every if inputs.indexes is None else inputs.indexes)]
    add = [i for i in every if i not in src_man.inputs.indexes] if (inputs.aged or {}).get("indexed_after") else []
    layout = {k: plan.engine_settings[k] for k in _layout_apart(plan)}
    store.log(f"deriving {inputs.id} from {src_man.id}: " + "; ".join(
        ([f"{len(drop)} indexes dropped"] if drop else []) + ([f"its indexes rebuilt at {layout}"] if layout else [])
        + ([f"{len(add)} indexes created after its ageing"] if add else [])))
    t0 = time.perf_counter()
    c = clone(src_dir / store.DATA, partial / store.DATA)
    store.copy_models(src_dir, partial)
    cls = registry.engine_class(plan.engine)
    engine = cls()
    try:    # a rebuild or a creation runs as the build's index builds do, with its settings
        settings = aged.unlimited_settings(plan)
        engine.open(cls.build_settings(settings) if layout or add else settings, partial / store.DATA)
        engine.use_schema(inputs.variant)
        if drop:
            engine.drop_indexes(drop)
        if layout:
            engine.rebuild_indexes()
        if add:
            engine.create_indexes(add)
        if plan.capabilities.checkpoint_modes:
            engine.checkpoint(plan.capabilities.strongest_checkpoint)
        counts = engine.row_counts()
        if counts != src_man.row_counts:
            raise RuntimeError(f"the derived state holds {counts} rows, its source {src_man.row_counts}")
        db_bytes = engine.storage().db_bytes
    except BaseException:
        store.close_quietly(engine, discard=True)
        shutil.rmtree(partial, ignore_errors=True)
        raise
    engine.close()
    build_s = time.perf_counter() - t0
    man = src_man.model_copy(update=dict(
        id=inputs.id, inputs=inputs, method="derived", derived_from=src_man.id, db_bytes=db_bytes,
        data_bytes=store.tree_bytes(partial / store.DATA), build_s=round(build_s, 3),
        phases_s={"clone": round(c.clone_s + c.evict_s, 3),
                  "rebuild" if layout else "index" if add else "drop": round(build_s - c.clone_s - c.evict_s, 3)},
        built_utc=environment.utc_now()))
    (partial / store.MANIFEST).write_text(man.model_dump_json(indent=2))
    partial.rename(final)
    store.log(f"derived {inputs.id} in {build_s:.0f} s ({man.data_bytes / 2**30:.2f} GiB)")
    return final, man


def _index_names(plan) -> list[str]:
    stmts = registry.ddl_split(plan.engine, plan.workload.variant)[1].split(";")
    return [index_name(s.strip()) for s in stmts if s.strip()]
