"""index_fillfactor is a layout setting: the secondary indexes are created with it, by the organic load and by
a state's bulk build alike, a run reads it back from the indexes themselves, and a state built with it is a
state of its own."""
import os
import shutil

import pytest

from engines.postgres.adapter import PostgresEngine, with_fillfactor
from harness.scenario.plan import resolve_plan
from harness.state import store
from tests.conftest import open_tmp_dir

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the server runs as its own user only when we are root")


@pytest.fixture
def open_tmp():
    d = open_tmp_dir("arkbench-test-")
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _opened(path, **settings) -> PostgresEngine:
    e = PostgresEngine()
    e.open(settings, path)
    return e


def test_indexes_are_built_and_read_back_at_the_fillfactor_asked(open_tmp):
    organic = _opened(open_tmp / "organic", index_fillfactor=70)
    try:
        organic.create_schema("bitemporal")
        assert organic.info().settings["index_fillfactor"] == 70
    finally:
        organic.close(discard=True)
    bulk = _opened(open_tmp / "bulk", **PostgresEngine.build_settings({"index_fillfactor": 70}))
    try:
        bulk.bulk_begin("bitemporal")
        bulk.bulk_finish({})
    finally:
        bulk.close()
    reopened = _opened(open_tmp / "bulk")             # a run's settings need not say it: the indexes do
    try:
        reopened.use_schema("bitemporal")
        assert reopened.info().settings["index_fillfactor"] == 70
    finally:
        reopened.close(discard=True)
    default = _opened(open_tmp / "default")
    try:
        default.create_schema("bitemporal")
        assert default.info().settings["index_fillfactor"] == 90
    finally:
        default.close(discard=True)


def test_the_fillfactor_is_said_only_where_it_differs_and_makes_a_state_of_its_own():
    sql = "CREATE INDEX a ON t (x, y);\nCREATE INDEX b ON t (z);"
    assert with_fillfactor(sql, 90) == sql
    assert with_fillfactor(sql, 70).count(") WITH (fillfactor = 70);") == 2
    ids = {ff: store.inputs_for(resolve_plan("p99_5x", "postgres", profile="smoke",
                                             overrides=[f"engines.postgres.index_fillfactor={ff}"])).id
           for ff in (90, 70)}
    assert ids[90] != ids[70]
