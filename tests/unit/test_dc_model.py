"""The Data Center model (harness/workload/dc.py): deterministic ids, the reference's shares, exact counts
that a real SQLite agrees with after a DC-heavy write stream, and one model whichever way the seed is
loaded (row by row, or as a state build's sorted chunks)."""
import dataclasses
from collections import Counter

import pytest

from harness import registry
from harness.state.rows import sorted_chunks
from harness.workload import dc, dc_tables
from harness.workload.block import MAX_BLOCK
from harness.workload.digest import StateDigest, digest_rows
from harness.workload.generator import BlockGenerator, WorkloadSpec

MAX = MAX_BLOCK


def _spec(fraction=0.002, dcs=2, share=0.7, rows_per_block=600):
    return WorkloadSpec(shape="mendoza", seed=3, variant="bitemporal", rows_per_block=rows_per_block,
                        op_weights={"create": 0.4, "update": 0.3, "delete": 0.05, "extend": 0.15, "change_owner": 0.1},
                        reorg_fraction=0.0, ephemeral_btl_blocks=(5, 40),
                        dc=dc_tables.DcSpec(dcs, fraction, share, (3, 20)))


def test_ids_and_the_five_workloads_per_node_follow_the_reference():
    assert dc_tables.node_id(7, 42) == "node_07_000042" and dc_tables.workload_id(7, 123) == "wl_07_000123"
    m = dc.DcModel(dc_tables.DcSpec(2, 0.01), 3, "bitemporal", StateDigest(variant="bitemporal"))
    m.load_seed(0, 100)
    assert m.spec.nodes_per_dc == 1000 and m.workloads_in(1) == m.workloads_in(2) == 5000
    assert all(m.workloads_on(d, n) == 5 for d in (1, 2) for n in range(1, 1001))
    rows = m.seed_rows("workload", 1, 1000)["string_attributes"]
    assert ("assigned_node", "node_01_000001") in [(r[3], r[4]) for r in rows]    # (1000 % 1000) + 1


def test_the_seed_holds_the_reference_shares():
    """70% of nodes available, 25% GPU, 15% of workloads pending: the counts are exact, the shares near."""
    m = dc.DcModel(dc_tables.DcSpec(1, 0.1), 11, "bitemporal", StateDigest(variant="bitemporal"))
    m.load_seed(0, 1000)
    nodes = m.spec.nodes_per_dc
    available = sum(m.nodes_with(1, "available", v) for v in dc_tables.VM_NAMES)
    gpu = sum(m.nodes_with(1, s, "gpu") for s in dc_tables.NODE_STATUSES)
    assert sum(m.nodes_with(1, s, v) for s in dc_tables.NODE_STATUSES for v in dc_tables.VM_NAMES) == nodes == 10_000
    assert available / nodes == pytest.approx(0.70, abs=0.02) and gpu / nodes == pytest.approx(0.25, abs=0.02)
    assert m.workloads_with(1, "pending") / m.workloads_in(1) == pytest.approx(0.15, abs=0.01)
    # the match query's count is the sum of the cells at or above the request
    assert m.nodes_with(1, "available", "gpu", 16, 64) < m.nodes_with(1, "available", "gpu", 8) \
        < m.nodes_with(1, "available", "gpu")


def _sqlite(tmp_path):
    e = registry.engine_class("sqlite")()
    e.open(registry.settings_model("sqlite")().model_dump(mode="json"), tmp_path)
    e.create_schema("bitemporal")
    return e


def _count(conn, **attrs) -> int:
    """Current entities with every one of these string attributes, as SQL sees them (one index range each)."""
    part = f"SELECT entity_key FROM string_attributes WHERE key = ? AND value = ? AND to_block = {MAX}"
    sql = f"SELECT count(*) FROM ({' INTERSECT '.join([part] * len(attrs))})"
    return next(iter(conn.execute(sql, [x for kv in attrs.items() for x in kv])))[0]


def test_a_dc_heavy_stream_leaves_sqlite_with_the_models_rows_and_counts(tmp_path):
    gen = BlockGenerator(_spec())
    engine = _sqlite(tmp_path)
    try:
        for b in gen.load_blocks(0, 5000, 100):
            engine.apply_block(b)
        kinds = Counter()
        for _ in range(60):
            b = gen.next_block()
            kinds.update(k for k in b.ops if k.startswith("dc_"))
            engine.apply_block(b)
        assert {"dc_node_status", "dc_submit", "dc_assign", "dc_complete", "dc_expire"} <= set(kinds), kinds
        assert gen.model.live_ids                         # dc_heavy: 30% of each block is mendoza's
        tables = ("string_attributes", "numeric_attributes", "payloads")
        assert digest_rows({t: engine.iter_rows(t) for t in tables}) == gen.model.digest.as_dict()
        m, c = gen.dc, engine.conn
        for d in (1, 2):
            for vm in dc_tables.VM_NAMES:
                assert _count(c, type="node", dc_id=dc_tables.dc_name(d), status="available", vm_type=vm) \
                    == m.nodes_with(d, "available", vm), (d, vm)
            assert _count(c, type="workload", dc_id=dc_tables.dc_name(d), status="pending") == m.workloads_with(d, "pending")
            assert _count(c, type="node", dc_id=dc_tables.dc_name(d)) == m.nodes_in(d)
        for n in (1, 2, 77, 200):
            assert _count(c, assigned_node=dc_tables.node_id(1, n)) == m.workloads_on(1, n) >= 5
    finally:
        engine.close()


@pytest.mark.parametrize("history_versions, dc_own", [(0, None), (2, None), (0, 1)])
def test_a_state_builds_seed_is_the_organic_loads(tmp_path, history_versions, dc_own):
    """The bulk path (model seeded without rows, rows made apart in key order) and a row-by-row load give
    the same digest, and a saved model continues the stream exactly as the original; with the load's history
    passes too, each seed entity's ended versions built in bulk beside its current one; with the seed's own
    passes (workload.dc.history_versions), the seed revised and mendoza's entities not."""
    base = _spec(fraction=0.001)
    spec = dataclasses.replace(base, history_versions=history_versions,
                               dc=dataclasses.replace(base.dc, history_versions=dc_own))
    organic = BlockGenerator(spec)
    for _ in organic.load_blocks(300, 5000, 100):
        pass
    bulk = BlockGenerator(spec)
    bulk.load_model(300, 5000, 100)
    for _ in sorted_chunks(bulk.model, "mendoza", None, workers=1, dc=bulk.dc):
        pass
    assert bulk.block_number == organic.block_number
    passes = history_versions if dc_own is None else dc_own
    # the load's own: a revised node keeps the version before it; mendoza's passes are the load's alone
    assert any(bulk.dc.node_prev_from) == any(organic.dc.node_prev_from) == bool(passes)
    assert (bulk.model.history is not None and bulk.model.history.versions > 0) == bool(history_versions)
    assert bulk.model.digest.as_dict() == organic.model.digest.as_dict()
    bulk.save(tmp_path / "model.bin")
    restored = BlockGenerator(spec)
    restored.restore(tmp_path / "model.bin")
    for _ in range(30):
        a, b, c = organic.next_block(), bulk.next_block(), restored.next_block()
        assert a.inserts == b.inserts == c.inserts and a.terminate_keys == c.terminate_keys
    assert restored.model.digest.as_dict() == organic.model.digest.as_dict()
    assert restored.dc.workloads_with(2, "running") == organic.dc.workloads_with(2, "running")
    assert list(bulk.dc.node_prev_from) == list(organic.dc.node_prev_from)
    assert list(bulk.dc.node_from) == list(organic.dc.node_from)


def test_an_answer_is_checked_against_the_model_at_the_block_it_saw(tmp_path):
    """Harness logic: the feed's log replayed to each answer's block. Answers taken from the model block by
    block are all right; the same count claimed one block late is wrong where the count changed; a history
    older than the model keeps is unknown, never wrong."""
    from array import array
    from harness.reads import dc_check
    gen = BlockGenerator(_spec(fraction=0.001, share=1.0))
    gen.load_model(0, 5000, 100)
    gen.dc.start_log(tmp_path / dc_check.ANSWER_LOG, gen.block_number)
    first = gen.block_number
    recs, late, truth = array("q"), array("q"), []
    for _ in range(40):
        b = gen.next_block().number
        truth.append((b, gen.dc.workloads_with(1, "pending"), gen.dc.nodes_with(2, "available", "gpu")))
    gen.dc.close_log()
    for (b, pending, gpu), (b_next, pending_next, _) in zip(truth, truth[1:]):
        recs.extend((0, b, pending, 1, 1, 0, 4, 16, 0, 1, 1))
        recs.extend((1, b, gpu, 2, 1, 0, 4, 16, 0, 1, 1))
        late.extend((0, b, pending_next, 1, 1, 0, 4, 16, 0, 1, 1))
    recs.extend((2, first + 5, dc_check.answer_code("available"), 1, 7, 0, 4, 16, 5 + 21, 1, 1))   # before the log
    (tmp_path / dc_check.ANSWERS).write_bytes(recs.tobytes())
    checks, names = ["pending_workloads", "available_gpu_nodes", "node_status_at"], ["pending", "gpu", "history"]
    got = dc_check.check_answers(tmp_path, checks, names)
    assert (got["pending"].checked, got["pending"].wrong, got["gpu"].wrong) == (39, 0, 0)
    assert got["history"].unknown + got["history"].checked == 1 and got["history"].wrong == 0
    (tmp_path / dc_check.ANSWERS).write_bytes(late.tobytes())
    changed = sum(p != q for (_, p, _), (_, q, _) in zip(truth, truth[1:]))
    got = dc_check.check_answers(tmp_path, checks, names)
    assert 0 < changed == got["pending"].wrong and "the engine answered" in got["pending"].first_wrong


SCHEDULER = ("dc_candidates", "dc_node_workload_list", "dc_workload_state", "dc_node_state", "dc_match")


@pytest.mark.parametrize("engine_name", ["sqlite", "postgres"])
def test_the_schedulers_reads_on_a_real_engine_are_the_models_answers_block_by_block(tmp_path, engine_name):
    """Each block of a DC-heavy stream, the scheduler's reads (candidates, a node's workloads, a workload's
    state, a node's state) asked of a real engine as a reader asks them, recorded, and checked after the
    stream against the feed's log: every answer is right, none unknown; the same answers claimed one block
    later are wrong where the model moved on (100 nodes a DC: the answers change within a few blocks).
    PostgreSQL too: a scalar subquery that finds a node's events beside the node fails there (SQLite takes
    the first row)."""
    import os
    import random
    import shutil
    from array import array
    from harness.reads import dc_check
    from harness.reads.queries import resolve
    from tests.conftest import open_tmp_dir
    if engine_name == "postgres" and os.geteuid() != 0:
        pytest.skip("the server runs as its own user only when we are root")
    gen = BlockGenerator(_spec(fraction=0.001, share=1.0, rows_per_block=300))
    data = open_tmp_dir("arkbench-dc-") if engine_name == "postgres" else tmp_path / "db"
    data.mkdir(exist_ok=True)
    engine = registry.engine_class(engine_name)()
    engine.open(registry.settings_model(engine_name)().model_dump(mode="json"), data)
    engine.create_schema("bitemporal")
    try:
        for b in gen.load_blocks(0, 5000, 100):
            engine.apply_block(engine.prepare_block(b))
        gen.dc.start_log(tmp_path / dc_check.ANSWER_LOG, gen.block_number)
        reader, rng = engine.reader(), random.Random(5)
        queries = resolve({k: 1.0 for k in SCHEDULER}, engine_name, "bitemporal", reader.placeholder)
        recs, late, asked = array("q"), array("q"), []
        for _ in range(30):
            engine.apply_block(engine.prepare_block(gen.next_block()))
            for i, q in enumerate(queries):
                for _ in range(3):
                    named, ints = dc_check.draw(rng, 2, gen.dc.spec.nodes_per_dc)
                    params = tuple(named[p] for p in q.statements[0].params)
                    seen, answer = dc_check.ask(reader, q.statements[0].sql, params, q.check)
                    recs.extend((i, seen, dc_check.answer_code(answer), *ints))
                    asked.append((i, seen, dc_check.answer_code(answer), ints))
        gen.dc.close_log()
        reader.close()
    finally:
        engine.close(discard=True)
        shutil.rmtree(data, ignore_errors=True)
    names, checks = [q.name for q in queries], [q.check for q in queries]
    (tmp_path / dc_check.ANSWERS).write_bytes(recs.tobytes())
    got = dc_check.check_answers(tmp_path, checks, names)
    assert all(k.checked == 90 and k.wrong == 0 and k.unknown == 0 for k in got.values()), got
    empty = dc_check.answer_code("")
    assert len({a for i, _, a, _ in asked if i == 0 and a != empty}) > 10, "candidates: many lists, not empty"
    for i, seen, answer, ints in asked:      # one block late: the answer claimed for the block after
        late.extend((i, seen - 1, answer, *ints))
    (tmp_path / dc_check.ANSWERS).write_bytes(late.tobytes())
    got = dc_check.check_answers(tmp_path, checks, names)
    assert got["dc_candidates"].wrong + got["dc_node_state"].wrong > 0, got
