"""DuckDB's aged state with its ART indexes is its aged state without them, indexed after (capabilities.
indexes_after_ageing, harness/state/derive.py): the no-index state built and aged first, and kept (the trade-off
no_indexes clones it); the indexed one derived from it, with every index, the same rows as a state aged through
its indexes, and an id of its own."""
import shutil

import duckdb
import pytest

from harness import registry
from harness.scenario.plan import resolve_plan
from harness.state import aged, store
from harness.state.build import ensure
from harness.workload.digest import digest_rows
from harness.workload.schema import tables
from tests.conftest import open_tmp_dir


def _plan(*overrides: str):
    return resolve_plan("p99_5x", "duckdb", profile="smoke", overrides=["load.aged_state=true", *overrides])


def _indexes(state_dir) -> set[str]:
    con = duckdb.connect(str(state_dir / store.DATA / "arkiv.duckdb"), read_only=True)
    try:
        return {r[0] for r in con.execute("SELECT index_name FROM duckdb_indexes()").fetchall()}
    finally:
        con.close()


def _rows(state_dir, plan) -> dict:
    engine = registry.engine_class("duckdb")()
    engine.open(plan.unsized_engine_settings(), state_dir / store.DATA)
    try:
        engine.use_schema(plan.workload.variant)
        return digest_rows({t: engine.iter_rows(t) for t in tables(plan.workload.variant)})
    finally:
        engine.close()


@pytest.mark.slow
def test_the_indexed_aged_state_is_the_unindexed_one_aged_then_indexed():
    root = open_tmp_dir("arkbench-indexed-after-")
    try:
        plan, bare = _plan(), _plan("workload.indexes=[]")
        assert aged.indexed_after(plan) and not aged.indexed_after(bare)
        d, man, built_now = ensure(plan, root)
        bare_dir, bare_man = store.find(root, aged.aged_inputs(bare, store.inputs_for(bare)))
        assert built_now and man.method == "derived" and man.derived_from == bare_man.id, man
        assert man.inputs.aged["indexed_after"] and man.inputs.indexes is None
        assert man.row_counts == bare_man.row_counts and man.model_digest == bare_man.model_digest
        every = set(registry.index_names("duckdb", plan.workload.variant))
        assert len(every) > 5 and _indexes(d) >= every and not _indexes(bare_dir) & every
        assert store.find(root, store.inputs_for(plan)) is None, "no base with the indexes was built"
        # the same rows as the state aged through its indexes (the capability off: built as before), another id
        organic_plan = plan.model_copy(update={"capabilities": plan.capabilities.model_copy(
            update={"indexes_after_ageing": False})})
        assert not aged.indexed_after(organic_plan)
        o_dir, organic, _ = ensure(organic_plan, root)
        assert organic.id != man.id and organic.method != "derived"
        assert _rows(d, plan) == _rows(o_dir, plan) == man.model_digest
    finally:
        shutil.rmtree(root, ignore_errors=True)
