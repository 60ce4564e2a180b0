"""Every discovered engine (engines/*/engine.toml), the same seeded stream: same digest as the model,
plausible storage, a failed block rolls back completely, every setting read back. A new engine gets these
by having a folder."""
import dataclasses
import random
import re

import pytest

from harness import registry
from harness.engine_api import TABLES, engine_setting_names
from harness.reads import dc_check
from harness.reads.params import Draw, entity_params
from harness.reads.queries import kinds_for, resolve
from harness.workload.block import Block
from harness.workload.dc_tables import DcSpec
from harness.workload.digest import digest_rows
from harness.workload.generator import BlockGenerator
from tests.conftest import engine_setting_cases, mixed_spec


@pytest.fixture
def make_engine(tmp_path):
    engines = []

    def make(name: str, variant: str, overrides: dict | None = None):
        e = registry.engine_class(name)()
        e.open(registry.settings_model(name)(**(overrides or {})).model_dump(mode="json"), tmp_path / variant)
        e.create_schema(variant)
        engines.append(e)
        return e
    yield make
    for e in engines:
        e.close()


def apply(engine, block) -> None:
    engine.apply_block(engine.prepare_block(block))


def engine_digest(engine) -> dict:
    """Every table of the engine's schema (current_history's history tables too)."""
    return digest_rows({t: engine.iter_rows(t) for t in engine.row_counts()})


def _dc_answer(state, check: str, dc: int, n: int, vm: int, cpu: int, ram: int, back: int, hours: int, w: int):
    """The DC model's answer (dc_check.answer_code) to a checked kind right after the load: no DC event yet,
    so history has none."""
    if check == "node_status_at":
        return dc_check.NULL
    return dc_check.expected(state, check, state.block, dc, n, vm, cpu, ram, back, hours, w)


@pytest.mark.parametrize("name,overrides", engine_setting_cases())
@pytest.mark.parametrize("variant", ["bitemporal", "simple", "current_history"])
def test_same_stream_same_digest_as_model(make_engine, variant, name, overrides):
    engine = make_engine(name, variant, overrides)
    gen = BlockGenerator(mixed_spec(variant=variant, reorg=0.25))
    for b in gen.load_blocks(150, 2000, 15):
        apply(engine, b)
    engine.settle()                # as the runner does after the load: it must change no row
    assert engine_digest(engine) == gen.model.digest.as_dict()
    ops = set()
    for _ in range(50):
        b = gen.next_block()
        ops |= set(b.ops)
        apply(engine, b)
    assert ops >= {"create", "update", "delete", "expire", "extend", "change_owner", "reorg"}
    assert engine_digest(engine) == gen.model.digest.as_dict()
    counts = engine.row_counts()
    assert counts == {t: d.count for t, d in gen.model.digest.tables.items()}


def test_storage_grows_with_rows(make_engine, engine_name):
    engine = make_engine(engine_name, "bitemporal")
    gen = BlockGenerator(mixed_spec())
    before = engine.storage()
    for b in gen.load_blocks(400, 2000, 15):
        apply(engine, b)
    after = engine.storage()
    logical = gen.model.digest.logical_bytes
    assert after.db_bytes + after.wal_bytes > before.db_bytes + before.wal_bytes
    # the engine stores at least the logical bytes, and not absurdly more
    assert logical * 0.5 < after.db_bytes + after.wal_bytes < logical * 20
    assert engine.info().version
    if registry.capabilities(engine_name).wal:    # settle checkpoints: the load's WAL is no longer pending
        assert after.wal_bytes > 0
        engine.settle()
        assert engine.storage().wal_bytes < after.wal_bytes / 4, (after, engine.storage())


def test_failed_block_rolls_back_completely(make_engine, engine_name):
    engine = make_engine(engine_name, "bitemporal")
    gen = BlockGenerator(mixed_spec(reorg=0.0))
    for b in gen.load_blocks(50, 2000, 15):
        apply(engine, b)
    before = engine_digest(engine)
    good = gen.next_block()
    # the same good block plus a row whose primary key is already stored: the whole block must fail
    dup = next(iter(engine.iter_rows("string_attributes")))
    bad = Block(number=good.number, kind="ops", variant="bitemporal", deletes=good.deletes,
                terminate_keys=good.terminate_keys,
                inserts={**good.inserts, "string_attributes": good.inserts.get("string_attributes", []) + [dup]})
    with pytest.raises(Exception):
        apply(engine, bad)
    assert engine_digest(engine) == before, "nothing of the failed block may remain"
    apply(engine, good)            # and the engine is usable afterwards
    assert engine_digest(engine) == gen.model.digest.as_dict()


@pytest.mark.parametrize("variant", ["bitemporal", "simple", "current_history"])
def test_every_read_query_kind_finds_the_entity_it_was_drawn_from(make_engine, engine_name, variant, tmp_path):
    """Every kind of engines/queries.yaml (the engine's own dialect where it has one) that runs on the
    variant, with parameters drawn from a live entity as the readers draw them, returns rows; an entity
    fetch returns exactly the entity's rows; a checked Data Center kind answers in one row what the DC
    model says (the load wrote no DC event yet, so the block seen is NULL and history has no answer)."""
    engine = make_engine(engine_name, variant)
    dc = DcSpec(2, 0.0005)                     # 50 nodes and 250 workloads per DC beside mendoza's entities
    gen = BlockGenerator(dataclasses.replace(mixed_spec(variant=variant), dc=dc))
    for b in gen.load_blocks(300, 2000, 15):
        apply(engine, b)
    sample = [entity_params(gen.model, i) for i in gen.model.live_ids]
    gen.dc.start_log(tmp_path / dc_check.ANSWER_LOG, gen.block_number)
    gen.dc.close_log()
    state = dc_check.state_at_start(tmp_path / dc_check.ANSWER_LOG)
    reader = engine.reader()
    kinds = {k: 1.0 for k, v in kinds_for(engine_name).items() if v.runs_on(variant)}
    queries = resolve(kinds, engine_name, variant, reader.placeholder)
    assert len(queries) >= (10 if variant == "simple" else 16)
    draw = Draw(queries, (dc.data_centres, dc.nodes_per_dc))
    draw.refresh(sample)
    rng = random.Random(1)
    try:
        for i, q in enumerate(queries):
            params = draw.params(i, rng)
            assert params is not None, f"no live entity offers {sorted(q.drawn)} for {q.name}"
            if q.check:
                seen, answer = dc_check.ask(reader, q.statements[0].sql, params[0], q.check)
                want = _dc_answer(state, q.check, *draw.dc_ints)
                assert seen is None and dc_check.answer_code(answer) == want, (q.name, params, answer)
                continue
            rows = [reader.run(s.sql, p) for s, p in zip(q.statements, params)]
            assert all(rows), f"{q.name}: {rows} rows for {params}"
            if q.kind == "entity_fetch":
                assert sum(rows) == gen.shape.rows_per_entity
        reader.hold_snapshot(0.01)
    finally:
        reader.close()


def test_a_history_read_over_current_history_answers_as_the_bitemporal_schema(make_engine, engine_name):
    """The same stream into both schemas, then every kind that reads past versions (the bitemporal-only ones,
    their LIMIT dropped so whole answers are compared) at each of an entity's past blocks: current ∪ history
    returns exactly the rows the bitemporal table does."""
    engines = {v: make_engine(engine_name, v) for v in ("bitemporal", "current_history")}
    gens = {v: BlockGenerator(mixed_spec(variant=v, reorg=0.0)) for v in engines}
    for v, engine in engines.items():
        for b in [*gens[v].load_blocks(120, 2000, 15), *(gens[v].next_block() for _ in range(40))]:
            apply(engine, b)
    assert engines["current_history"].row_counts()["string_attributes_history"] > 0
    kinds = {k: 1.0 for k, v in kinds_for(engine_name).items() if "simple" not in v.variants and not v.check}
    model, compared = gens["bitemporal"].model, 0
    readers = {v: e.reader() for v, e in engines.items()}
    try:
        queries = {v: resolve(kinds, engine_name, v, readers[v].placeholder) for v in engines}
        for eid in list(model.live_ids)[:20]:
            params = entity_params(model, eid)
            for block in range(1, gens["bitemporal"].block_number + 1, 7):
                p = {**params, "block": block, "block_end": block + 7}
                for old, new in zip(queries["bitemporal"], queries["current_history"]):
                    for so, sn in zip(old.statements, new.statements):
                        if not set(so.params) <= set(p):
                            continue
                        want = readers["bitemporal"].rows(_no_limit(so.sql), tuple(p[x] for x in so.params))
                        got = readers["current_history"].rows(_no_limit(sn.sql), tuple(p[x] for x in sn.params))
                        assert sorted(map(tuple, got)) == sorted(map(tuple, want)), (old.name, block)
                        compared += bool(want)
    finally:
        for r in readers.values():
            r.close()
    assert compared > 100


def _no_limit(stmt: str) -> str:
    return re.sub(r"\s+LIMIT\s+\d+\s*$", "", stmt)


@pytest.mark.parametrize("name,overrides", engine_setting_cases())
def test_every_setting_is_read_back_from_the_engine(make_engine, name, overrides):
    """The result records what the engine runs with, not what was asked: every setting it applies, read
    back (a setting the engine answers nothing for would show as None and fail here), and its library
    and driver versions."""
    engine = make_engine(name, "bitemporal", overrides)
    info = engine.info()
    wanted = engine_setting_names(registry.settings_model(name))
    missing = [n for n in wanted if info.settings.get(n) is None]
    assert not missing, f"{name}: not read back: {missing} (got {info.settings})"
    assert info.library and info.driver and info.library not in info.driver


def test_every_engine_folder_declares_itself():
    from tests.conftest import ROOT
    folders = {p.name for p in (ROOT / "engines").iterdir() if p.is_dir() and not p.name.startswith("_")}
    assert folders == set(registry.names()), "a folder under engines/ without an engine.toml"
    for name in registry.names():
        assert registry.engine_class(name).name == name
        assert (ROOT / "engines" / name / "README.md").exists(), f"engines/{name}/README.md"



def _reads_the_wal_index(name: str) -> bool:
    from engines.sqlite.adapter import SQLiteEngine
    cls = registry.engine_class(name)
    return issubclass(cls, SQLiteEngine) and cls._wal_bytes_in_use is SQLiteEngine._wal_bytes_in_use


def _locks_held_on(path: str) -> int:
    """POSIX locks this process holds on `path` (/proc/locks: 'N: POSIX ADVISORY READ PID MAJ:MIN:INODE ...')."""
    import os
    inode, pid = os.stat(path).st_ino, str(os.getpid())
    with open("/proc/locks") as f:
        return sum(1 for line in f if line.split()[4:6] and line.split()[4] == pid
                   and line.split()[5].endswith(f":{inode}"))


@pytest.mark.parametrize("name", [n for n in registry.names() if registry.capabilities(n).wal and _reads_the_wal_index(n)])
def test_the_storage_probe_keeps_sqlites_own_locks(make_engine, name):
    """SQLite's wal-index locks are POSIX locks, which any close() of any descriptor of the -shm file in
    the same process drops. A storage probe that reopened the file every second released them; the next
    process to open the database then truncated the wal-index under the engine's mapping (a run died of
    SIGBUS while a test changed a row from another connection)."""
    eng = make_engine(name, "bitemporal")
    gen = BlockGenerator(mixed_spec())
    for b in gen.load_blocks(40, 400, 10):
        eng.apply_block(eng.prepare_block(b))
    shm = f"{eng.path}-shm"
    held = _locks_held_on(shm)
    assert held > 0, "the engine holds locks on its wal-index"
    for _ in range(3):
        eng.storage()                          # what the sampler does every second
        eng.apply_block(eng.prepare_block(gen.next_block()))
    assert _locks_held_on(shm) >= held


@pytest.mark.parametrize("name,overrides", engine_setting_cases())
@pytest.mark.parametrize("variant", ["bitemporal", "simple"])
def test_the_control_loop_writes_the_same_stream_correctly(tmp_path, variant, name, overrides):
    """bench-overhead's loop (engines/<name>/baseline.py) with the adapter's settings and statements: the
    same blocks, converted by the adapter's prepare_block, leave the model's row counts, in both schemas."""
    settings = registry.settings_model(name)(**overrides).model_dump(mode="json")
    prepare = registry.engine_class(name)().prepare_block     # as the feed converts: never opened
    loop = registry.baseline_loop(name)(tmp_path / "loop", settings, variant)
    try:
        gen = BlockGenerator(mixed_spec(variant=variant, reorg=0.25))
        for b in gen.load_blocks(100, 2000, 15):
            loop.apply(prepare(b))
        loop.settle()
        for _ in range(20):
            loop.apply(prepare(gen.next_block()))
        counts = {t: loop.c.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES}
        assert counts == {t: d.count for t, d in gen.model.digest.tables.items()}
    finally:
        loop.close()
