"""A knee whose steps move their state in (DROP_STATES=1) runs each step after the first on the database the step
before left, and confirms on a fresh build: real smoke cells of SQLite (harness/walks/knee_continue.py)."""
import gzip
import json
import os
import subprocess
from pathlib import Path

import pytest

from harness.walks.knee_continue import MAX_ADDED_SHARE
from tests.conftest import ROOT, harness_cmd


def _result(cell_dir: Path) -> dict:
    p = cell_dir / "result.json"
    return json.loads(p.read_text() if p.is_file() else gzip.open(f"{p}.gz").read())


@pytest.mark.serial
@pytest.mark.slow
def test_a_knee_that_takes_its_state_continues_on_the_last_steps_database_and_confirms_on_a_fresh_one(tmp_path):
    states = tmp_path / "states"
    sets = ["phases.warmup_s=1", "phases.measure_s=2", "load.age_blocks=2"]
    r = subprocess.run(harness_cmd() + ["knee", "--engine", "sqlite", "--scenario", "p99_5x", "--profile", "smoke",
                                        "--axis", "rows", "--mem", "512m", "--scale", "0.2", "--start-rows", "2400",
                                        "--drop-states", "--continue-steps", "--runtime", "local", "--results", str(tmp_path / "results"),
                                        "--data", str(tmp_path / "data"), *[a for s in sets for a in ("--set", s)]],
                       cwd=ROOT, capture_output=True, text=True, timeout=900, env={**os.environ, "STATES": str(states)})
    assert r.returncode in (0, 1), r.stderr[-3000:]
    knee_json = Path(r.stdout.strip().splitlines()[-2])
    k = json.loads(knee_json.read_text())
    root = knee_json.parent
    steps = [s for s in k["steps"] if s["verdict"] != "error"]
    assert steps[0]["continued_rows"] is None and any(s["continued_rows"] for s in steps), r.stderr[-3000:]
    assert any(s["confirming"] for s in steps), r.stderr[-3000:]
    too_old = r.stderr.count("this step starts from a fresh build")
    fresh_later = [s for s in steps[1:] if not s["confirming"] and not s["continued_rows"]]
    assert len(fresh_later) == too_old, (fresh_later, r.stderr[-3000:])
    before = None
    for s in steps:
        res = _result(root / s["cell"])
        assert res["integrity"]["ok"] and res["integrity"]["last_block"], s["cell"]
        lineage = json.loads((root / s["cell"] / "state.json").read_text())["state_continued"]
        if s["continued_rows"]:
            assert "-cont" in res["plan"]["state"]["id"] and res["plan"]["continue_from"] == res["plan"]["state"]["id"]
            # it starts where the step before it ended: that step's last block, its rows per block
            assert lineage[-1]["last_block"] == before["integrity"]["last_block"]
            assert lineage[-1]["rows_per_block"] == before["plan"]["workload"]["rows_per_block"]
            assert s["continued_rows"] == sum(c["rows_per_block"] * c["blocks"] for c in lineage)
            assert s["continued_rows"] <= MAX_ADDED_SHARE * sum(res["load"]["row_counts"].values()) * 1.01
        else:
            assert lineage is None and "-cont" not in res["plan"]["state"]["id"], "a confirmation builds afresh"
        before = res
    assert "starting state" in (knee_json.parent / "report.md").read_text()
    assert not list(states.glob("*-cont*")), "the chain is dropped when the knee ends"
    report = (knee_json.parent / "report.md").read_text()
    paired = [s["value"] for s in steps if s["confirming"] and any(c["value"] == s["value"] and c["continued_rows"]
                                                                   for c in steps)]
    assert ("against the fresh confirmation at the same value" in report) == bool(paired)
    refused = subprocess.run(harness_cmd() + ["knee", "--engine", "sqlite", "--axis", "rows", "--profile", "smoke",
                                              "--continue-steps"], cwd=ROOT, capture_output=True, text=True)
    assert refused.returncode == 2 and "CONTINUE=1" in refused.stderr and "DROP_STATES=1" in refused.stderr
