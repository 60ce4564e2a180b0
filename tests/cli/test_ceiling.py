"""make ceiling as a user runs it: steps, the knee's repeat, ceiling.json and its report."""
import json
import subprocess
from pathlib import Path

import pytest

from harness.ceiling import Search
from tests.conftest import ROOT, harness_cmd


def test_the_search_steps_then_doubles_then_bisects():
    s = Search([100, 1000, 5000], max_qps=100_000, resolution=0.1)
    tried = []
    capacity = 7000
    while (q := s.next_qps()) is not None:
        tried.append(q)
        s.record(q, q <= capacity)
    assert tried[:4] == [100, 1000, 5000, 10000]           # fixed steps, then doubling past the last
    lo, hi = s.bounds()
    assert lo <= capacity < hi and hi / lo <= 1.1           # bisected down to the resolution


def test_the_search_stops_at_the_first_fixed_step_that_fails_and_at_max_qps():
    s = Search([100, 1000, 5000], max_qps=100_000, resolution=0.1)
    s.record(100, True)
    s.record(1000, False)
    assert 100 < s.next_qps() < 1000                        # 5000 is not tried above a failure
    s = Search([100], max_qps=300, resolution=0.1)
    s.record(100, True)
    s.record(200, True)
    assert s.next_qps() is None                              # 400 would pass max_qps
    s = Search([100], max_qps=300, resolution=0.1)
    s.record(100, False)
    assert s.next_qps() is None and s.bounds() == (None, 100)


@pytest.mark.slow
def test_ceiling_smoke_finds_and_confirms_its_knee(tmp_path):
    sets = ["ceiling.steps_qps=[200]", "ceiling.max_qps=400", "phases.warmup_s=1", "phases.measure_s=3",
            "ceiling.thresholds=[knee_read_qps >= 400]"]
    p = subprocess.run(harness_cmd() + ["ceiling", "--engine", "sqlite", "--scenario", "combined", "--profile", "smoke",
                                        "--runtime", "local", "--results", str(tmp_path / "results"),
                                        "--data", str(tmp_path / "data"), *[a for s in sets for a in ("--set", s)]],
                       cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    ceiling_json, html = p.stdout.strip().splitlines()[-2:]
    c = json.loads(Path(ceiling_json).read_text())
    assert [(s["offered_qps"], s["repeat"]) for s in c["steps"]] == [(200, 1), (400, 1), (400, 2)]
    assert all(s["passed"] and s["db_bytes"] > 0 and s["write_p99_ms"] > 0 for s in c["steps"])
    assert c["knee"]["knee_read_qps"] == 400 and c["knee"]["runs"] == 2 and c["complete"]
    assert c["threshold_results"] == [{"expr": "knee_read_qps >= 400", "value": 400, "passed": True}]
    assert "reads/s offered" in c["sentence"] and "rows/s written" in c["sentence"]
    assert "Reads at the knee, by query kind" in Path(html).read_text()
