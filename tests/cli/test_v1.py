"""make v1 as a user runs it: the write rates stepped, a read ceiling at each, the frontier and go/no-go."""
import json
import subprocess
from pathlib import Path

import pytest
import yaml

from harness.errors import ConfigError
from harness.scenario.v1 import V1_FILE, load_v1
from harness.walks.v1 import answer, bigger_machine
from tests.conftest import ROOT, harness_cmd


def _point(w, r, reached=True, bounded_by=()):
    return {"write_rows_per_s": w, "read_qps": r, "reached": reached, "bounded_by": list(bounded_by)}


def test_go_needs_a_write_rate_at_least_v1s_carrying_v1s_reads():
    v1 = load_v1()                                     # go: 10,000 rows/s with 1,000 reads/s
    assert answer([_point(10_000, 2500), _point(20_000, 1000), _point(30_000, None)], v1)["go"]
    said = answer([_point(10_000, 2500), _point(20_000, 1000)], v1)["sentence"]
    assert said.startswith("go: 20,000 rows/s written with 1,000 checked DC reads/s")
    no = answer([_point(10_000, 500), _point(20_000, None)], v1)
    assert not no["go"] and "at most 500 reads/s beside 10,000 rows/s" in no["sentence"]
    none = answer([_point(10_000, None, bounded_by=["p99(read_ms) < 100ms (measured 412)"])], v1)
    assert not none["go"] and "bounded by p99(read_ms) < 100ms" in none["sentence"]


def test_what_a_bigger_machine_would_change_follows_the_readers_cpu_at_the_knee():
    bound = [{**_point(10_000, 2500), "readers_cpu_share": 0.93}, {**_point(20_000, 1000), "readers_cpu_share": 0.4}]
    assert "used 93% of every core: a machine with more cores would carry more reads" in bigger_machine(bound)
    engine = [{**_point(10_000, 2500), "readers_cpu_share": 0.31}, {**_point(20_000, None), "readers_cpu_share": 0.99}]
    assert "at most 31% of the cores: the engine, not the readers' CPU, set it" in bigger_machine(engine)
    assert bigger_machine([_point(10_000, 2500)]) == ""
    assert "the readers are the server's clients" in bigger_machine(bound, server=True)
    none_passed = [{**_point(10_000, None), "readers_cpu_share": 0.62}]
    assert bigger_machine(none_passed) == ("; no read rate passed: at the lowest tried the readers used 62% of "
                                           "every core, beside the writer")


def test_a_v1_file_is_validated_with_the_file_and_field(tmp_path):
    raw = yaml.safe_load(V1_FILE.read_text())
    bad = tmp_path / "v1.yaml"
    bad.write_text(yaml.safe_dump({**raw, "write_rows_per_s": [20000, 10000]}))
    with pytest.raises(ConfigError, match=r"v1.yaml.*write_rows_per_s.*rates go up"):
        load_v1(bad)
    bad.write_text(yaml.safe_dump({**raw, "scenario": "p99_5x"}))
    with pytest.raises(ConfigError, match=r"scenario: p99_5x must have the Data Center model"):
        load_v1(bad)


@pytest.mark.serial
@pytest.mark.slow
def test_v1_smoke_walks_the_write_rates_and_writes_the_frontier(tmp_path):
    """Rates this machine carries at smoke: 1,500 then 3,000 rows/s, reads from 50 QPS up to 100. Each rate
    passes its top read rate, so the frontier holds two points, neither a knee, and the answer is go."""
    raw = yaml.safe_load(V1_FILE.read_text())
    f = tmp_path / "v1.yaml"
    f.write_text(yaml.safe_dump({**raw, "write_rows_per_s": [1500, 3000], "read_qps": [50], "max_read_qps": 100,
                                 "criteria": ["p99(commit_ms) < 5s", "rate(reads) >= 90%", "p99(read_ms) < 5s"],
                                 "go": {"write_rows_per_s": 1500, "read_qps": 50}}))
    p = subprocess.run(harness_cmd() + ["v1", "--engine", "sqlite", "--file", str(f), "--profile", "smoke",
                                        "--runtime", "local", "--results", str(tmp_path / "results"),
                                        "--data", str(tmp_path / "data"), "--duration", "4"],
                       cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr[-3000:]
    v1_json, html = p.stdout.strip().splitlines()[-2:]
    v = json.loads(Path(v1_json).read_text())
    assert [x["write_rows_per_s"] for x in v["frontier"]] == [1500, 3000] and v["complete"] and v["go"]
    assert all(x["read_qps"] == 100 and x["reached"] is False for x in v["frontier"])
    assert v["sentence"].startswith("go: 3,000 rows/s written with 100 checked DC reads/s (the search's top rate")
    assert "cores" in v["measured_on"] and "Frontier" in Path(html).read_text()
    # the scheduler's mix, a reader per core, and the readers' CPU share at each knee
    assert all(0 < x["readers_cpu_share"] <= 1 for x in v["frontier"]) and "the readers used" in v["sentence"]
    # every step's reads were checked, none wrong
    cells = list(Path(v1_json).parent.glob("ceiling-*/dc_read_mix/*/result.json"))
    assert cells and all(k["wrong"] == 0 and k["checked"] > 0 for c in cells
                         for k in json.loads(c.read_text())["metrics"]["reads_by_kind"].values())
    r = json.loads(cells[0].read_text())
    assert "candidates" in r["metrics"]["reads_by_kind"] and r["plan"]["readers"]["threads_auto"] is True
    readers = r["metrics"]["harness"]["readers"]
    assert readers["cores"] == r["plan"]["readers"]["threads"] and readers["cpu_s"] > 0 and readers["wall_s"] > 0


@pytest.mark.parametrize("profile", ["quick", "ratio"])
def test_a_v1_step_loads_v1s_share_of_its_entities(profile):
    """A step's plan holds the profile's share of V1's 621K entities (one DC and mendoza's share), not the
    scenario's two DCs (the ratio profile once loaded 1.22M)."""
    from harness.scenario.plan import resolve_plan
    from harness.state.sizes import dc_seed_entities
    from harness.state.store import inputs_for
    from harness.walks.v1 import step_overrides
    from harness.workload.shapes import MENDOZA_1X_ENTITIES
    v1 = load_v1()
    share = v1.profiles[profile].share
    plan = resolve_plan(v1.scenario, "sqlite", profile=profile, overrides=step_overrides(v1, share, 10_000, 2000))
    entities = dc_seed_entities(inputs_for(plan)) + plan.load.scale * MENDOZA_1X_ENTITIES
    assert abs(entities - share * v1.entities) <= 0.01 * share * v1.entities, entities
    assert plan.workload.rows_per_block == 20_000
