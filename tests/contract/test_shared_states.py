"""An engine whose manifest names another in state_of (libSQL: SQLite) opens that engine's bulk-built state as
its own: the same schema, statement for statement; every row read back as the model has it; and the run's
blocks applied on top leave what its own row-by-row load and the same blocks leave. Checked, not assumed,
so that one 5x state serves both steps of a walk."""
import re

import pytest

from harness import registry
from harness.state import store
from harness.state.rows import sorted_chunks
from harness.workload.generator import BlockGenerator
from tests.conftest import mixed_spec
from tests.contract.test_engine_states import BATCH_ROWS, ENTITIES, SPREAD, apply_alike, resumed, scan

SHARING = [n for n, m in registry.manifests().items() if m.state_of]


def statements(engine: str, variant: str) -> tuple[list[str], list[str]]:
    norm = lambda text: [re.sub(r"\s+", " ", s).strip() for s in text.split(";") if s.strip()]  # noqa: E731
    tables, indexes = registry.ddl_split(engine, variant)
    return norm(tables), norm(indexes)


def test_an_engine_shares_states_only_where_its_manifest_says_so():
    assert SHARING == ["libsql"] and registry.manifest("libsql").state_of == "sqlite"


@pytest.mark.parametrize("name", SHARING)
@pytest.mark.parametrize("variant", ["bitemporal", "simple", "current_history"])
def test_an_engine_opens_the_state_its_manifest_names_as_its_own(open_tmp, variant, name):
    src = registry.manifest(name).state_of
    assert statements(name, variant) == statements(src, variant)
    spec = mixed_spec(variant=variant, reorg=0.25)
    cls, src_cls = registry.engine_class(name), registry.engine_class(src)
    settings = registry.settings_model(name)().model_dump(mode="json")
    src_settings = store.shared_settings(src, settings)

    built = BlockGenerator(spec)
    built.load_model(ENTITIES, BATCH_ROWS, SPREAD)
    bulk = src_cls()
    bulk.open(src_cls.build_settings(src_settings), open_tmp / "state")
    try:
        bulk.bulk_begin(variant)
        for chunk in sorted_chunks(built.model, spec.shape, src, workers=1):
            bulk.bulk_insert(chunk.prepared)
        bulk.bulk_finish(src_settings)
    finally:
        bulk.close()
    built.model.save(open_tmp / "model.bin", built.block_number)

    organic, gen, opened = cls(), BlockGenerator(spec), cls()
    organic.open(settings, open_tmp / "organic")
    opened.open(settings, open_tmp / "state")
    try:
        organic.create_schema(variant)
        for b in gen.load_blocks(ENTITIES, BATCH_ROWS, SPREAD):
            organic.apply_block(organic.prepare_block(b))
        organic.settle()
        opened.use_schema(variant)
        assert scan(opened) == scan(organic) == gen.model.digest.as_dict()
        apply_alike(gen, resumed(spec, open_tmp / "model.bin", built.shape), organic, opened)
    finally:
        organic.close()
        opened.close()


def test_a_libsql_plan_asks_for_the_sqlite_state_of_the_same_scenario():
    from harness.scenario.plan import resolve_plan
    lib, sq = (store.inputs_for(resolve_plan("p99_5x", e, profile="ratio", mem="2g")) for e in ("libsql", "sqlite"))
    assert lib.id == sq.id and lib.engine == "sqlite"


def test_a_libsql_plan_asks_for_the_aged_state_sqlite_ages_and_ages_none_of_its_own():
    from harness.scenario.plan import resolve_plan
    from harness.state import aged
    lib, sq = (resolve_plan("p99_5x", e, profile="ratio", mem="2g") for e in ("libsql", "sqlite"))
    assert aged.wanted(lib) and aged.wanted(sq)
    lib_aged, sq_aged = (aged.aged_inputs(p, store.inputs_for(p)) for p in (lib, sq))
    assert lib_aged.id == sq_aged.id and lib_aged.aged["writer"] == "sqlite"
    assert aged.unlimited_settings(lib, "sqlite") == aged.unlimited_settings(sq)
