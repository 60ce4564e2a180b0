"""`make publish`: a real verdict, walked to its end at the smoke profile, copied under docs/results/ as a
newcomer reads it; an unfinished walk refused."""
import json
import os
import shutil
import subprocess

import pytest

from tests.cli.test_sweep import run_verdict, write_decision
from tests.conftest import ROOT, can_use_cgroups, harness_cmd

pytestmark = pytest.mark.slow


def env_of(run) -> dict:
    return json.loads(next(run.glob("reorg/*/result.json")).read_text())["environment"]


def publish(run, to, *extra) -> subprocess.CompletedProcess:
    return subprocess.run(harness_cmd() + ["publish", str(run), "--to", str(to), *extra], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.skipif(can_use_cgroups() is not None, reason=str(can_use_cgroups()))
@pytest.mark.cgroup
def test_a_finished_verdict_is_published_with_its_machine_date_and_commit(tmp_path):
    p, v = run_verdict(tmp_path, write_decision(tmp_path, "lenient", ["p99(commit_ms) < 60000"], engines=("sqlite",)))
    assert p.returncode == 0, p.stderr[-3000:]
    run = tmp_path / "lenient" / next((tmp_path / "lenient").glob("verdict-*")).name
    # relative, as `make publish RUN=results/verdict-...` gives it (its screenshot once needed an absolute path)
    out = publish(os.path.relpath(run, ROOT), tmp_path / "docs", "--name", "smoke-today")
    assert out.returncode == 0, out.stderr
    dest = tmp_path / "docs" / "smoke-today"
    assert out.stdout.strip() == str(dest)
    published = json.loads((dest / "verdict.json").read_text())
    assert published["answers"] == v["answers"] and published["dir"] == "."
    for rec in v["cells"]:
        assert (dest / "cells" / rec["scenario"] / rec["dir"] / "result.json.gz").is_file(), rec["dir"]
    assert (dest / "decision.yaml").read_text() == (tmp_path / "lenient.yaml").read_text()
    assert (dest / "commit").read_text().strip() == env_of(run)["git_commit"]
    import gzip
    texts = [f.read_text() for f in dest.rglob("*.json")] + [gzip.decompress(f.read_bytes()).decode()
                                                             for f in dest.rglob("*.gz")]
    assert not any(str(run.resolve()) in t or str(ROOT) in t or str(tmp_path / "data") in t for t in texts), \
        "no path of the machine that ran it"
    md = (dest / "report.md").read_text()
    assert md == (run / "report.md").read_text()
    plots = [line.split("](", 1)[1].split(")")[0] for line in md.splitlines() if "](plots/" in line]
    assert plots and all((dest / p).is_file() for p in plots), "every plot the report shows is there"
    readme = (dest / "README.md").read_text()
    env = env_of(run)
    assert env["git_commit"] in readme and env["cpu_model"] in readme and v["updated_utc"][:10] in readme
    assert "| 384m (≈ 375.0GiB at 1x) | use sqlite |" in readme, readme
    if shutil.which("chromium"):
        assert (dest / "report.png").stat().st_size > 20_000 and "report.png" in readme


def test_an_unfinished_verdict_is_refused_naming_the_file(tmp_path):
    run = tmp_path / "verdict-smoke-x"
    run.mkdir()
    (run / "verdict.json").write_text(json.dumps({
        "decision_file": "d.yaml", "profile": "smoke", "mems": ["384m"], "repeats": 1, "dir": str(run),
        "criteria": [], "steps": []}))
    out = publish(run, tmp_path / "docs")
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip() == (f"error: {run / 'verdict.json'}: the walk has not ended (no 'verdict' yet): "
                                  "run `make verdict` to its end first")
    assert not (tmp_path / "docs").exists(), "nothing half-published"
    out = publish(tmp_path / "nowhere", tmp_path / "docs")
    assert out.returncode == 2 and "nowhere/verdict.json: no such file" in out.stderr


@pytest.mark.parametrize("extra, named", [([], None), (["AS=today"], "--name today")])
def test_make_publish_names_the_folder_only_when_as_is_given(extra, named):
    # make's built-in AS is the assembler ("as"): a bare `make publish` once published under docs/results/as/
    out = subprocess.run(["make", "-n", "publish", "RUN=results/verdict-x", *extra], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    line = next(ln for ln in out.stdout.splitlines() if " publish results/verdict-x" in ln)
    assert ("--name" in line) == (named is not None) and (named is None or named in line), line


def test_a_run_is_published_with_its_files_and_read_back_by_compare_window(tmp_path):
    """One cell (the 5x hour is one): its README names the machine, the commit and every threshold beside its
    value; its per-block files, gzipped, read by `compare --window` as the run's own."""
    import gzip
    from tests.cli.test_cli_run import run_scenario
    from harness.compare_window import compare_windows
    from harness.windows import parse_window
    rc, r, run_dir, err = run_scenario(tmp_path, "--scenario", "p99_5x", "--profile", "smoke", "--set",
                                       "block_log.group_blocks=1")
    assert rc in (0, 1), err[-2000:]
    # behind a block log a reader sees a block at its apply: after its acknowledgement, from the same due time
    bl, ack = r["metrics"]["block_log"], r["metrics"]["commit_latency_ms"]
    assert bl["queryable_ms"]["count"] == bl["acknowledged_blocks"] > 0 and bl["lag_at_start_blocks"] is not None
    assert bl["queryable_ms"]["p99"] >= ack["p99"] * 0.99 and bl["queryable_ms"]["p50"] >= ack["p50"] * 0.99
    assert subprocess.run(harness_cmd() + ["report", str(run_dir)], cwd=ROOT, capture_output=True,
                          timeout=120).returncode == 0
    out = publish(run_dir, tmp_path / "docs", "--name", "hour")
    assert out.returncode == 0, out.stderr
    dest = tmp_path / "docs" / "hour" / "runs" / r["run_id"]
    assert out.stdout.strip() == str(dest)
    for f in ("result.json.gz", "blocks.csv.gz", "design.csv.gz", "timeseries.csv.gz", "commit.hlog.gz",
              "plan.yaml", "report.md"):
        assert (dest / f).is_file(), f
    # every latency as recorded: the published interval log reads back interval for interval
    from harness.results.hlog import interval_histograms
    kept = [(s, e, h.get_total_count(), h.get_value_at_percentile(99))
            for s, e, h in interval_histograms(run_dir / "commit.hlog")]
    assert kept and kept == [(s, e, h.get_total_count(), h.get_value_at_percentile(99))
                             for s, e, h in interval_histograms(dest / "commit.hlog")]
    assert str(tmp_path) not in gzip.decompress((dest / "result.json.gz").read_bytes()).decode(), "no machine paths"
    readme = (dest / "README.md").read_text()
    assert r["environment"]["git_commit"] in readme and r["environment"]["cpu_model"] in readme
    for t in r["thresholds"]:
        assert f"| `{t['expr']}` |" in readme, t["expr"]
    assert "behind a block log (1 block(s) a transaction)" in readme and "cores of CPU outside the cell" in readme
    same = compare_windows(run_dir, dest, parse_window("0:"), parse_window("0:"))
    assert same["figures"] and all(f["ratio"] in (None, 1.0) for f in same["figures"]), same["figures"]
