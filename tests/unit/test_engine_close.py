"""An engine's close when its files are deleted next (a run's clone) against when they are kept (a state)."""
import pytest

from harness import registry
from harness.workload.generator import BlockGenerator
from tests.conftest import mixed_spec


@pytest.mark.parametrize("name", ["sqlite", "duckdb"])
def test_a_discarding_close_leaves_the_wal_unmerged_and_a_plain_close_merges_it(tmp_path, name):
    """A run's files are deleted after it: its close skips the checkpoint that only tidies them (at 1x under
    the limit, minutes that an interrupted run spent waiting); a state build's close still does it."""
    sizes = {}
    for discard in (True, False):
        e = registry.engine_class(name)()
        e.open(registry.settings_model(name)().model_dump(mode="json"), tmp_path / str(discard))
        e.create_schema("bitemporal")
        for b in BlockGenerator(mixed_spec()).load_blocks(100, 2000, 50):
            e.apply_block(e.prepare_block(b))
        data_dir = e.path.parent
        e.close(discard=discard)
        sizes[discard] = sum(p.stat().st_size for p in data_dir.iterdir() if p.name.endswith(("-wal", ".wal")))
    assert sizes[True] > 0 and sizes[False] == 0, sizes
