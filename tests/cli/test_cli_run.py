"""The CLI as a user runs it, checked through result.json."""
import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT, can_use_cgroups, harness_cmd


def run_cli(args: list[str], tmp_path: Path, timeout=120) -> tuple[int, str, str]:
    p = subprocess.run(harness_cmd() + args, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def run_scenario(tmp_path, *extra, timeout=120) -> tuple[int, dict, Path, str]:
    # sqlite, --runtime local unless `extra` says otherwise (argparse keeps the last one given)
    rc, out, err = run_cli(["run", "--engine", "sqlite", "--runtime", "local", "--results", str(tmp_path / "results"),
                            "--data", str(tmp_path / "data"), *extra], tmp_path, timeout=timeout)
    last = out.strip().splitlines()[-1] if out.strip() else ""
    assert last.endswith("result.json"), f"last line is the result path; got {out!r} / {err[-2000:]}"
    return rc, json.loads(Path(last).read_text()), Path(last).parent, err


@pytest.mark.slow
def test_reorg_smoke_run(tmp_path):
    rc, r, run_dir, _ = run_scenario(tmp_path, "--scenario", "reorg", "--profile", "smoke", "--duration", "4")
    assert r["version"] == 1 and r["engine"] == "sqlite" and r["scenario"] == "reorg"
    assert r["integrity"]["ok"] is True and r["integrity"]["expected"] == r["integrity"]["actual"]
    c = r["metrics"]["commit_latency_ms"]
    assert c["count"] > 20 and 0 < c["p50"] <= c["p99"] <= c["max"]
    assert r["status"] in ("passed", "failed") and rc == {"passed": 0, "failed": 1}[r["status"]]
    assert all(t["value"] is not None for t in r["thresholds"])
    assert r["environment"]["fsync_floor"]["samples"] > 0 and r["engine_version"].startswith("SQLite")
    assert r["metrics"]["bloat_ratio"] > 0 and r["metrics"]["rows_per_s"] > 0
    for f in ("commit.hlog", "timeseries.csv", "blocks.csv", "plan.yaml"):
        assert (run_dir / f).stat().st_size > 0, f
    assert not (tmp_path / "data" / r["run_id"]).exists(), "database files are removed after the run"


@pytest.mark.slow
def test_checkpoint_storm_smoke_has_readers_and_checkpoints(tmp_path):
    rc, r, _, _ = run_scenario(tmp_path, "--scenario", "checkpoint_storm", "--profile", "smoke", "--duration", "5")
    m = r["metrics"]
    assert r["integrity"]["ok"] is True
    assert m["reads"] > 50 and m["read_latency_ms"]["p99"] > 0 and m["read_errors"] == 0
    assert m["wal_bytes_max"] > 0


def test_misspelled_key_exits_2_and_names_field(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text((ROOT / "scenarios" / "reorg.yaml").read_text().replace("rows_per_block", "rows_per_blok"))
    rc, out, err = run_cli(["run", "--engine", "sqlite", "--scenario", str(bad), "--results",
                            str(tmp_path / "r")], tmp_path)
    assert rc == 2
    assert "workload.rows_per_blok" in err and str(bad) in err and "Traceback" not in err
    assert not (tmp_path / "r").exists(), "nothing ran"


def test_validate_command(tmp_path):
    rc, out, _ = run_cli(["validate", str(ROOT / "scenarios")], tmp_path)
    assert rc == 0 and "reorg.yaml" in out


@pytest.mark.cgroup
@pytest.mark.slow
@pytest.mark.skipif(can_use_cgroups() is not None, reason=str(can_use_cgroups()))
def test_memory_limit_is_enforced_and_recorded(tmp_path):
    rc, r, _, _ = run_scenario(tmp_path, "--scenario", "p99_5x", "--profile", "smoke", "--duration", "3",
                               "--mem", "256m")
    assert r["memory_limit_bytes"] == 268435456 and r["memory_enforcement"].startswith("cgroup-")
    assert r["integrity"]["ok"] is True
    assert 0 < r["metrics"]["mem_bytes_max"] <= 268435456


@pytest.mark.cgroup
@pytest.mark.slow
@pytest.mark.skipif(can_use_cgroups() is not None, reason=str(can_use_cgroups()))
def test_oom_is_recorded_with_timeseries(tmp_path):
    # ~400K rows at scale 0.02: SQLite's page cache (1 GB allowed) outgrows 256 MB during the load.
    rc, r, run_dir, _ = run_scenario(tmp_path, "--scenario", "p99_5x", "--profile", "quick", "--scale", "0.02",
                                     "--duration", "5", "--mem", "256m", "--set", "engines.sqlite.cache_size=1GB")
    assert rc == 3 and r["status"] == "oom" and "OOM" in r["error"]
    lines = (run_dir / "timeseries.csv").read_text().splitlines()
    assert len(lines) >= 2, "the time series up to the kill is kept"
    assert r["metrics"]["partial"] is True
