"""make ceiling as a user runs it: steps, the knee's repeat, ceiling.json and its report."""
import json
import subprocess
from pathlib import Path

import pytest

from harness.walks.ceiling import ceiling_bracket, expected_span, knee_figures, sentence, step_seconds
from tests.conftest import ROOT, harness_cmd


def test_the_search_steps_then_doubles_then_bisects():
    s = ceiling_bracket([100, 1000, 5000], max_qps=100_000, resolution=0.1)
    tried = []
    capacity = 7000
    while (q := s.next()) is not None:
        tried.append(q)
        s.record(q, q <= capacity)
    assert tried[:4] == [100, 1000, 5000, 10000]           # fixed steps, then doubling past the last
    lo, hi = s.bounds()
    assert lo <= capacity < hi and hi / lo <= 1.1           # bisected down to the resolution


def test_the_search_stops_at_the_first_fixed_step_that_fails_and_at_max_qps():
    s = ceiling_bracket([100, 1000, 5000], max_qps=100_000, resolution=0.1)
    s.record(100, True)
    s.record(1000, False)
    assert 100 < s.next() < 1000                        # 5000 is not tried above a failure
    s = ceiling_bracket([100], max_qps=300, resolution=0.1)
    s.record(100, True)
    s.record(200, True)
    assert s.next() == 300                               # doubling stops at max_qps, which is tried
    s.record(300, True)
    assert s.next() is None
    s = ceiling_bracket([100], max_qps=300, resolution=0.1)
    s.record(100, False)
    assert s.next() is None and s.bounds() == (None, 100)


def _step(qps, passed, repeat=1, failed_on=()):
    return {"offered_qps": qps, "repeat": repeat, "passed": passed, "achieved_qps": qps * 0.99,
            "read_p99_ms": 12.0, "write_p99_ms": 300.0, "write_rows_per_s": 6000.0, "failed_on": list(failed_on)}


def test_the_search_says_first_the_fewest_and_most_steps_it_can_take_and_their_minutes():
    from types import SimpleNamespace
    from harness.scenario.spec import Ceiling, Phases
    protocol = Phases(warmup_s=0, measure_s=1, warmup_queries=1000, measure_queries=10_000, cooldown_s=5)
    assert step_seconds(protocol, 100) == 115.0                     # the reference's counts at 100 QPS
    timed = Phases(warmup_s=60, measure_s=120)
    probe = SimpleNamespace(ceiling=Ceiling(steps_qps=[100, 1000, 5000], max_qps=100_000, resolution=0.1),
                            phases=timed)
    said = expected_span(probe)
    # fewest: the first step fails; most: at least every fixed step, doubling to max_qps, and the knee's repeat
    n_lo, n_hi = (int(w) for w in said.split(" steps")[0].removeprefix("expect ").split(" to "))
    assert n_lo == 1 and n_hi >= 3 + 5 + 1, said
    assert f", 3 to {3 * n_hi} timed minutes" in said, said                # 3 minutes a step, each


def test_the_knee_says_what_bounded_it_or_that_it_was_not_reached():
    out = {"engine": "sqlite", "scale": 0.05, "mem": None, "converged": True}
    steps = [_step(100, True), _step(1000, True), _step(5000, False, failed_on=["p99(read_ms) < 100ms (measured 412)"]),
             _step(2236, False, failed_on=["rate(reads) >= 95% (measured 91.2)"]), _step(1495, True),
             _step(1495, True, repeat=2)]
    out["knee"] = k = knee_figures(steps, 1495)
    assert k["reached"] and k["bounded_at_qps"] == 2236 and k["bounded_by"] == ["rate(reads) >= 95% (measured 91.2)"]
    assert k["runs"] == 2 and "bounded at 2,236 QPS by rate(reads) >= 95%" in sentence(out)
    # every rate passed up to max_qps: a floor, never a converged knee
    steps = [_step(100, True), _step(200, True), _step(200, True, repeat=2)]
    out["knee"] = k = knee_figures(steps, 200)
    assert not k["reached"] and k["bounded_by"] == [] and "knee not reached, ≥ 200 reads/s" in sentence(out)
    # none held: "beside the writes" only where there were writes (12-06's reads alone said it of none)
    out |= {"knee": None, "search": {"steps_qps": [100, 1000]}}
    assert sentence(out).endswith("not even 100 QPS")
    assert sentence(out | {"writes": {"rows_per_block": 12000}}).endswith("not even 100 QPS beside the writes")


def test_an_oom_step_is_said_as_one_not_as_lost_data():
    """The 5,000 QPS step of 2026-12-02 was OOM-killed mid-warm-up; ceiling.json said it failed on 'integrity'."""
    from types import SimpleNamespace
    from harness.walks.ceiling import _failed_on
    oom = SimpleNamespace(thresholds=[], integrity=SimpleNamespace(ok=None), error="OOM-killed at the 1 GiB limit")
    assert _failed_on(oom, "oom") == ["the run: oom (OOM-killed at the 1 GiB limit)"]
    lost = SimpleNamespace(thresholds=[SimpleNamespace(expr="p99(read_ms) < 100ms", value=105.6, passed=False)],
                           integrity=SimpleNamespace(ok=False), error=None)
    assert _failed_on(lost, "failed") == ["p99(read_ms) < 100ms (measured 105.6)", "integrity"]


@pytest.mark.serial
@pytest.mark.slow
def test_ceiling_smoke_finds_and_confirms_its_knee(tmp_path):
    # the read bound loosened: on a 2-core machine a smoke step's read p99 can pass the scenario's 100 ms
    sets = ["ceiling.steps_qps=[200]", "ceiling.max_qps=400", "phases.warmup_s=1", "phases.measure_s=3",
            "ceiling.thresholds=[knee_read_qps >= 400]",
            "thresholds=[p99(commit_ms) < 2s, rate(reads) >= 95%, p99(read_ms) < 10s]"]
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
    assert c["knee"]["apply_busy_share"] is None, "no block log in front of the engine: no applier"
    assert c["threshold_results"] == [{"expr": "knee_read_qps >= 400", "value": 400, "passed": True}]
    assert all(s["failed_on"] == [] and s["reads_late"] is not None for s in c["steps"])
    assert not c["knee"]["reached"]          # max_qps passed: a floor, said so
    assert "knee not reached, ≥ 400 reads/s" in c["sentence"] and "rows/s written" in c["sentence"]
    assert "Reads at the knee, by query kind" in Path(html).read_text()
    # run again: every step read back, none run, and the search's times stay its steps' own (12-06's resume
    # rewrote them as the seconds it took)
    again = subprocess.run(p.args, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0 and "running (local)" not in again.stderr, again.stderr[-3000:]
    c2 = json.loads(Path(ceiling_json).read_text())
    assert (c2["started_utc"], c2["finished_utc"]) == (c["started_utc"], c["finished_utc"])
    assert c["started_utc"] < c["finished_utc"]
    # published as a reader gets it: the knee's sentence, every step in the README, every step's result gzipped
    root, docs = Path(ceiling_json).parent, tmp_path / "docs"
    out = subprocess.run(harness_cmd() + ["publish", str(root), "--to", str(docs), "--name", "day/ceiling"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    dest = docs / "day" / "ceiling"
    assert out.stdout.strip() == str(dest)
    readme = (dest / "README.md").read_text()
    assert c["sentence"] in readme and "| 3 (repeat) | 400 |" in readme and "not checkable" in readme
    assert "2 readers" in readme
    assert len(list((dest / "steps").glob("*/*/result.json.gz"))) == 3 and (dest / "report.md").is_file()
    assert str(tmp_path) not in (dest / "ceiling.json").read_text(), "no machine paths"


def test_an_unfinished_ceiling_is_refused_naming_its_file(tmp_path):
    from harness.errors import ConfigError
    from harness.report.publish_ceiling import publish_ceiling
    (tmp_path / "ceiling.json").write_text(json.dumps({"complete": False, "steps": []}))
    with pytest.raises(ConfigError, match=r"ceiling.json: complete is false"):
        publish_ceiling(tmp_path, tmp_path / "docs", None)
