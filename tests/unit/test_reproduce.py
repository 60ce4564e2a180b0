"""`make reproduce` (issue 77): a published verdict's answers measured again in another sitting. The published verdict
here is one the walk's own code wrote (harness/walks/verdict/ over fake cells); its reproduction runs through the same
code, with its cells faked the same way, so these tests are about which cells run and how they are judged. A real
reproduction of a real walk: tests/cli/test_reproduce_cli.py."""
import subprocess
import sys

import pytest

from harness.results import CellRecord, ThresholdResult, Verdict, VerdictFile, write_json
from harness.results.reproduce import LevelAgreement, ReproduceFile
from harness.scenario.decision import Sitting, load_decision
from harness.scenario.thresholds import parse_threshold
from harness.walks import reproduce as rp
from harness.walks.reproduce import judge, sittings
from harness.walks.reproduce.targets import targets
from harness.walks.sweep import CellOptions
from harness.walks.verdict import answer, headroom
from harness.walks.verdict.controls import implication_controls, with_controls
from harness.walks.verdict.leaf import run_leaf, with_leaf
from harness.walks.verdict.plan import criterion_plans
from harness.walks.verdict.roles import candidate_of
from harness.walks.verdict.walk import CANDIDATE, Walk
from tests.unit.test_verdict_walk import MEMS

BL, CHBL = "leaf-block_log", "leaf-current_history_block_log"


def _tree():
    tree = load_decision()
    ref = tree.reference.model_copy(update={"record": [Sitting(date="2026-11-28", profile="ratio",
                                                               service_p50_ms=3000, source="a test")]})
    return tree.model_copy(update={"reference": ref, "steps": [s.model_copy(update={"tune": []}) for s in tree.steps]})


def _walk(root, outcomes: dict, p99: dict) -> Walk:
    """A walk whose cells are fakes named as real ones are: (engine, tag, mem) -> 'passed' | 'failed' | 'error'
    (anything else fails), each criterion's thresholds at p99 ms (p99[(engine, tag, mem)], else 300 when it passed,
    900 when not). walk.ran lists (engine, tag, mem, label) in order."""
    tree = _tree()
    walk = Walk(tree, MEMS, criterion_plans(tree, lambda sc: 3600), CellOptions(profile="ratio"), root)
    walk.ran = []

    def engine_at(engine, settings, tag, mem, option=None, role=CANDIDATE):
        walk.ran.append((engine, tag, mem, role.label))
        status = "passed" if tag.startswith("reference") else outcomes.get((engine, tag, mem), "failed")
        if role.load != 1:          # a capacity step: passes under (engine, candidate, mem, "capacity")
            limit = outcomes.get((engine, candidate_of(tag), mem, "capacity"), 0.0)
            status = "passed" if role.load < limit else "failed"
        value = p99.get((engine, tag, mem), 300.0 if status == "passed" else 900.0)
        recs = []
        for cp in walk.criteria[:role.criteria]:
            ths = [ThresholdResult(expr=e, value=value if "commit_ms" in e else 6000.0,
                                   passed=parse_threshold(e).passes(value if "commit_ms" in e else 6000.0))
                   for e in cp.criterion.thresholds]
            recs.append(CellRecord(
                cell_id="x", scenario=cp.criterion.scenario, engine=engine, mem=mem, data_limit_bytes=None, scale=1.0,
                runtime="local", dir=f"{engine}{'-' + tag if tag else ''}-{mem}-s1", state="complete", status=status,
                label=role.label, criterion=cp.criterion.name, thresholds=ths,
                error=status if status == "error" else None))
            if status != "passed":
                break
        walk.records += recs
        return recs
    walk.engine_at = engine_at
    return walk


# every engine fails everywhere; SQLite's block log passes at 1x and carries 1.05x (under the 1.15 band); current ∪
# history behind a block log passes and carries 2x: the answer at 1g, implied above
PUBLISHED = {**{("sqlite", t, m): "passed" for m in MEMS for t in (BL, CHBL)},
             **{("sqlite", BL, m, "capacity"): 1.05 for m in MEMS},
             **{("sqlite", CHBL, m, "capacity"): 2.0 for m in MEMS},
             **{("sqlite", "implied-current_history_block_log", m): "passed" for m in MEMS}}


@pytest.fixture
def quiet_record(tmp_path, monkeypatch):
    monkeypatch.setattr(headroom, "PUBLISHED", tmp_path / "none")
    monkeypatch.setattr(headroom, "reference_figure", lambda root, rec: 2000.0)


def _published(root, outcomes=PUBLISHED, p99=None) -> VerdictFile:
    """What `make verdict` writes, from the walk's own code."""
    walk = _walk(root, outcomes, p99 or {})
    steps = walk.run()
    leaf = run_leaf(walk)
    controls = implication_controls(walk, leaf)
    headroom.reference_cell(walk, "end")
    answers = with_controls(with_leaf(answer.answers(walk.tree, MEMS, walk.matrix, lambda m: None), leaf), controls)
    return VerdictFile(decision_file="d", profile="ratio", mems=MEMS, repeats=1, dir=".", criteria=[], steps=steps,
                       matrix=walk.matrix, leaf=leaf, implication_controls=controls, cells=walk.records,
                       reference=walk.reference, answers=answers, updated_utc="2026-12-01T00:00:00Z",
                       verdict=Verdict(engine=None, decision="-", path=[]))


def _again(root, v, outcomes=PUBLISHED, p99=None):
    walk = _walk(root, outcomes, p99 or {})
    done = rp._run(walk, targets(v), v, lambda engine: None)
    return walk, done


def test_a_reproduction_runs_its_answers_their_closest_alternatives_and_the_reference_cells_only(tmp_path,
                                                                                                 quiet_record):
    v = _published(tmp_path / "walk")
    assert all(a.design == "sqlite: current_history_block_log" for a in v.answers)
    walk, done = _again(tmp_path / "again", v)
    ran = [(e, t, m) for e, t, m, _ in walk.ran]
    refs = [r for r in ran if r[1].startswith("reference")]
    assert [r[1] for r in refs] == ["reference-1", "reference-2", "reference-3", "reference-4"], \
        "at its start, between its three levels and at its end"
    rest = [r for r in ran if r not in refs]
    # the answer's cells once, at 1g where it was measured (every criterion, then its headroom screen); above, the
    # implication control's screen; at each level the alternative closest to its line, and nothing else
    assert rest.count(("sqlite", CHBL, "1g")) == 1 and any(t.startswith(f"{CHBL}-at-") and m == "1g"
                                                               for e, t, m in rest)
    controls = [(e, t, m) for e, t, m, label in walk.ran if label.startswith("control")]
    # the walk's pass-above control screened the block log (the first implied pass), not the answer: so the answer
    # implied at 2g and 4g is measured where the walk measured it, at 1g, and at the largest level, 4g, screened as a
    # control (the walk implied it there and never measured it); not at 2g
    assert [c.what for c in v.implication_controls if c.cells and c.direction == "pass implies above"] == ["block_log"]
    assert controls == [("sqlite", "implied-current_history_block_log", "4g")]
    assert not [r for r in rest if r[1] == CHBL and r[2] != "1g"]
    (largest,) = [t for t in done if t.role == "control"]
    assert largest.level == "4g" and largest.published == "passes" and largest.reproduced == "passes"
    alternatives = [t for t in done if t.role == "alternative"]
    assert [(t.level, t.engine, t.tag) for t in alternatives][-1] == ("1g", "sqlite", BL), "passed, closest"
    expected = {(t.engine, t.tag, t.mem) for t in targets(v) if t.role != "control"}
    others = {(e, candidate_of(t), m) for e, t, m in rest} - expected - set(controls)
    assert not others, f"cells no target asked for: {others}"
    assert len(walk.ran) < len(v.cells), "far fewer cells than the walk"
    assert {t.reproduced for t in done} <= {"passed with headroom", "passes today only", "passes", "fails"}
    levels = [judge.level(a.mem, a.decision, [t for t in done if t.level == a.mem]) for a in v.answers]
    assert [x.outcome for x in levels] == ["agreed"] * 3 and judge.exit_code(levels) == 0


def test_a_label_that_changes_is_disagreed_and_names_the_figure_it_changed_on(tmp_path, quiet_record):
    v = _published(tmp_path / "walk")
    now = {**PUBLISHED, ("sqlite", CHBL, "1g", "capacity"): 1.1}      # the answer now carries under the band
    _, done = _again(tmp_path / "again", v, now)
    level = judge.level("1g", "-", [t for t in done if t.level == "1g"])
    assert level.outcome == "disagreed" and judge.exit_code([level]) == 1
    assert "passed with headroom, now passes today only" in level.says
    assert "(on capacity 1.0" in level.says and "against the 1.15x line" in level.says, level.says
    (answer_now,) = [t for t in done if t.level == "1g" and t.role == "answer"]
    cap = next(f for f in answer_now.figures if f.name.startswith("capacity"))
    assert cap.published >= 1.8 and cap.reproduced < 1.1 and answer_now.capacity.of == f"sqlite/{CHBL}"


def test_an_answer_that_is_now_a_close_call_names_the_figure_near_its_line(tmp_path, quiet_record):
    """The answer's p99 now 480 ms against 500: passes today only, on its close call (no capacity measured)."""
    v = _published(tmp_path / "walk")
    _, done = _again(tmp_path / "again", v, p99={("sqlite", CHBL, "1g"): 480.0})
    level = judge.level("1g", "-", [t for t in done if t.level == "1g"])
    assert level.outcome == "disagreed" and "passed with headroom, now passes today only" in level.says
    assert "(on a close call: p99(commit_ms) < 500: 480" in level.says, level.says


def test_an_alternative_that_moved_is_said_and_is_no_disagreement(tmp_path, quiet_record):
    """The block log (the closest alternative at 1g) now carries 1.5x: 'alternative moved', the level agreed."""
    v = _published(tmp_path / "walk")
    _, done = _again(tmp_path / "again", v, {**PUBLISHED, ("sqlite", BL, "1g", "capacity"): 1.5})
    level = judge.level("1g", "-", [t for t in done if t.level == "1g"])
    assert level.outcome == "agreed" and judge.exit_code([level]) == 0
    assert level.alternative_moved and "passes today only, now passed with headroom" in level.alternative_moved[0]


def test_a_figure_past_the_spread_with_the_same_label_is_agreed_and_moved(tmp_path, quiet_record):
    v = _published(tmp_path / "walk")
    # 300 ms published; faster now (slower, x m = 1.5, would cross its line and lose the headroom: a label change)
    _, done = _again(tmp_path / "again", v, p99={("sqlite", CHBL, "1g"): 200.0})
    band, _ = judge.spread(1.15, [], [])
    done = [t.model_copy(update={"figures": [judge.compared(f, 1.0, band) for f in t.figures]}) for t in done]
    level = judge.level("1g", "-", [t for t in done if t.level == "1g"])
    assert level.outcome == "agreed" and judge.exit_code([level]) == 0
    assert level.moved and all("x0.667" in m for m in level.moved if "p99(commit_ms) < 500" in m), level.moved
    # raw: no figure is divided by the sittings' speed (the record refutes that scaling for the deciding figures)
    assert all(f.normalised is None for t in done for f in t.figures)


def test_a_figure_near_zero_whose_sign_flips_is_judged_by_its_distance_to_its_line():
    """The 12-02 reproduction flagged a lag trend 0.02 -> -0.019 as 'x-0.95' against a line of 2."""
    from harness.results.reproduce import Figure
    flip = Figure(name="p99_5x: last(apply_lag_growth_blocks) < 2", published=0.02, reproduced=-0.019, timed=False)
    assert not judge.compared(flip, None, 1.15).moved
    far = flip.model_copy(update={"reproduced": -0.19})
    assert judge.compared(far, None, 1.15).moved is False, "0.21 of 2 apart: inside the 15% band of the line"
    past = Figure(name="p99_5x: last(apply_lag_growth_blocks) < 2", published=0.02, reproduced=0.18, timed=False)
    assert judge.compared(past, None, 1.15).moved is False and judge.compared(
        past.model_copy(update={"reproduced": 0.19, "published": -0.19}), None, 1.15).moved


def test_a_cell_measured_beside_other_load_twice_makes_its_level_disturbed(tmp_path, quiet_record):
    v = _published(tmp_path / "walk")
    walk, _ = _again(tmp_path / "again", v)
    walk = _walk(tmp_path / "third", PUBLISHED, {})
    inner = walk.engine_at

    def beside_a_burner(engine, settings, tag, mem, option=None, role=CANDIDATE):
        recs = inner(engine, settings, tag, mem, option, role)
        if tag == BL and mem == "1g":           # what walk/watch.py makes of a cell disturbed on its rerun too
            recs = [r.model_copy(update={"status": "error", "error": "disturbed: other processes used 0.93 of a "
                                         "core while it ran"}) for r in recs]
        return recs
    walk.engine_at = beside_a_burner
    done = rp._run(walk, targets(v), v, lambda engine: None)
    level = judge.level("1g", "-", [t for t in done if t.level == "1g"])
    assert level.outcome == "disturbed" and "0.93 of a core" in level.says and judge.exit_code([level]) == 3


def test_a_folder_that_is_not_a_verdict_is_refused_in_one_line_with_exit_2(tmp_path):
    (tmp_path / "result.json").write_text("{}")
    p = subprocess.run([sys.executable, "-m", "harness.cli", "reproduce", str(tmp_path)], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert "not a published verdict (no verdict.json)" in p.stderr and str(tmp_path) in p.stderr


def _sitting(date: str, outcomes: dict, answer: dict, capacity: float | None = None) -> ReproduceFile:
    """outcomes: level -> its agreement; answer: level -> the answer target's label measured there, its capacity
    `capacity` times the offered load."""
    from harness.results.headroom import Capacity
    from harness.results.reproduce import Target
    cap = Capacity(of="sqlite/" + CHBL, mem="1g", multiple=capacity, fails_at=capacity * 1.1, ceiling=2.5,
                   resolution=0.1) if capacity is not None else None
    return ReproduceFile(published="p", date=date, spread=1.15, spread_basis="b",
                         levels=[LevelAgreement(mem=m, answer="-", outcome=o, says="-") for m, o in outcomes.items()],
                         targets=[Target(mem=m, level=m, role="answer", engine="sqlite", tag=CHBL, says="-",
                                         published="passed with headroom", reproduced=label, capacity=cap)
                                  for m, label in answer.items()])


def test_one_measured_answer_implied_at_three_levels_counts_once_in_held_k_of_n(tmp_path, quiet_record):
    """The answer measured at 1g and implied at 2g and 4g is one row: a sitting counts as its 1g measurement did,
    whatever 2g's control said (the 12-02 reproduction made all three levels 'disagreed' on one screen)."""
    v = _published(tmp_path / "walk")
    pub = tmp_path / "pub"
    (pub / "sittings").mkdir(parents=True)
    (pub / "README.md").write_text("# The verdict\n\nits answer\n")
    kept = {"2026-12-02": ({"4g": "agreed", "2g": "disagreed", "1g": "agreed"}, {"1g": "passed with headroom"}, 1.9),
            "2026-12-03": ({"4g": "agreed", "2g": "agreed", "1g": "disturbed"}, {"1g": "disturbed"}, 0.4),
            "2026-12-04": ({"4g": "agreed", "2g": "agreed", "1g": "disagreed"}, {"1g": "passes today only"}, 1.1)}
    for date, (outcomes, answer_labels, capacity) in kept.items():
        (pub / "sittings" / date).mkdir()
        write_json(pub / "sittings" / date / "reproduce.json", _sitting(date, outcomes, answer_labels, capacity))
    sittings.update_readme(pub, v)
    sittings.update_readme(pub, v)          # written again, not appended
    text = (pub / "README.md").read_text()
    assert text.startswith("# The verdict\n\nits answer\n") and text.count("## Held in k of n sittings") == 1
    rows = [line for line in text.splitlines() if line.startswith("| 1g")]
    assert len(rows) == 1 and "| 1g (implied at 4g, 2g) |" in rows[0] and "| 2 of 3 |" in rows[0], rows
    # the label: the smallest capacity measured in a sitting that counts (the disturbed one's 0.40x says nothing)
    assert "| 1.10x (sitting 2026-12-04) |" in rows[0], rows
    # and verdict.json says the same to a script, at every level the answer speaks for
    sittings.update_record(pub, v)
    kept_v = VerdictFile.model_validate_json((pub / "verdict.json").read_text())
    said = [(a.mem, a.held, a.capacity, a.capacity_sitting) for a in kept_v.answers if a.status == "answered"]
    assert said and all(h == "2 of 3" and c == 1.1 and at == "sitting 2026-12-04" for _, h, c, at in said), said
    # the answer table says what the record says, not the walk's own "holds (line 1.15x)" beside a sitting's 1.10x
    from harness.report.answer_table import answer_rows
    caps = [row[3] for row in answer_rows(kept_v) if row[5] == "2 of 3"]
    assert caps and all(c.startswith("1.10x the load (sitting 2026-12-04)") and "holds" not in c
                        and "1 of 3 sittings" in c for c in caps), caps
    assert "2026-12-03 disturbed" in text and not [x for x in text.splitlines() if x.startswith(("| 2g", "| 4g"))]


def test_rewrite_gives_report_md_the_records_answer_table_and_says_the_rest_is_the_walks(tmp_path, quiet_record):
    """The 12-06 folder's report.md kept the walk's own table (1 of 1, its capacity) beside a README that said the
    record's (2 of 3): `make reproduce REWRITE=1` writes both from the sittings kept, measuring nothing."""
    from harness.report.answer_table import as_markdown
    v = _published(tmp_path / "walk")
    pub = tmp_path / "pub"
    (pub / "sittings").mkdir(parents=True)
    write_json(pub / "verdict.json", v)
    walk_table, full = as_markdown(v), as_markdown(v, full=True)
    (pub / "README.md").write_text("# The verdict\n\n## The answer\n\n" + "\n".join(walk_table) + "\n\nafter\n")
    (pub / "report.md").write_text("# report\n\n**Verdict per memory level**\n\n- the walk's list\n\n"
                                   + "\n".join(walk_table) + "\n\n" + "\n".join(full) + "\n\nthe rest\n")
    for date, capacity in (("2026-12-02", 1.9), ("2026-12-04", 1.1)):
        (pub / "sittings" / date).mkdir()
        write_json(pub / "sittings" / date / "reproduce.json",
                   _sitting(date, {"1g": "agreed"}, {"1g": "passed with headroom"}, capacity))
    for _ in range(2):                       # written again, not appended
        p = subprocess.run([sys.executable, "-m", "harness.cli", "reproduce", str(pub), "--rewrite"],
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
    report, readme = (pub / "report.md").read_text(), (pub / "README.md").read_text()
    def table(text: str) -> list[str]:
        lines = text.splitlines()
        at = lines.index(walk_table[0])
        return lines[at:next(i for i in range(at, len(lines)) if not lines[i].startswith("|"))]
    said = [line for line in table(report) if line.startswith("| 1g")]
    assert said and table(report) == table(readme) != walk_table, said
    assert all("3 of 3" in line and "1.10x the load (sitting 2026-12-04)" in line for line in said), said
    assert report.count("**The record:**") == 1 and report.index("**The record:**") < report.index("**Verdict per")
    assert "\n".join(full) in report and "- the walk's list" in report and report.endswith("the rest\n")
    assert readme.endswith("<!-- /sittings -->\n") and "\nafter\n" in readme


def test_a_reproduction_on_another_host_says_so_in_what_differs():
    from harness.results.headroom import Host
    walk = Host(cpu_model="AMD EPYC 7B13", disk_write_mib_per_s=1400, fsync_p50_us=200, runtime="local", kernel="6.1")
    now = walk.model_copy(update={"cpu_model": "Intel Xeon", "disk_write_mib_per_s": 450})
    said = rp.host_differs(walk, now, 1.15)
    assert said.startswith("the host (CPU model, disk bandwidth)") and "Intel Xeon" in said and "AMD EPYC" in said
    assert "450 MiB/s" in said and "1,400 MiB/s" in said
    assert rp.host_differs(walk, walk.model_copy(update={"disk_write_mib_per_s": 1300}), 1.15) is None


def test_a_reproduction_on_the_store_says_its_filesystem_differs_from_the_disks():
    from harness.results.headroom import Host
    env = {"cpu_model": "AMD EPYC", "kernel": "6.1", "runtime": "local"}
    disk = Host.of({**env, "filesystem": {"mount": "/", "fstype": "ext4", "device": "/dev/vda"}})
    store = Host.of({**env, "filesystem": {"mount": "/w/store", "fstype": "xfs", "device": "/dev/loop0"}})
    assert (disk.filesystem, disk.on_store(), store.on_store()) == ("ext4", False, True)
    said = rp.host_differs(disk, store, 1.15)
    assert said.startswith("the host (filesystem)") and "xfs on a loop device (make store)" in said, said
    assert rp.host_differs(disk.model_copy(update={"filesystem": None}), store, 1.15) is None, "one kept none"


def test_a_reproduction_runs_where_every_published_cell_ran_and_chooses_nothing_where_they_differ(tmp_path):
    import gzip
    import json

    def cell(name, runtime):
        f = tmp_path / "cells" / "p99_5x" / name / "result.json.gz"
        f.parent.mkdir(parents=True)
        f.write_bytes(gzip.compress(json.dumps({"environment": {"runtime": runtime}}).encode()))

    assert rp.published_runtime(tmp_path) is None, "no cell kept: nothing to follow"
    cell("a", "local")
    cell("b", "local")
    assert rp.published_runtime(tmp_path) == "local"
    cell("c", "docker")
    assert rp.published_runtime(tmp_path) is None


def test_what_differs_from_the_published_walk_is_said_the_code_by_engine_and_the_decision_file_by_key(tmp_path):
    import yaml
    from harness.provenance import code_digest
    from harness.scenario.decision import DECISION_FILE
    published = yaml.safe_load(DECISION_FILE.read_text())
    published["screen_blocks"] = published.get("screen_blocks", 60) + 1
    (tmp_path / "decision.yaml").write_text(yaml.safe_dump(published))
    (tmp_path / "commit").write_text("0" * 40 + "\n")           # a commit git does not know: no file list
    cell = lambda engine, digest: CellRecord(  # noqa: E731
        cell_id="x", scenario="p99_5x", engine=engine, mem="1g", data_limit_bytes=None, scale=1.0, runtime="local",
        dir=f"{engine}-1g-s1", state="complete", status="passed", code_digest=digest)
    v = VerdictFile(decision_file="d", profile="ratio", mems=["1g"], repeats=1, dir=".", criteria=[], steps=[],
                    cells=[cell("sqlite", "0" * 16), cell("postgres", code_digest("postgres"))])
    said = rp.differences(tmp_path, v)
    assert len(said) == 2, said
    assert "the measuring code differs for sqlite" in said[0] and "postgres" not in said[0]
    assert said[1].startswith("scenarios/decision.yaml differs from the published one (screen_blocks)")
    (tmp_path / "decision.yaml").write_text(DECISION_FILE.read_text())
    (tmp_path / "commit").write_text(rp.git_commit() or "")
    assert rp.differences(tmp_path, v.model_copy(update={"cells": v.cells[1:]})) == []


def test_a_small_latency_far_from_its_line_is_still_judged_by_its_ratio():
    from harness.results.reproduce import Figure
    fig = Figure(name="reorg: p99(commit_ms) < 60000", published=5.0, reproduced=10.0)
    got = judge.compared(fig, None, 1.15)
    assert got.raw == 2.0 and got.moved


def test_the_reproductions_estimate_is_what_the_published_walk_spent_on_its_cells_each_once():
    """12-06's reproduction printed 7 targets and no minutes (it ran over two hours). Its estimate reads the
    published walk's own cells: each target's, its capacity steps, a cell two levels share counted once, and a
    reference cell per level and one at the end."""
    from pathlib import Path
    from harness.report.verdict_cells import minutes
    from harness.results import load_verdict
    from harness.walks.reproduce.targets import published_cost
    v = load_verdict(Path(__file__).parents[2] / "docs/results/2026-12-06-ratio/verdict.json")
    todo = targets(v)
    names, spent = published_cost(v, todo)
    assert len(names) == len(set(names))
    chbl = [n for n in names if "current_history_block_log-1284m" in n]
    assert len(chbl) == 3, "the 2568m and 1284m answers share the 1284m cells: counted once"
    assert "p99_5x/sqlite-leaf-block_log-at-1.42x-5137m-s1" in names, "a capacity step is a cell the answer runs"
    by_name = {f"{r.scenario}/{r.dir}": r for r in v.cells}
    refs = [minutes(r) for r in v.cells if r.label == "reference cell"]
    cells_min = sum(minutes(by_name[n]) for n in names)
    assert spent == pytest.approx(cells_min + 4 * sum(refs) / len(refs)), "three levels: four reference cells"
    assert 100 < spent < 150


def test_an_engine_no_later_target_runs_has_its_states_dropped_then_and_the_reference_engines_never(tmp_path,
                                                                                                   quiet_record):
    """12-06's reproduction kept PostgreSQL's two states (26 GiB) from its 5137m alternative through SQLite's designs
    and left 3.2 GB free under a running cell: an engine is done with once its last target has run."""
    near = {("postgres", "", m): 520.0 for m in MEMS}           # PostgreSQL fails nearest its line everywhere
    v = _published(tmp_path / "walk", p99=near)
    engines = [t.engine for t in targets(v)]
    assert "postgres" in engines, "the setting: a PostgreSQL alternative"
    called, walk = [], _walk(tmp_path / "again", PUBLISHED, near)
    rp._run(walk, targets(v), v, lambda e: called.append((e, len(walk.ran))))
    assert [e for e, _ in called] == sorted({e for e in engines if e != "sqlite"}, key=engines.index), \
        "each engine once, SQLite (the reference cells' engine) never"
    for engine, at in called:
        assert not [r for r in walk.ran[at:] if r[0] == engine], f"{engine} ran after it was done with"


def test_a_later_sitting_at_the_same_path_is_a_sitting_of_its_own(tmp_path):
    """A fresh machine's results/reproduce-<folder>-<date> is the same path as an earlier sitting's that day: it is
    kept beside that sitting, never over it (12-06: the Intel sitting overwrote the AMD one's folder); a resumed one
    keeps its folder."""
    pub, root = tmp_path / "pub", tmp_path / "results" / "reproduce-p-2026-12-06"
    first = ReproduceFile(published="p", date="2026-12-06", spread=1.15, spread_basis="b", run_id=rp.sitting_id(root))
    assert rp.sitting_id(root) == first.run_id, "a resumed sitting keeps its id"
    dest = sittings.sitting_dir(pub, first)
    dest.mkdir(parents=True)
    write_json(dest / "reproduce.json", first)
    import shutil
    shutil.rmtree(root)                         # the next machine: a fresh checkout, the same path
    later = first.model_copy(update={"run_id": rp.sitting_id(root)})
    assert later.run_id != first.run_id and sittings.sitting_dir(pub, later).name == "2026-12-06-2"
    assert sittings.sitting_dir(pub, first) == dest
