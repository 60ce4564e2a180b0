"""`harness bench-overhead` as a user runs it (real SQLite, smoke scale), and how the control loop sizes
the blocks it builds before its clock starts."""
import json
import re
import subprocess
from pathlib import Path

import pytest

from harness.bench import default_data_root
from harness.bench.overhead import (OVERHEAD_VERSION, PREBUILT_DEFAULT_BLOCKS, PREBUILT_MAX_BLOCKS, PREBUILT_MIN_BLOCKS,
                                    prebuilt_count)
from harness.environment import filesystem
from tests.conftest import ROOT, harness_cmd


def test_the_loop_builds_the_harness_rate_with_a_margin_within_bounds():
    # 20,000 rows/s for 55 s of 3,000-row blocks is 367 blocks; 1.5x that is 550
    assert prebuilt_count(20_000, 55, 3000) == 550
    assert prebuilt_count(None, 55, 3000) == PREBUILT_DEFAULT_BLOCKS
    assert prebuilt_count(10, 1, 3000) == PREBUILT_MIN_BLOCKS
    assert prebuilt_count(1e9, 3600, 3000) == PREBUILT_MAX_BLOCKS


@pytest.mark.slow
def test_bench_overhead_prints_a_ratio_per_engine_and_keeps_both_sides(tmp_path):
    p = subprocess.run(harness_cmd() + ["bench-overhead", "--engines", "sqlite", "libsql", "--repeats", "2",
                                        "--profile", "smoke", "--duration", "2", "--results", str(tmp_path)],
                       cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert p.returncode in (0, 1), p.stderr[-3000:]          # 1: a median below 0.9, still a result
    line = re.search(r"^sqlite ratio (\d+\.\d{3}) \(n=2, min (\d+\.\d{3}), max (\d+\.\d{3})", p.stdout, re.M)
    assert line, p.stdout
    out = json.loads(next(tmp_path.glob("overhead-*.json")).read_text())
    assert out["version"] == OVERHEAD_VERSION and out["environment"]["cpus_usable"] >= 1
    # no DATA: tmpfs when it has room, named in the file, and left behind empty-handed
    root = Path(out["data_root"])
    assert out["data_fstype"] == filesystem(root)["fstype"]
    assert root == default_data_root().resolve() and not (root.is_relative_to("/dev/shm") and root.exists())
    eng = out["engines"]["sqlite"]
    assert eng["ratio"] == float(line.group(1)) and len(eng["repeats"]) == 2
    assert p.returncode == (0 if all(e["ratio"] >= out["target_ratio"] for e in out["engines"].values()) else 1)
    for t in eng["repeats"]:
        h, lp = t["harness"], t["loop"]
        assert h["status"] in ("passed", "failed") and h["rows_per_s"] > 0
        assert lp["rows"] > 0 and lp["blocks"] > 0 and lp["rows_per_s"] == pytest.approx(lp["rows"] / lp["apply_s"], rel=1e-3)
        # sized from the harness's rate (1.5x), so a smoke run never runs the loop dry
        assert lp["prebuilt_blocks"] >= PREBUILT_MIN_BLOCKS and lp["refills"] == 0
        assert t["ratio"] == round(h["rows_per_s"] / lp["rows_per_s"], 3)
    assert eng["loop_without_adapter_conversion"] is False and eng["prepare_ms_per_block"] >= 0
    # libsql's loop binds raw integers, so its ratio includes the adapter's exact binding, and it says so
    lib = out["engines"]["libsql"]
    assert lib["loop_without_adapter_conversion"] is True and lib["prepare_ms_per_block"] > 0
    assert re.search(r"^libsql ratio \d+\.\d{3} .*; prepare_block \d+\.\d{3} ms/block in the feed; loop binds raw "
                     r"values: the ratio includes the adapter's conversion$", p.stdout, re.M), p.stdout
