"""A state with fewer secondary indexes is derived from the state with all of them, aged or not, when that one
is on disk (harness/state/derive.py): the same id and rows, only the kept indexes left, the manifest saying
whence. Not where an update would skip the kept indexes (HOT), and not on an engine whose DROP INDEX leaves
its pages behind."""
import os
import shutil

import pytest

from engines.postgres.tests.pg_state import query
from harness.scenario.plan import resolve_plan
from harness.state import derive, store
from harness.state.build import ensure
from tests.conftest import open_tmp_dir

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the server runs as its own user only when we are root")
KEPT = ["string_attributes_kv_temporal_idx", "numeric_attributes_kv_temporal_idx", "payloads_delete_index"]


def _plan(engine: str, *overrides: str):
    return resolve_plan("p99_5x", engine, profile="smoke", overrides=["load.aged_state=true", *overrides])


def _indexes(state_dir) -> set[str]:
    return {r[0] for r in query(state_dir, "SELECT indexname FROM pg_indexes WHERE schemaname = 'public' "
                                           "AND indexname NOT LIKE '%pkey'")}


@pytest.mark.slow
def test_fewer_indexes_derive_from_every_index_aged_and_bulk_built():
    root = open_tmp_dir("arkbench-derive-")
    try:
        _, full, _ = ensure(_plan("postgres"), root)
        fewer = _plan("postgres", f"workload.indexes=[{', '.join(KEPT)}]")
        d, man, built_now = ensure(fewer, root)
        assert built_now and man.method == "derived" and man.derived_from == full.id, man
        assert man.id == derive.aged.aged_inputs(fewer, store.inputs_for(fewer)).id, "the built state's own id"
        assert man.row_counts == full.row_counts and man.model_digest == full.model_digest
        assert _indexes(d) == set(KEPT) and len(_indexes(root / full.id)) == 10
        assert man.data_bytes < full.data_bytes, "the dropped indexes' files are gone"
        # the bulk-built base too, from the full base (on disk: the full aged state was aged from it)
        base_dir, base, _ = ensure(fewer, root, aged_ok=False)
        assert base.method == "derived" and base.derived_from == full.inputs.aged["base"]
        assert _indexes(base_dir) == set(KEPT)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _index_sizes(state_dir) -> dict[str, int]:
    return dict(query(state_dir, "SELECT indexrelname, pg_relation_size(indexrelid) FROM pg_stat_user_indexes "
                                 "WHERE indexrelname NOT LIKE '%pkey'"))


@pytest.mark.slow
def test_a_base_at_another_fillfactor_derives_by_rebuilding_as_its_build_would():
    """index_ff_70's base from the baseline's, its indexes rebuilt: the same rows and index sizes as a build at
    70 (a REINDEX is CREATE INDEX's build); its aged state is aged from it, never derived."""
    root = open_tmp_dir("arkbench-derive-ff-")
    try:
        default_dir, default, _ = ensure(_plan("postgres"), root, aged_ok=False)
        ff70 = _plan("postgres", "engines.postgres.index_fillfactor=70")
        assert derive.source_inputs(ff70, aged_ok=True) is None, "ageing at 70 writes other index pages"
        assert [s.id for s in derive.sources(ff70)] == [default.id]
        d, man, built_now = ensure(ff70, root, aged_ok=False)
        assert built_now and man.method == "derived" and man.derived_from == default.id, man
        assert man.id == store.inputs_for(ff70).id and man.row_counts == default.row_counts
        built = root / "built"
        built.mkdir()
        b_dir, b_man, _ = ensure(ff70, built, aged_ok=False)        # the same state, built from its rows
        assert b_man.method != "derived" and b_man.id == man.id
        derived_sizes, built_sizes = _index_sizes(d), _index_sizes(b_dir)
        assert derived_sizes == built_sizes, (derived_sizes, built_sizes)
        assert all(derived_sizes[k] > v for k, v in _index_sizes(default_dir).items() if v > 8192 * 4), \
            "70% full pages: larger indexes than at 90"
        aged_dir, aged_man, _ = ensure(ff70, root)
        assert aged_man.method == "aged" and aged_man.inputs.aged["base"] == man.id
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_no_derivation_where_an_update_skips_the_kept_indexes_or_drop_index_keeps_pages():
    no_to_block = _plan("postgres", "workload.indexes=[string_attributes_entity_kv_idx]")
    assert derive.source_inputs(no_to_block, aged_ok=True) is None, "HOT updates would age it otherwise"
    assert derive.source_inputs(no_to_block, aged_ok=False) is not None, "a bulk-built one derives"
    sqlite = _plan("sqlite", f"workload.indexes=[{', '.join(KEPT)}]")
    assert derive.source_inputs(sqlite, aged_ok=False) is None, "SQLite's DROP INDEX leaves free pages"
    assert derive.source_inputs(_plan("postgres"), aged_ok=True) is None, "every index: nothing to derive from"
