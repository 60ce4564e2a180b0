"""Build a starting state at the engine's bulk speed: the model as the load leaves it (generator.load_model,
the same draws as a row-by-row load), rows generated in parallel in primary-key order (rows.py), written
through the engine's bulk path (engine_api: bulk_begin / bulk_insert / bulk_finish), then checked: the
engine's row counts must be the model's."""
from __future__ import annotations

import contextlib
import shutil
import threading
import time
from pathlib import Path

from harness import environment, registry
from harness.errors import RunFailed, is_out_of_memory
from harness.state import aged, derive, sizes, store
from harness.state.rows import sorted_chunks
from harness.workload.generator import BlockGenerator

PROGRESS_EVERY_S = 10.0


class StateBuildFailed(RunFailed):
    """The build could not complete (an engine out of memory building its indexes, say): recorded in
    <id>.failed.json beside the states, never a half-state."""

    def __init__(self, message: str, oom: bool = False) -> None:
        super().__init__(message)
        self.oom = oom


def _child_ensure(plan, root: Path, aged_ok: bool):
    try:
        return ensure(plan, root, aged_ok, own_process=True)
    except StateBuildFailed as e:            # its oom flag is not an argument: carried by hand across the pickle
        return e.args[0], e.oom


def _in_own_process(plan, root: Path, aged_ok: bool):
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor
    with ProcessPoolExecutor(1, mp_context=mp.get_context("spawn")) as pool:
        out = pool.submit(_child_ensure, plan, root, aged_ok).result()
    if len(out) == 2:
        raise StateBuildFailed(out[0], oom=out[1])
    return out


def ensure(plan, root: Path | None = None, aged_ok: bool = True,
           own_process: bool = False) -> tuple[Path, store.StateManifest, bool]:
    """(the state's directory, its manifest, whether it was built now): the cached one, else built, by one
    process at a time (root: STATES, or states/); an aged one (aged.py) where the plan asks, from its base.
    A build that loads a side build of its engine's library (engine.toml's side_requirements: the verdict's newest
    SQLite) runs in a process of its own (own_process there): a driver loads one build per process, and the
    caller's may hold the default."""
    root = root or store.root_dir()
    inputs = store.inputs_for(plan)
    if aged_ok and aged.wanted(plan):
        inputs = aged.aged_inputs(plan, inputs)
    if not own_process and any(k.startswith("side:") for k in inputs.engine_build):
        found = store.find(root, inputs)
        return (*found, False) if found else _in_own_process(plan, root, aged_ok)
    with store.lock(root, inputs.id):
        found = store.find(root, inputs)
        if found:
            return (*found, False)
        if (inputs.aged or {}).get("indexed_after"):       # its source first: the aged state without the indexes
            ensure(aged.unindexed(plan), root, aged_ok=True, own_process=own_process)
        try:
            derived = derive.from_disk(plan, inputs, root)
        except Exception as e:
            raise StateBuildFailed(f"deriving {inputs.id} failed: {type(e).__name__}: {e}",
                                   oom=is_out_of_memory(e)) from e
        if derived:
            return (*derived, True)
        if inputs.aged:
            base_dir, base, _ = ensure(plan, root, aged_ok=False, own_process=own_process)
            try:
                return (*aged.build_aged(plan, inputs, root, base_dir, base), True)
            except Exception as e:
                raise StateBuildFailed(f"ageing {inputs.id} failed: {type(e).__name__}: {e}",
                                       oom=is_out_of_memory(e)) from e
        d, man = build(plan, inputs, root)
        return d, man, True


def _insert_rows(engine, gen, inputs: store.StateInputs, engine_name: str, t_start: float) -> tuple[int, float]:
    """Every row of the models, in the engine's sorted bulk chunks, with progress and an ETA; (the rows written,
    the seconds inside bulk_insert). The rest of the phase the writer waited on the generating workers."""
    rows = done = 0
    last, insert_s = t_start, 0.0
    total = inputs.entities + (gen.dc.spec.entities if gen.dc else 0)
    for chunk in sorted_chunks(gen.model, inputs.shape, engine_name, dc=gen.dc):
        t0 = time.perf_counter()
        engine.bulk_insert(chunk.prepared)
        now = time.perf_counter()
        insert_s += now - t0
        rows, done = rows + chunk.row_count, done + chunk.entities
        if now - last >= PROGRESS_EVERY_S:
            last = now
            rate = done / (now - t_start)
            store.log(f"rows: {done}/{total} entities, {rows} rows, {rows / (now - t_start):.0f} rows/s, "
                      f"ETA {(total - done) / rate:.0f} s (then the indexes)")
    return rows, insert_s


@contextlib.contextmanager
def _ticking(what: str):
    """A line every PROGRESS_EVERY_S while a step that reports nothing itself runs (an engine's index builds)."""
    done, t0 = threading.Event(), time.perf_counter()

    def tick() -> None:
        while not done.wait(PROGRESS_EVERY_S):
            store.log(f"{what}: {time.perf_counter() - t0:.0f} s so far")
    t = threading.Thread(target=tick, daemon=True, name="build-progress")
    t.start()
    try:
        yield
    finally:
        done.set()
        t.join()


def _phases_s(t0: float, t_model: float, t_insert: float, insert_s: float, t_finish: float,
              finish_steps: dict[str, float]) -> dict[str, float]:
    """model: the draws; rows: the rows phase, of which insert inside the engine's bulk_insert and
    generate_wait the writer waiting on the workers; finish: indexes and settling, and each of its steps."""
    rows_s = t_insert - t_model
    return {"model": round(t_model - t0, 3), "rows": round(rows_s, 3), "insert": round(insert_s, 3),
            "generate_wait": round(rows_s - insert_s, 3), "finish": round(t_finish - t_insert, 3),
            **{f"finish: {k}": v for k, v in finish_steps.items()}}


def _log_phases(phases: dict[str, float], rows: int) -> None:
    steps = sorted(((k, v) for k, v in phases.items() if k.startswith("finish: ")), key=lambda kv: -kv[1])
    store.log(f"phases: model {phases['model']:.0f} s; rows {phases['rows']:.0f} s "
              f"({rows / max(phases['rows'], 1e-9):.0f} rows/s: inside bulk_insert {phases['insert']:.0f} s, waiting on the generator "
              f"{phases['generate_wait']:.0f} s); finish {phases['finish']:.0f} s"
              + (f" ({', '.join(f'{k[8:]} {v:.1f} s' for k, v in steps)})" if steps else ""))


def build(plan, inputs: store.StateInputs, root: Path) -> tuple[Path, store.StateManifest]:
    root.mkdir(parents=True, exist_ok=True)
    final, partial = root / inputs.id, root / f"{inputs.id}.partial"
    need = sizes.estimate_bytes(root, inputs)
    store.require_free(root, sizes.required_bytes(root, inputs), f"building the state {inputs.id}")
    shutil.rmtree(partial, ignore_errors=True)
    (root / f"{inputs.id}.failed.json").unlink(missing_ok=True)
    data = partial / store.DATA
    engine_cls = registry.engine_class(inputs.engine)     # the plan's engine, or the one whose states it opens
    engine = engine_cls()
    settings = store.shared_settings(inputs.engine, plan.unsized_engine_settings())    # outside MEM, as it takes them
    build_settings = engine_cls.build_settings(settings)
    build_only = {k: v for k, v in build_settings.items() if settings.get(k) != v}
    store.log(f"building {inputs.id}: {inputs.entities + sizes.dc_seed_entities(inputs)} entities into {partial} "
         f"(about {need / 2**30:.1f} GiB"
         f"{', a guess that errs high: nothing near its size was built here' if sizes.is_guess(root, inputs) else ''}; "
         f"build-only settings {build_only or 'none'})")
    t0 = time.perf_counter()
    try:
        gen = BlockGenerator(plan.workload_spec())
        gen.load_model(inputs.entities, inputs.batch_rows, inputs.expiry_spread_blocks)
        t_model = time.perf_counter()
        engine.open(build_settings, data)
        engine.bulk_begin(inputs.variant, inputs.indexes)
        rows, insert_s = _insert_rows(engine, gen, inputs, inputs.engine, t_model)
        t_insert = time.perf_counter()
        store.log(f"{rows} rows in {t_insert - t_model:.0f} s; creating indexes, then settling")
        with _ticking("indexes and settle"):
            engine.bulk_finish(settings)
        t_finish = time.perf_counter()
        counts = store.checked_counts(engine, gen.model, "built")
        version = engine.info().version
        db_bytes = engine.storage().db_bytes
    except BaseException as e:
        store.close_quietly(engine)           # before its files go: a server is stopped first
        shutil.rmtree(partial, ignore_errors=True)
        if isinstance(e, KeyboardInterrupt):
            raise
        first = (str(e).strip().splitlines() or [""])[0]     # DuckDB appends paragraphs of advice
        why = f"building {inputs.id} failed: {type(e).__name__}: {first}"
        store.write_failure(root, inputs, why, oom=is_out_of_memory(e))
        raise StateBuildFailed(why, oom=is_out_of_memory(e)) from e
    store.close_quietly(engine)
    gen.save(partial / store.MODEL)
    build_s = time.perf_counter() - t0
    model_bytes = store.files_bytes(partial)
    man = store.StateManifest(
        id=inputs.id, inputs=inputs, method="bulk", engine_version=version,
        model_digest=gen.model.digest.as_dict(), logical_bytes=gen.model.digest.logical_bytes,
        row_counts=counts, rows=rows, data_bytes=store.tree_bytes(data), db_bytes=db_bytes,
        model_bytes=model_bytes,
        model_bytes_per_entity=round(model_bytes / max(1, inputs.entities + (gen.dc.spec.entities if gen.dc else 0)), 1),
        build_s=round(build_s, 3), phases_s=_phases_s(t0, t_model, t_insert, insert_s, t_finish, engine.bulk_phases_s),
        rows_per_s=round(rows / build_s, 1), build_only_settings=build_only, built_utc=environment.utc_now())
    (partial / store.MANIFEST).write_text(man.model_dump_json(indent=2))
    partial.rename(final)
    sizes.remember(root, man)
    _log_phases(man.phases_s, rows)
    store.log(f"built {inputs.id} in {build_s:.0f} s ({rows / build_s:.0f} rows/s), {man.data_bytes / 2**30:.2f} GiB")
    return final, man
