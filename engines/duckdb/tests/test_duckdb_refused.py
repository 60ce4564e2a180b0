"""A block DuckDB's driver rejects with a constraint error is a RefusedBlock: the cell fails (the engine could not
carry the workload, as an OOM says) instead of erroring, which made the ratio walk's 5137m level inconclusive on
2026-11-29 (DuckDB's ART indexes reject some updates of indexed columns). The transaction is rolled back, so the
engine goes on at the rows it had."""
import pytest

from harness import registry
from harness.errors import RefusedBlock
from harness.scenario.plan import resolve_plan
from harness.workload import schema
from harness.workload.block import Block

ROW = ("string_attributes", (b"\x01" * 32, 837, 2**62, "$owner", "a"))


def test_a_constraint_error_is_a_refused_block_and_the_transaction_is_rolled_back(tmp_path):
    assert schema.columns("bitemporal", ROW[0]) == ("entity_key", "from_block", "to_block", "key",
                                                                       "value")
    engine = registry.engine_class("duckdb")()
    engine.open(resolve_plan("p99_5x", "duckdb", profile="smoke").unsized_engine_settings(), tmp_path)
    try:
        engine.create_schema("bitemporal")
        one = Block(number=837, kind="ops", variant="bitemporal", inserts={ROW[0]: [ROW[1]]})
        engine.apply_block(engine.prepare_block(one))
        twice = Block(number=838, kind="ops", variant="bitemporal",
                      inserts={ROW[0]: [ROW[1], (b"\x02" * 32, 838, 2**62, "$owner", "b")]})
        with pytest.raises(RefusedBlock, match="ConstraintException: Constraint Error: Duplicate key"):
            engine.apply_block(engine.prepare_block(twice))
        assert [r[0] for r in engine.iter_rows(ROW[0])] == [ROW[1][0]], "the refused block left nothing behind"
    finally:
        engine.close()
