"""`make reads` as a user runs it (the reference's read benchmark, reads alone), and a checked read that returns a
wrong row, as a real engine returns it."""
import json
import sqlite3
import subprocess
from pathlib import Path

import pytest

from harness.scenario.plan import resolve_plan
from harness.walks.reads import CONNECTIONS, MIXES, protocol, searches
from harness.walks.sweep import CellOptions
from tests.cli.test_cli_run import run_scenario
from tests.conftest import ROOT, harness_cmd


def harness(*args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run(harness_cmd() + list(args), cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def test_the_reads_protocol_is_the_references_for_every_mix_and_connections():
    """Its test matrix (mixes A, B and C, and the DC's whose answers are checked; 1 and 10 connections; offered
    100 -> 10K QPS) and its protocol (1,000 queries of warm-up, 10,000 measured, 5 s cool-down), judged on p99 <
    100 ms and 95% of the rate offered; the profile sets the size (full: 5x, the DC mix's 11 data centres)."""
    todo = searches(CellOptions(profile="full"), MIXES, CONNECTIONS)
    assert [(m, n) for m, n, _ in todo] == [(m, n) for m in ("a", "b", "c", "dc") for n in (1, 10)]
    for mix, n, o in todo:
        assert o.overrides == (f"readers.threads={n}",)
        p = protocol("sqlite", o, mix, None)
        assert (p["warmup_queries"], p["measure_queries"], p["cooldown_s"]) == (1000, 10000, 5)
        assert min(p["steps_qps"]) == 100 and p["max_qps"] == 10000
        assert {"p99(read_ms) < 100ms", "rate(reads) >= 95%"} <= set(p["criteria"]), p["criteria"]
        assert p["scale"] == (5.0 if mix != "dc" else 0.0)
    dc = resolve_plan("read_mix_dc", "sqlite", profile="full")
    assert dc.checked_reads and not dc.workload.writes and dc.workload.dc.data_centres == 11


@pytest.mark.slow
def test_make_reads_offers_and_measures_the_protocols_counts_at_every_step(tmp_path, monkeypatch):
    """Each step measures the queries the protocol names, at the rate offered: those due in its window, every one
    counted (asked, empty or never started), none of the warm-up's; reads.json has a row per mix and connections,
    the knee its own search's, and the answers of a mix with no model answer said "not checkable". Each step
    reads its state's own files, linked, not copied, and leaves them as they were."""
    from harness.state.clone import fingerprint
    monkeypatch.setenv("STATES", str(tmp_path / "states"))
    p = harness("reads", "--engine", "sqlite", "--profile", "smoke", "--runtime", "local", "--mixes", "a",
                "--connections", "1 2", "--results", str(tmp_path / "results"), "--data", str(tmp_path / "data"),
                "--set", "ceiling.steps_qps=[400]", "--set", "ceiling.max_qps=800")
    assert p.returncode == 0, p.stderr[-3000:]
    out = json.loads(Path(p.stdout.strip().splitlines()[-1]).read_text())
    assert out["complete"] and [(r["mix"], r["connections"]) for r in out["rows"]] == [("a", 1), ("a", 2)]
    assert out["protocol"]["a"]["measure_queries"] == 1000 and out["command"].startswith("make reads ENGINE=sqlite")
    # the walk's settings, which a published table of several sittings' searches shares (success/merge.py)
    assert out["overrides"] == ["ceiling.steps_qps=[400]", "ceiling.max_qps=800"], out["overrides"]
    for row in out["rows"]:
        search = json.loads((tmp_path / "results" / row["search"] / "ceiling.json").read_text())
        assert row["knee_read_qps"] == (search["knee"] or {}).get("knee_read_qps") and row["answers"] == "not checkable"
        for step in search["steps"]:
            r = json.loads((tmp_path / "results" / row["search"] / step["cell"] / "result.json").read_text())
            m = r["metrics"]
            asked = m["reads"] + (m["reads_empty"] or 0) + (m["reads_late"] or 0)
            assert abs(asked - 1000) <= row["connections"], (step["offered_qps"], m)
            assert r["plan"]["phases"]["measure_s"] == pytest.approx(1000 / step["offered_qps"]), r["plan"]["phases"]
            assert r["load"]["clone_method"] == "link" and r["status"] != "error", (r["load"], r.get("error"))
            linked = json.loads((tmp_path / "results" / row["search"] / step["cell"] / "state.json").read_text())
            assert fingerprint(Path(linked["state_dir"]) / "data") == linked["linked_files"]


@pytest.mark.slow
def test_a_checked_read_that_returns_a_wrong_row_fails_its_cell(tmp_path, monkeypatch):
    """The Data Center's reads (reads alone, `make reads`' checked mix) are checked against the model at the block
    each saw: a state whose nodes' and workloads' status an outside hand changed (the row counts untouched, so
    only the reads can tell) makes the engine answer wrong rows, and the cell is an error naming them."""
    monkeypatch.setenv("STATES", str(tmp_path / "states"))
    common = ("--engine", "sqlite", "--scenario", "read_mix_dc", "--profile", "smoke")
    p = harness("state", *common)
    assert p.returncode == 0, p.stderr[-3000:]
    db = ROOT / p.stdout.strip().splitlines()[-1] / "data" / "arkiv.db"
    con = sqlite3.connect(db)        # closed, so the change is in the file itself, its WAL checkpointed away
    with con:
        changed = con.execute("UPDATE string_attributes SET value = 'gone' WHERE key = 'status'").rowcount
    con.close()
    assert changed > 0
    rc, r, _, err = run_scenario(tmp_path, *common[2:], "--set", "integrity=counts")
    wrong = {k: v["wrong"] for k, v in r["metrics"]["reads_by_kind"].items() if v.get("wrong")}
    assert r["integrity"]["ok"] is True, "the row counts are the model's: only the reads can tell"
    assert wrong and r["status"] == "error" and "read answers differ from the model" in r["error"], err[-3000:]
    assert rc != 0


@pytest.mark.slow
def test_a_state_changed_under_a_linked_cell_is_removed_and_the_cell_is_an_error(tmp_path, monkeypatch):
    """A reads-alone cell reads its state's files linked, not copied; if anything writes them (here a WAL left
    beside the state, which SQLite checkpoints into the database when the cell opens it), the state is no longer
    what was built: it is removed, and the cell says so instead of passing."""
    import shutil
    monkeypatch.setenv("STATES", str(tmp_path / "states"))
    common = ("--engine", "sqlite", "--scenario", "read_mix_a", "--profile", "smoke")
    p = harness("state", *common)
    assert p.returncode == 0, p.stderr[-3000:]
    state = ROOT / p.stdout.strip().splitlines()[-1]
    db, kept = state / "data" / "arkiv.db", tmp_path / "kept"
    kept.mkdir()
    con = sqlite3.connect(db)
    con.execute("PRAGMA journal_mode = WAL")
    con.execute("PRAGMA wal_autocheckpoint = 0")
    with con:
        con.execute("UPDATE payloads SET payload = payload")
    for f in (db, db.with_name("arkiv.db-wal")):        # the database and its WAL, before the close checkpoints
        shutil.copy2(f, kept / f.name)
    con.close()
    for f in kept.iterdir():
        shutil.copy2(f, state / "data" / f.name)
    rc, r, _, err = run_scenario(tmp_path, *common[2:])
    assert r["load"]["clone_method"] == "link"
    assert r["status"] == "error" and "files changed under a cell that only reads them" in r["error"], err[-3000:]
    assert not state.exists(), "the changed state is gone: the next cell builds it again"


def _kinds_result(path: Path, checked: int | None, status: str = "failed", boot_id: str | None = None) -> None:
    from harness.results import RunResult, write_json
    kind = {"count": 0, "qps": 0.0, "p50": None, "p95": None, "p99": None, "max": None, "mean_rows": None, "empty": 0}
    metrics = {"reads_by_kind": {"candidates": {**kind, "checked": checked, "wrong": 0}}} \
        if checked is not None else {"partial": True}      # killed: what it sampled, no read
    path.mkdir(parents=True)
    write_json(path / "result.json", RunResult.model_validate({
        "version": 18, "run_id": "r", "engine": "sqlite", "scenario": "read_mix_dc", "profile": "ratio",
        "runtime": "local", "status": status, "scale": 0.0, "engine_version": "x", "plan": {},
        "environment": {"boot_id": boot_id} if boot_id else {},
        "metrics": metrics}))


def test_a_mix_where_not_even_the_lowest_rate_held_names_what_failed_there_and_its_checked_answers(tmp_path):
    """12-06's DC rows, 1x under 1638m: at 100 QPS on one connection 225 answers were checked (0 wrong) and the p99
    was 102 s, on ten the step was OOM-killed; reads.json said "not checkable" and named no bound for either."""
    from harness.walks.reads import row_of
    failed_on = ["rate(reads) >= 95% (measured 0)", "p99(read_ms) < 100ms (measured 101974)"]
    c = {"scale": 0.0, "knee": None, "started_utc": "2026-12-06T19:00:00Z", "sentence": "none held",
         "steps": [{"offered_qps": 100.0, "passed": False, "failed_on": failed_on, "cell": "read_mix_dc/q100"}]}
    _kinds_result(tmp_path / "one" / "read_mix_dc" / "q100", checked=225, boot_id="b-12-06")
    row = row_of("dc", 1, c, tmp_path / "one")
    assert row["knee_read_qps"] is None and row["bounded_at_qps"] == 100.0 and row["bounded_by"] == failed_on
    assert row["answers"] == "225/225 right"
    assert row["boot_id"] == "b-12-06"     # a table of several sittings tells them apart by their boot
    oom = ["the run: oom (OOM-killed at the 1717567488-byte memory limit)"]
    c["steps"][0]["failed_on"] = oom
    _kinds_result(tmp_path / "ten" / "read_mix_dc" / "q100", checked=None, status="oom")
    row = row_of("dc", 10, c, tmp_path / "ten")
    assert row["bounded_by"] == oom and row["answers"] == "none measured"
