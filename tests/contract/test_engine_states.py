"""Every discovered engine's bulk path (a starting state's build) leaves exactly the rows the row-by-row
load leaves, on every schema variant and with the load's history pass, and a state reopened with use_schema
takes the run's blocks."""
import dataclasses
import sys

import pytest

from harness import registry
from harness.state.rows import sorted_chunks
from harness.workload.digest import digest_rows
from harness.workload.generator import BlockGenerator
from harness.workload.expected import LiveModel
from tests.conftest import engine_setting_cases, mixed_spec

ENTITIES, BATCH_ROWS, SPREAD = 300, 2000, 15


def scan(engine) -> dict:
    return digest_rows({t: engine.iter_rows(t) for t in engine.row_counts()})


def resumed(spec, model_file, shape) -> BlockGenerator:
    """A generator that carries on from a saved model, as a run starting from a state does."""
    gen = BlockGenerator(spec)
    gen.model, gen.block_number = LiveModel.restore(model_file, shape, spec.seed, spec.variant,
                                                    spec.long_lived_fraction)
    return gen


def apply_alike(gen, resumed_gen, organic, other, blocks: int = 25) -> None:
    """The run's next blocks, the resumed generator's equal to the original's, applied to both engines: both
    then hold what the model holds."""
    for _ in range(blocks):
        a, b = gen.next_block(), resumed_gen.next_block()
        assert (a.number, a.inserts, a.deletes, a.terminate_keys) == (b.number, b.inserts, b.deletes, b.terminate_keys)
        organic.apply_block(organic.prepare_block(a))
        other.apply_block(other.prepare_block(b))
    assert scan(other) == scan(organic) == resumed_gen.model.digest.as_dict()


@pytest.mark.parametrize("name,overrides", engine_setting_cases())
@pytest.mark.parametrize("variant", ["bitemporal", "simple", "current_history", "current_history_indexed"])
def test_a_bulk_built_state_holds_what_the_row_by_row_load_leaves(open_tmp, variant, name, overrides, monkeypatch):
    tmp_path = open_tmp
    cls = registry.engine_class(name)
    # an engine that commits its build every N rows (DuckDB) commits several times here, not once at the end
    monkeypatch.setattr(sys.modules[cls.__module__], "BULK_COMMIT_ROWS", 500, raising=False)
    settings = registry.settings_model(name)(**overrides).model_dump(mode="json")
    # with a history pass: every entity revised once in the load, its ended version built in bulk beside it
    spec = dataclasses.replace(mixed_spec(variant=variant, reorg=0.25), history_versions=1)

    organic, gen = cls(), BlockGenerator(spec)
    organic.open(settings, tmp_path / "organic")
    bulk, built = cls(), BlockGenerator(spec)
    try:
        organic.create_schema(variant)
        for b in gen.load_blocks(ENTITIES, BATCH_ROWS, SPREAD):
            organic.apply_block(organic.prepare_block(b))
        organic.settle()

        bulk.open(cls.build_settings(settings), tmp_path / "bulk")
        bulk.bulk_begin(variant)
        built.load_model(ENTITIES, BATCH_ROWS, SPREAD)
        for chunk in sorted_chunks(built.model, spec.shape, name, workers=1):
            bulk.bulk_insert(chunk.prepared)
        bulk.bulk_finish(settings)
        # each index's build and the settling timed apart, for the build's log (state/build.py)
        assert set(bulk.bulk_phases_s) == {f"index {n}" for n in registry.index_names(name, variant)} | {"settle"}
        assert all(s >= 0 for s in bulk.bulk_phases_s.values())
        assert built.model.digest.as_dict() == gen.model.digest.as_dict()
        assert scan(bulk) == scan(organic) == gen.model.digest.as_dict()
        assert bulk.row_counts() == organic.row_counts()
        bulk.close()

        # the state as a run opens it: the scenario's settings, its schema, the model restored from file
        built.model.save(tmp_path / "model.bin", built.block_number)
        bulk = cls()
        bulk.open(settings, tmp_path / "bulk")
        bulk.use_schema(variant)
        apply_alike(gen, resumed(spec, tmp_path / "model.bin", built.shape), organic, bulk)
    finally:
        organic.close()
        bulk.close()
