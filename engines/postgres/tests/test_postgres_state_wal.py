"""A built state keeps no spent WAL: every clone copies a state's pg_wal and every preload reads it, so
segments a build recycled for reuse (at 1x ~7 GB of a 19 GB state) cost each cell time and cache."""
import os
import shutil

import pytest

from engines.postgres.tests.pg_state import query
from harness.scenario.plan import resolve_plan
from harness.state import store
from harness.state.build import ensure
from tests.conftest import open_tmp_dir

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the server runs as its own user only when we are root")
SEGMENT_BYTES = 16 << 20            # initdb's default WAL segment
KEPT_SEGMENTS = 3                   # the current one, and what a checkpoint may preallocate


@pytest.mark.slow
def test_a_built_state_keeps_no_spent_wal_segments():
    root = open_tmp_dir("arkbench-state-wal-")
    try:
        plan = resolve_plan("p99_5x", "postgres", profile="smoke", overrides=["load.scale=0.02"])
        state_dir, man, _ = ensure(plan, root, aged_ok=False)
        wal_dir = next((state_dir / store.DATA).rglob("pg_wal"))
        kept = sum(p.stat().st_size for p in wal_dir.iterdir() if p.is_file())
        [(written,)] = query(state_dir, "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint")
        assert written > 2 * KEPT_SEGMENTS * SEGMENT_BYTES, f"the build wrote too little WAL to tell ({written})"
        assert kept <= KEPT_SEGMENTS * SEGMENT_BYTES, f"pg_wal kept {kept >> 20} MiB of {written >> 20} MiB written"
    finally:
        shutil.rmtree(root, ignore_errors=True)
