"""The checklist's I/O figures on a real SQLite run (result.json metrics.io, the time series), and the
optimisation matrix end to end at smoke scale."""
import csv
import json
from pathlib import Path

import pytest

from harness.environment import filesystem
from harness.platform.blockio import device_of
from harness.results.walks import MATRIX_VERSION
from tests.cli.test_cli_run import run_cli, run_scenario
from tests.conftest import ROOT, can_use_cgroups


def _on_a_disk(tmp_path: Path) -> None:
    if filesystem(tmp_path)["fstype"] == "tmpfs" or device_of(tmp_path) is None:
        pytest.skip("the test's folder is on no block device: nothing reaches a disk to count")


@pytest.mark.cgroup
@pytest.mark.slow
@pytest.mark.skipif(can_use_cgroups() is not None, reason=str(can_use_cgroups()))
def test_a_wal_run_writes_more_to_the_disk_than_it_commits_and_knows_its_residency(tmp_path):
    """Durable at commit, every block's WAL frames reach the disk inside the measured phase: whole pages for
    rows of a few hundred bytes, the pages of 13 indexes, and the checkpoints' copies back into the file."""
    _on_a_disk(tmp_path)
    rc, r, run_dir, err = run_scenario(tmp_path, "--scenario", "p99_5x", "--profile", "smoke", "--duration", "6",
                                       "--mem", "256m", "--set", "durability=commit")
    io = r["metrics"]["io"]
    assert r["integrity"]["ok"] is True, err[-2000:]
    assert io["logical_bytes_written"] > 0 and io["device"]["write_bytes"] > io["logical_bytes_written"]
    assert io["write_amplification"] > 1
    assert "cgroup" in io["attributed"]["source"] and io["attributed"]["write_bytes"] > 0
    res = io["residency"]
    assert res["file_bytes_start"] > 0 and 0 <= res["share_start"] <= 1 and 0 < res["share_end"] <= 1
    per = io["index_residency"]         # p99_5x asks for it: every table and index of the 13-index schema
    assert {"payloads", "string_attributes_kv_temporal_idx", "payloads_delete_index"} <= set(per)
    assert all(0 <= v["share_end"] <= 1 and v["file_bytes_end"] > 0 for v in per.values())
    with open(run_dir / "timeseries.csv") as f:
        rows = [row for row in csv.DictReader(f) if row["phase"] == "measure"]
    assert rows and any(float(row["write_bytes_per_s"] or 0) > 0 for row in rows)


@pytest.mark.cgroup
@pytest.mark.slow
@pytest.mark.skipif(can_use_cgroups() is not None, reason=str(can_use_cgroups()))
def test_the_matrix_runs_the_baseline_each_option_and_writes_its_table(tmp_path):
    rc, out, err = run_cli(["matrix", "--engine", "sqlite", "--scenario", "p99_5x", "--profile", "smoke",
                            "--mem", "256m", "--duration", "3", "--runtime", "local",
                            "--options", "cache_25", "autockpt_1000", "--results", str(tmp_path / "results"),
                            "--data", str(tmp_path / "data")], tmp_path, timeout=600)
    assert rc in (0, 1), err[-3000:]
    m = json.loads(Path(out.strip().splitlines()[-1]).read_text())
    assert m["version"] == MATRIX_VERSION
    assert [r["option"] for r in m["rows"]][:3] == ["baseline", "cache_25", "autockpt_1000"]
    assert all(r["status"] in ("passed", "failed") and r["p99_ms"] > 0 for r in m["rows"])
    assert all(r["p99_vs_baseline"] is not None and r["service_p50_vs_baseline"] is not None for r in m["rows"][1:])
    assert m["basis"] in ("p99", "service p50") and "| Δ service p50 |" in out
    assert m["rows"][1]["overrides"] == ["engines.sqlite.cache_size=64MB"]
    assert "| cache_25: cache_size 25% of MEM |" in out and m["answer"]
    # compare: a matrix's cells against themselves, and two of its cells as one side's repeats
    root = Path(m["dir"])
    rc, out, err = run_cli(["compare", str(root), str(root)], tmp_path)
    # one block per cell: the baseline, the options, and the best combination where two options helped
    assert rc == 0 and out.count("commit p99") == len(m["rows"]) and "1.000x  n=1: no test" in out, err
    # three cells, or four when the best combination ran: two a side, one shared
    cells = sorted(str(d) for d in (root / "p99_5x").iterdir() if d.name.startswith("sqlite-"))
    assert len(cells) == len(m["rows"]) >= 3
    rc, out, err = run_cli(["compare", ",".join(cells[:2]), ",".join(cells[1:3]), "--json"], tmp_path)
    assert rc == 0, err
    [cell] = json.loads(out)
    assert len(cell["a_runs"]) == len(cell["b_runs"]) == 2
    # "-": a figure one side's runs lack (a cell whose readings a smoke phase too short to hold)
    assert {f["verdict"] for f in cell["figures"]} <= {"faster", "slower", "better", "worse", "not significant", "-"}


def test_compare_refuses_a_folder_with_no_run(tmp_path):
    rc, out, err = run_cli(["compare", str(tmp_path), str(ROOT)], tmp_path)
    assert rc == 2 and "neither a run" in err and "Traceback" not in err
