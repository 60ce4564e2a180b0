"""A rows knee started again elsewhere (another START_ROWS) adopts the steps the first walk measured on this boot
as it would: real smoke cells of SQLite, run once (harness/walks/knee_prior.py)."""
import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT, harness_cmd


def _knee(tmp_path, start_rows):
    sets = ["phases.warmup_s=1", "phases.measure_s=2"]
    return subprocess.run(harness_cmd() + ["knee", "--engine", "sqlite", "--scenario", "p99_5x", "--profile", "smoke",
                                           "--axis", "rows", "--mem", "512m", "--start-rows", str(start_rows),
                                           "--runtime", "local", "--results", str(tmp_path / "results"),
                                           "--data", str(tmp_path / "data"), *[a for s in sets for a in ("--set", s)]],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)


@pytest.mark.serial
@pytest.mark.slow
def test_a_knee_started_again_elsewhere_adopts_the_first_walks_steps_and_runs_none_of_them_again(tmp_path):
    first = _knee(tmp_path, 2400)
    assert first.returncode in (0, 1), first.stderr[-3000:]
    k1 = json.loads(Path(first.stdout.strip().splitlines()[-2]).read_text())
    measured = {s["value"]: s["cell"] for s in k1["steps"] if not s["confirming"] and s["verdict"] != "error"}
    assert measured and "adopted" not in first.stderr
    second = _knee(tmp_path, 2629)
    assert second.returncode in (0, 1), second.stderr[-3000:]
    root2 = Path(second.stdout.strip().splitlines()[-2]).parent
    k2 = json.loads((root2 / "knee.json").read_text())
    assert root2 != Path(first.stdout.strip().splitlines()[-2]).parent, "a walk of its own"
    for value, cell in measured.items():
        assert f"step at {value:,.0f} adopted from" in second.stderr
        assert f"{cell.split('/')[-1]}: complete" in second.stderr, "found done, not run again"
        one = json.loads((tmp_path / "results" / Path(first.stdout.strip().splitlines()[-2]).parent.name / cell /
                          "cell.json").read_text())
        two = json.loads((root2 / cell / "cell.json").read_text())
        assert (one["cell_id"], one["started_utc"]) == (two["cell_id"], two["started_utc"])
    assert {s["value"] for s in k2["steps"]} >= set(measured)
    ran_again = second.stderr.count("running (local)")
    assert ran_again < first.stderr.count("running (local)"), second.stderr[-3000:]
