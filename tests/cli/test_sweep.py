"""Sweeps, verdicts and reports as a user runs them: real SQLite and DuckDB cells, a sweep killed halfway and
resumed, a decision tree walked to its end, a report opened in headless Chromium."""
import json
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from harness.report import write_report
from harness.report.collect import collect
from harness.report.content import build
from tests.conftest import ROOT, can_use_cgroups, harness_cmd

pytestmark = pytest.mark.slow
SMOKE = ["--profile", "smoke", "--duration", "3", "--runtime", "local"]


def sweep_args(tmp_path: Path, *extra: str) -> list[str]:
    return harness_cmd() + ["sweep", "--scenario", "reorg", *SMOKE, "--results", str(tmp_path / "results"),
                            "--data", str(tmp_path / "data"), *extra]


def only_sweep_dir(tmp_path: Path) -> Path:
    dirs = [d for d in (tmp_path / "results").iterdir() if d.name.startswith("sweep-") and d.is_dir()]
    assert len(dirs) == 1, dirs
    return dirs[0]


def wait_for(cond, timeout_s: float, what: str) -> None:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if cond():
            return
        time.sleep(0.2)
    pytest.fail(f"timed out waiting for {what}")


def cell_state(path: Path) -> str | None:
    try:
        return json.loads(path.read_text()).get("state")
    except (OSError, ValueError):
        return None


def test_a_killed_sweep_resumes_with_only_the_missing_cells(tmp_path):
    args = sweep_args(tmp_path, "--engines", "sqlite", "--scales", "0.001 0.0015 0.002")
    proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        wait_for(lambda: (tmp_path / "results").exists() and any((tmp_path / "results").glob("sweep-*/reorg/*-s0.0015/progress.json")),
                 120, "the second cell's runner to start")
        root = only_sweep_dir(tmp_path)
        first, second, third = (root / "reorg" / f"sqlite-nolimit-s{s}" for s in ("0.001", "0.0015", "0.002"))
        assert cell_state(first / "cell.json") == "complete" and cell_state(second / "cell.json") == "running"
        first_result = (first / "result.json").read_bytes()
        os.killpg(proc.pid, signal.SIGKILL)        # a crash: no handler runs, the runner dies with it
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    assert not third.exists()

    again = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-3000:]
    log = again.stderr
    assert "1 already complete (resuming)" in log
    assert "reorg/sqlite-nolimit-s0.001: complete (passed), skipped" in log or \
           "reorg/sqlite-nolimit-s0.001: complete (failed), skipped" in log
    assert "reorg/sqlite-nolimit-s0.0015: partial attempt moved to" in log
    assert log.count(": running (local)") == 2, "only the partial and the missing cell ran"
    assert (first / "result.json").read_bytes() == first_result, "the complete cell was left as it was"
    set_aside = list((root / "reorg" / ".set-aside").iterdir())
    assert len(set_aside) == 1 and set_aside[0].name.startswith("sqlite-nolimit-s0.0015-partial-")

    sweep = json.loads((root / "sweep.json").read_text())
    assert sweep["cells_total"] == sweep["cells_complete"] == 3
    assert all(c["integrity_ok"] is True and c["status"] in ("passed", "failed") for c in sweep["cells"])
    assert [c["scale"] for c in sweep["cells"]] == [0.001, 0.0015, 0.002]
    assert all(v["same"] for v in sweep["starting_state"].values()) and len(sweep["starting_state"]) == 3
    assert (root / "report.html").exists() and again.stdout.strip().splitlines()[-1].endswith("report.html")


@pytest.mark.skipif(can_use_cgroups() is not None, reason=str(can_use_cgroups()))
@pytest.mark.cgroup
def test_an_oom_cell_is_recorded_and_the_sweep_goes_on(tmp_path):
    # 32 MiB (the floor) cannot hold the runner's own heap (the block feed runs outside): the kill comes at
    # start-up (measured: 2-3 s, at 16, 20, 24 and 32 MiB alike; 48 MiB in the warm-up; 64 MiB passes).
    p = subprocess.run(sweep_args(tmp_path, "--engines", "sqlite", "--mems", "32m 512m"), cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    sweep = json.loads((only_sweep_dir(tmp_path) / "sweep.json").read_text())
    oom, ok = sweep["cells"]
    assert oom["status"] == "oom" and oom["state"] == "complete" and oom["data_limit_bytes"] == 32 << 20
    assert ok["status"] in ("passed", "failed") and ok["integrity_ok"] is True
    assert sweep["status_counts"]["oom"] == 1


def write_decision(tmp_path: Path, name: str, thresholds: list[str], engines=("sqlite", "duckdb"),
                   mems=("384m",)) -> Path:
    tree = {"steps": [{"engine": e, "decision": f"use {e}"} for e in engines],
            "otherwise": "revisit the architecture",
            "criteria": [{"name": "reorg", "scenario": "reorg", "thresholds": thresholds,
                          "target": {"scale": 1.0, "measure_s": 3600}}],
            "mems": {"smoke": list(mems)}}
    path = tmp_path / f"{name}.yaml"
    path.write_text(json.dumps(tree))
    return path


def run_verdict(tmp_path: Path, decision: Path, *extra: str) -> tuple[subprocess.CompletedProcess, dict]:
    p = subprocess.run(harness_cmd() + ["verdict", "--decision", str(decision), *SMOKE, *extra,
                                        "--results", str(tmp_path / decision.stem), "--data", str(tmp_path / "data")],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    found = list((tmp_path / decision.stem).glob("verdict-*/verdict.json"))
    assert found, p.stderr[-3000:]
    return p, json.loads(found[0].read_text())


@pytest.mark.skipif(can_use_cgroups() is not None, reason=str(can_use_cgroups()))
@pytest.mark.cgroup
def test_verdict_stops_at_the_first_engine_that_passes(tmp_path):
    p, v = run_verdict(tmp_path, write_decision(tmp_path, "lenient", ["p99(commit_ms) < 60000"]))
    assert p.returncode == 0, p.stderr[-3000:]
    assert v["verdict"] == {"engine": "sqlite", "decision": "at 384m (≈ 375.0GiB at 1x): use sqlite",
                            "path": ["sqlite: passed"], "note": None}
    runs = v["matrix"][0]["runs"]        # a close call's k of n, where the smoke phase's few blocks made it one
    (a,) = v["answers"]
    assert {k: a[k] for k in ("mem", "at_reference", "status", "engine", "decision", "why", "tuned_with",
                              "trade_offs", "design", "leaf", "unstable", "runs", "headroom", "fragile")} == \
        {"mem": "384m", "at_reference": "≈ 375.0GiB at 1x", "status": "answered", "engine": "sqlite",
         "decision": "use sqlite", "why": None, "tuned_with": None, "trade_offs": [], "design": None, "leaf": None,
         "unstable": [], "runs": runs, "headroom": None, "fragile": False}
    # the typed answer (verdict v9): its kind, where it was measured, when a block is durable and queryable (an engine
    # in place: at its commit), the figure nearest its line
    assert a["kind"] == "engine" and a["measured_at"] == "384m" and a["capacity"] is None
    assert a["durable_p99_ms"] == a["queryable_p99_ms"] and a["durable_p99_ms"] > 0
    assert a["binding"].startswith(("p99_5x: ", "reorg: ", "crash: "))
    assert runs in ([], ["reorg: passed 2 of 2"])
    assert [(c["engine"], c["mem"], c["outcome"]) for c in v["matrix"]] == [("sqlite", "384m", "pass"),
                                                                           ("duckdb", "384m", "not run")]
    assert [s["engine"] for s in v["steps"]] == ["sqlite"]
    cell = v["steps"][0]["cells"][0]
    assert cell["data_limit_bytes"] == 384 << 20 and cell["thresholds"][0]["value"] < 60000
    assert not list((tmp_path / "lenient").glob("verdict-*/reorg/duckdb-*")), "the walk ran no more than it needed"
    assert v["caveats"] and "scale 0.001" in v["caveats"][0]
    html = Path(p.stdout.strip().splitlines()[-1])
    assert html.name == "report.html" and html.exists()
    assert "Caveat" in (html.parent / "report.md").read_text().splitlines()[0]


@pytest.mark.skipif(can_use_cgroups() is not None, reason=str(can_use_cgroups()))
@pytest.mark.cgroup
def test_verdict_walks_every_engine_to_otherwise_largest_mem_first(tmp_path):
    """Memory first: each engine runs at the largest MEM, fails there, and the smaller MEM is implied, not
    run; every MEM's answer is the tree's otherwise, each failed cell has its diagnosis. ALL_CELLS=1 on the
    same verdict runs the implied cells, reusing the ones already complete. Early abort is the default."""
    decision = write_decision(tmp_path, "strict", ["max(commit_ms) < 0.01"], mems=("384m", "448m"))
    p, v = run_verdict(tmp_path, decision)
    assert p.returncode == 1, p.stderr[-3000:]
    assert v["verdict"]["engine"] is None
    assert re.fullmatch(r"at 448m \(≈ [^)]+\): revisit the architecture; at 384m \(≈ [^)]+\): revisit the architecture",
                        v["verdict"]["decision"]), v["verdict"]["decision"]
    assert v["verdict"]["path"] == ["sqlite: failed", "duckdb: failed"]
    assert v["mems"] == ["448m", "384m"] and v["cells_implied"] == 2
    assert [(c["engine"], c["mem"], c["outcome"]) for c in v["matrix"]] == [
        ("sqlite", "448m", "fail"), ("sqlite", "384m", "implied"), ("duckdb", "448m", "fail"), ("duckdb", "384m", "implied")]
    for step in v["steps"]:
        assert [c["mem"] for c in step["cells"]] == ["448m"] and step["cells_unrun"] == 1
        cell = step["cells"][0]
        assert cell["early_abort"]["threshold"] == "max(commit_ms) < 0.01" and cell["early_abort"]["block"] == 1
        assert cell["thresholds"][0]["early_abort"] is True and cell["integrity_ok"] is True
        result = json.loads((Path(v["dir"]) / cell["scenario"] / cell["dir"] / "result.json").read_text())
        assert result["integrity"]["method"] == "counts", "a stopped cell counts its rows, it does not scan them"
        # every block is over 0.01 ms, so the typical block alone is too slow, never a stall: within the 50 ms
        # cadence ("slow"), or over it on a slower machine ("saturated": seen here, a p50 of 0.05 s)
        assert cell["diagnosis"].startswith(("slow: service p50 ", "saturated: service p50 ")), cell["diagnosis"]
        assert "; stopped early after 1 measured block; mean block " in cell["diagnosis"], cell["diagnosis"]
        assert " engine CPU " in cell["diagnosis"]              # where the block's time went, and the CPU
    below, above = v["implication_controls"]
    assert (below["engine"], below["mem"], below["implied_from"], below["expected"]) == ("sqlite", "384m", "448m", "fail")
    assert below["outcome"] == "failed" and below["agreed"] is True and below["cells"][0]["label"] == "control"
    assert above["note"] == "no cell was implied passed: nothing to check"
    report = (Path(p.stdout.strip().splitlines()[-1]).parent / "report.md").read_text()
    assert "1 run(s) of sqlite (criterion × limit × repeat) implied by a failure at a larger limit" in report
    assert "Implied cells rest on one assumption" in report and "| sqlite | ✘ fail | ✘ implied |" in report

    p, v = run_verdict(tmp_path, decision, "--all-cells")
    assert p.returncode == 1, p.stderr[-3000:]
    assert p.stderr.count("complete (failed), skipped") == 2, p.stderr[-3000:]
    for step in v["steps"]:
        assert [c["mem"] for c in step["cells"]] == ["448m", "384m"] and step["cells_unrun"] == 0


@pytest.mark.skipif(can_use_cgroups() is not None, reason=str(can_use_cgroups()))
@pytest.mark.cgroup
def test_a_step_that_passes_where_the_one_before_failed_gets_its_control(tmp_path):
    """sqlite is made to fail (no autocheckpoint: its WAL grows past the threshold), libsql passes; the
    control reruns sqlite at the newest SQLite with the failure's cause undone, so it passes too, and the
    verdict must say that the change alone would have done. The SQLite versions sit side by side."""
    path = write_decision(tmp_path, "control", ["max(wal_bytes) < 64MB"], engines=("sqlite", "libsql"))
    tree = json.loads(path.read_text())
    tree["steps"][0]["set"] = {"wal_autocheckpoint": 0}
    tree["steps"][1]["control"] = {"set": {"library": "apsw-newest", "wal_autocheckpoint": 1000},
                                   "why": "would a newer SQLite, checkpointing, have done?"}
    tree["compare_versions"] = {"of": "sqlite", "engines": ["sqlite", "libsql", "turso"]}
    path.write_text(json.dumps(tree))
    p, v = run_verdict(tmp_path, path)
    assert p.returncode == 0, p.stderr[-3000:]
    sqlite_step, libsql_step = v["steps"]
    assert sqlite_step["outcome"] == "failed" and sqlite_step["set"] == {"wal_autocheckpoint": 0}
    assert libsql_step["passed"] and v["verdict"]["engine"] == "libsql"
    control = libsql_step["control"]
    assert control["engine"] == "sqlite" and control["passed"], control["errors"]
    assert control["set"] == {"wal_autocheckpoint": 1000, "library": "apsw-newest"}
    assert control["cells"][0]["dir"].startswith("sqlite-apsw-newest-1000-")
    assert "also passed the same cells" in v["verdict"]["note"]
    versions = {(x["engine"], x["set"].get("library", "apsw")): x for x in v["library_versions"]}
    assert versions[("sqlite", "apsw")]["version"] == versions[("libsql", "apsw")]["version"]
    assert versions[("sqlite", "apsw-newest")]["source"] == "measured"
    assert versions[("sqlite", "apsw-newest")]["driver"].startswith("APSW 3.5")
    assert versions[("turso", "apsw")]["source"] == "installed"
    assert "the same sqlite, so this step measures libsql itself" in libsql_step["version_note"]
    report = (Path(p.stdout.strip().splitlines()[-1]).parent / "report.md").read_text()
    assert "## The sqlite each engine runs" in report and "Control (would a newer SQLite" in report
    # control cells shown by build, and by what else sets them apart (their tag: the control's settings)
    assert f"| sqlite ({versions[('sqlite', 'apsw-newest')]['library']}) [apsw-newest-1000] |" in report


@pytest.fixture(scope="module")
def small_sweep(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("sweep")
    mems = ["--mems", "256m 512m"] if can_use_cgroups() is None else []
    p = subprocess.run(sweep_args(tmp, "--engines", "sqlite", "duckdb", *mems), cwd=ROOT, capture_output=True,
                       text=True, timeout=400)
    assert p.returncode == 0, p.stderr[-3000:]
    return only_sweep_dir(tmp)


def test_report_tables_plots_and_environment(small_sweep):
    md, html = write_report(small_sweep)
    text = md.read_text()
    assert text.startswith("> **Caveat:** measured at scale 0.001")
    assert "| sqlite |" in text and "| duckdb |" in text and "Environment of every cell" in text
    plots = sorted(p.name for p in (small_sweep / "plots").iterdir())
    assert "reorg-cdf.svg" in plots and "reorg-sizes.svg" in plots and sum("-latency" in p for p in plots) >= 2
    page = html.read_text()
    assert page.count("<svg") == len(plots), "every plot is inline in the HTML"
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)|url\(\s*["']?(https?:|//)|@import""", page), \
        "nothing for a viewer to fetch"


def test_report_flags_noisy_repeats(small_sweep):
    data = collect(small_sweep)
    base = data.cells[0]
    m = base.result.metrics
    slower = m.model_copy(update={"commit_latency_ms": m.commit_latency_ms.model_copy(
        update={"p99": base.commit_ms.p99 * 1.5})})
    twin = type(base)(base.run_dir, base.result.model_copy(update={"metrics": slower}), repeat=2)
    data.cells.insert(1, twin)
    doc = build(data)
    alarms = [b.text for b in doc if b.kind == "alarm"]
    assert alarms and "noisy" in alarms[0] and base.engine in alarms[0]
    table = next(b for b in doc if b.kind == "table")
    assert any("NOISY" in str(cell) for row in table.rows for cell in row)


def test_a_sweeps_repeats_give_the_spread_of_service_p50_and_p99(small_sweep, tmp_path, capsys):
    """Issue 56's noise sweep: over a cell's repeats, the min, median and max of its service p50 and p99 and
    their spread, printed and in spread.json. Two more repeats of a real cell, their figures set to known
    values (x0.8 and x1.5 of the first's)."""
    from harness.results import SweepFile
    from harness.walks.sweep import _print_spread
    root = tmp_path / "sweep"
    shutil.copytree(small_sweep, root)
    cells = [c for c in SweepFile.model_validate_json((root / "sweep.json").read_text()).cells
             if c.engine == "sqlite" and c.status in ("passed", "failed")][:1]
    first = json.loads((root / cells[0].scenario / cells[0].dir / "result.json").read_text())
    p50, p99 = first["metrics"]["service_time_ms"]["p50"], first["metrics"]["commit_latency_ms"]["p99"]
    for repeat, factor in ((2, 0.8), (3, 1.5)):
        r = json.loads(json.dumps(first))
        r["metrics"]["service_time_ms"]["p50"] = p50 * factor
        r["metrics"]["commit_latency_ms"]["p99"] = p99 * factor
        d = root / cells[0].scenario / f"{cells[0].dir}-r{repeat}"
        d.mkdir()
        (d / "result.json").write_text(json.dumps(r))
        cells.append(cells[0].model_copy(update={"repeat": repeat, "dir": d.name}))
    cells.append(cells[0].model_copy(update={"repeat": 4, "dir": "never-ran", "status": "error"}))
    [(key, got)] = _print_spread(root, cells).items()
    assert got["runs"] == 4 and got["measured"] == 3
    s = got["service_p50_ms"]
    assert (s["min"], s["median"], s["max"]) == (p50 * 0.8, p50, p50 * 1.5)
    assert s["spread"] == round(0.7, 4) and got["commit_p99_ms"]["spread"] == round(0.7, 4)
    assert f"{key}: 3 of 4 runs measured; service p50 {p50 * 0.8:,.0f} / {p50:,.0f} / {p50 * 1.5:,.0f} ms (70%)" \
        in capsys.readouterr().err


def test_report_renders_in_headless_chromium(small_sweep):
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("Debian's chromium is not installed (make install installs it)")
    from harness.report.publish import chromium_page
    _, html = write_report(small_sweep)
    errors, requests = [], []
    with chromium_page(1200) as page:
        page.on("console", lambda m: errors.append(f"console.{m.type}: {m.text}") if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
        page.on("requestfailed", lambda r: errors.append(f"requestfailed: {r.url}"))
        page.on("request", lambda r: requests.append(r.url))
        page.goto(html.as_uri(), wait_until="load")
        sizes = page.evaluate("() => [...document.querySelectorAll('figure.plot svg')]"
                              ".map(s => { const r = s.getBoundingClientRect(); return [r.width, r.height]; })")
        shot = ROOT / "build" / "screenshots" / "report.png"
        shot.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(shot), full_page=True)
    assert errors == []
    assert requests == [html.as_uri()], "the report loads nothing but itself"
    assert len(sizes) == len(list((small_sweep / "plots").iterdir())) >= 4
    assert all(w > 300 and h > 150 for w, h in sizes), sizes
    assert shot.stat().st_size > 50_000


@pytest.mark.skipif(can_use_cgroups() is not None, reason=str(can_use_cgroups()))
@pytest.mark.cgroup
def test_a_crash_criterion_is_walked_like_any_other(tmp_path):
    """A decision step may require no acknowledged block lost on a kill and a recovery bound."""
    path = write_decision(tmp_path, "durable", ["count(lost_acked_blocks) == 0", "max(recovery_ms) < 30s"],
                          engines=("sqlite",))
    tree = json.loads(path.read_text())
    tree["criteria"] = [{**tree["criteria"][0], "name": "crash", "scenario": "crash", "target": {"scale": 1.0}}]
    path.write_text(json.dumps(tree))
    p, v = run_verdict(tmp_path, path)
    assert p.returncode == 0 and v["verdict"]["engine"] == "sqlite", p.stderr[-3000:]
    cell = v["steps"][0]["cells"][0]
    assert cell["scenario"] == "crash" and [t["passed"] for t in cell["thresholds"]] == [True, True]
    assert v["caveats"] and "crash ran at scale 0.001; the criterion asks for scale 1" in " ".join(v["caveats"])
    md = (Path(p.stdout.strip().splitlines()[-1]).parent / "report.md").read_text()
    assert "crash durability and recovery" in md and "Kills of sqlite" in md
