"""A block's time by phase, on real engines: the phases add up to the service time, the SQLite family's
automatic checkpoint is timed where it runs, PostgreSQL's server accounts for the WAL."""
import csv

import pytest

from tests.cli.test_cli_run import run_scenario
from tests.conftest import can_use_cgroups

PHASE_COLUMNS = ("phase_statements_ms", "phase_commit_ms", "phase_checkpoint_ms")


def _blocks(run_dir):
    with open(run_dir / "blocks.csv") as f:
        return list(csv.DictReader(f))


@pytest.mark.slow
def test_sqlite_phases_add_up_to_the_service_time_and_time_the_checkpoint(tmp_path):
    # wal_autocheckpoint 1000 pages: several checkpoints inside a smoke run's commits
    rc, r, run_dir, err = run_scenario(tmp_path, "--scenario", "p99_5x", "--profile", "smoke", "--duration", "6",
                                       "--set", "engines.sqlite.wal_autocheckpoint=1000")
    blocks = _blocks(run_dir)
    service = sum(float(b["service_ms"]) for b in blocks)
    timed = sum(float(b[c]) for b in blocks for c in PHASE_COLUMNS)
    assert len(blocks) > 20 and abs(service - timed) <= 0.05 * service, (service, timed)
    ckpt = [float(b["phase_checkpoint_ms"]) for b in blocks]
    auto = r["metrics"]["engine_counters"]["measured"]["autocheckpoints_in_commit"]
    assert auto > 0 and sum(c > 1 for c in ckpt) >= 1          # the checkpoints' time is where they ran
    assert r["engine_settings"]["wal_autocheckpoint"] == 1000   # the threshold holds, the writer runs it
    split = r["metrics"]["block_phases"]
    assert split["timed"] == ["statements", "commit", "checkpoint"] and split["phases"]["other"]["share"] < 0.05
    assert split["cpu"]["share"] > 0 and "block phases: mean block" in err


@pytest.mark.slow
@pytest.mark.cgroup
@pytest.mark.skipif(can_use_cgroups() is not None, reason=str(can_use_cgroups()))
def test_postgres_phases_and_its_server_wal_statistics(tmp_path):
    rc, r, run_dir, err = run_scenario(tmp_path, "--engine", "postgres", "--scenario", "p99_5x", "--profile", "smoke",
                                       "--duration", "5", "--mem", "512m", timeout=300)
    assert r["status"] in ("passed", "failed"), r["error"]
    blocks = _blocks(run_dir)
    service = sum(float(b["service_ms"]) for b in blocks)
    timed = sum(float(b["phase_statements_ms"]) + float(b["phase_commit_ms"]) for b in blocks)
    assert abs(service - timed) <= 0.05 * service
    measured = r["metrics"]["engine_counters"]["measured"]
    assert measured["wal_bytes"] > 0 and measured["wal_records"] > 0 and "wal_fpi" in measured
    assert measured["wal_syncs"] > 0 and measured["wal_sync_time_us"] > 0     # track_wal_io_timing is on
    assert r["metrics"]["block_phases"]["cpu"]["share"] > 0                  # the server's processes, seen
