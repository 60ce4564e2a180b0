"""Starting states as a user meets them: make state prints the state's directory last, runs clone it (built
once, then reused) and record how their database was made."""
import json
import subprocess

import pytest

from harness import registry
from tests.cli.test_cli_run import run_scenario
from tests.conftest import ROOT, harness_cmd


def harness(*args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run(harness_cmd() + list(args), cwd=ROOT, capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
def test_a_state_is_built_once_listed_and_cloned_cold_into_each_run(tmp_path):
    p = harness("state", "--engine", "sqlite", "--scenario", "reorg", "--profile", "smoke", "--scale", "0.002")
    assert p.returncode == 0, p.stderr[-2000:]
    state_dir = p.stdout.strip().splitlines()[-1]
    manifest = json.loads((ROOT / state_dir / "manifest.json").read_text())
    assert manifest["method"] == "bulk" and manifest["rows"] == sum(manifest["row_counts"].values()) > 0
    assert manifest["build_only_settings"]["journal_mode"] == "OFF"
    listed = json.loads(harness("states", "--json").stdout)
    assert any(s["path"] == state_dir and s["complete"] for s in listed["states"])

    runs = []
    for _ in range(2):
        rc, r, _, err = run_scenario(tmp_path, "--scenario", "reorg", "--profile", "smoke", "--scale", "0.002",
                                     "--duration", "3")
        assert r["integrity"]["ok"] is True, err[-2000:]
        runs.append(r["load"])
    for load in runs:
        assert load["method"] == "state" and load["state"] == manifest["id"]
        assert load["clone_s"] >= 0 and load["clone_bytes"] > 0 and load["age_blocks"] == 50
        assert load["digest"] != manifest["model_digest"], "ageing changed the database after the clone"
    assert runs[0]["state_built_now"] is False, "make state built it: the runs reuse it"
    assert runs[0]["digest"] == runs[1]["digest"], "every cell starts from the same database"

    rc, r, _, _ = run_scenario(tmp_path, "--scenario", "reorg", "--profile", "smoke", "--scale", "0.002",
                               "--duration", "3", "--set", "load.method=organic", "--set", "load.age_blocks=50")
    assert r["load"]["method"] == "organic" and r["load"]["digest"] == runs[0]["digest"], \
        "the row-by-row load and the cloned state, aged alike, hold the same rows"


@pytest.mark.slow
def test_a_build_says_where_its_time_went_and_a_run_with_drop_states_moves_the_state_in(tmp_path, monkeypatch):
    monkeypatch.setenv("STATES", str(tmp_path / "states"))
    p = harness("state", "--engine", "sqlite", "--scenario", "reorg", "--profile", "smoke", "--scale", "0.002")
    assert p.returncode == 0, p.stderr[-2000:]
    phases = json.loads((tmp_path / "states" / p.stdout.strip().splitlines()[-1].split("/")[-1] /
                         "manifest.json").read_text())["phases_s"]
    assert phases["rows"] == pytest.approx(phases["insert"] + phases["generate_wait"], abs=0.002)
    assert {k for k in phases if k.startswith("finish: index ")} == \
        {f"finish: index {n}" for n in registry.index_names("sqlite", "bitemporal")} and "finish: settle" in phases
    assert "[state] phases: model " in p.stderr and "waiting on the generator" in p.stderr, p.stderr[-2000:]

    rc, r, _, err = run_scenario(tmp_path, "--scenario", "reorg", "--profile", "smoke", "--scale", "0.002",
                                 "--duration", "3", "--drop-states")
    assert r["integrity"]["ok"] is True, err[-2000:]
    assert r["load"]["clone_method"] == "move" and "[state] took " in err, err[-2000:]
    assert "[run] disk: needs about" in err
    assert json.loads(harness("states", "--json").stdout)["states"] == [], "moved in, then gone"
    assert not list((tmp_path / "states").glob("*.taken")), "its remains (model, manifest) went with the run"
