"""An answer that holds on another day (issues 76, 84): a candidate that passed has its capacity measured on itself;
under the within-sitting band it "passes today only" and the walk goes on until one holds; its label is the smallest
capacity on record, of its own runtime. The
cells are fakes (run_cells or engine_at replaced); the plans they are handed are the walk's real ones."""
import re
from types import SimpleNamespace

import pytest

from harness.results import CellRecord, ThresholdResult, VerdictFile, write_json
from harness.results import LeafCell
from harness.results.headroom import Capacity, Host, ReferenceRun, fragile
from harness.scenario.decision import load_decision
from harness.walks.sweep import CellOptions
from harness.walks.verdict import answer, headroom, walk as walk_module
from harness.walks.verdict.leaf import run_leaf, with_leaf
from harness.walks.verdict.plan import criterion_plans, order_mems
from harness.walks.verdict.walk import Walk
from tests.unit.test_verdict_walk import MEMS, fake_walk


def _capacity(of: str, mem: str, multiple: float, sitting: str, runtime: str = "local", fails_at=None):
    return Capacity(of=of, mem=mem, multiple=multiple, fails_at=fails_at or round(multiple * 1.09, 3), ceiling=2.5,
                    resolution=0.1, sitting=sitting, host=Host(runtime=runtime, cpu_model="a CPU"))


def _published(pub, name: str, caps: list, runtime_of_reference: str = "docker") -> None:
    (pub / name).mkdir(parents=True)
    leaf = [LeafCell(engine="sqlite", design="chbl", says="d", mem=c.mem, outcome="pass",
                     headroom=headroom.judged(c, 1.15, [])) for c in caps]
    write_json(pub / name / "verdict.json", VerdictFile(
        decision_file="d", profile="ratio", mems=["1g"], repeats=1, dir="d", criteria=[], steps=[], leaf=leaf,
        reference=[ReferenceRun(at="start", cell="x", started_utc="2026-11-28T10:00:00Z", service_p50_ms=2660,
                                runtime=runtime_of_reference)]))


def test_a_faster_sitting_leaves_the_label_of_a_design_that_carries_the_band_in_both(tmp_path):
    """Published: capacity 1.33x (64% busy). Today, on a host twice as fast as the slowest on record, 2.0x. The label
    stays 'holds with headroom', its smallest on record the published 1.33x; the reference's 2,660 ms (docker) enters
    no figure of a local sitting."""
    pub = tmp_path / "pub"
    of = "sqlite/leaf-chbl"
    _published(pub, "2026-12-02-ratio", [_capacity(of, "1g", 1.33, "2026-12-02")])
    record = headroom.on_record(of, "1g", "ratio", "local", pub)
    assert [c.multiple for c in record] == [1.33]
    today = _capacity(of, "1g", 2.0, "2026-12-05")
    h = headroom.judged(today, 1.15, record)
    assert h.passed and h.smallest == 1.33 and h.smallest_from == "2026-12-02" and h.sittings == 2
    assert h.says().startswith("holds with headroom: carries 2.00x the load") and "2026-12-02" in h.says()
    assert headroom.on_record(of, "1g", "ratio", "docker", pub) == [], "another runtime's capacity enters nothing"
    slower = headroom.judged(_capacity(of, "1g", 1.1, "2026-12-06"), 1.15, record)
    assert not slower.passed and slower.smallest == 1.1, "a slower sitting lowers it, by a measured figure"


def test_a_capacity_that_moved_between_sittings_more_than_the_band_is_held_only_from_that_spread_up():
    """The mission's rule: headroom larger than the spread between sittings. On record 1.70x; today 1.30x: a spread of
    1.31x, wider than the 1.15 band, so 1.30x does not hold; 1.40x (spread 1.21x) does. With one sitting on record the
    band is the line, and the basis says there is no spread yet."""
    of = "sqlite/leaf-chbl"
    record = [_capacity(of, "1g", 1.70, "2026-12-02")]
    slow = headroom.judged(_capacity(of, "1g", 1.30, "2026-12-06"), 1.15, record)
    assert not slow.passed and slow.multiple == pytest.approx(1.31, abs=0.01) and "spread between its 2 sittings" in slow.basis
    assert "under the 1.31x line" in slow.says()
    assert headroom.judged(_capacity(of, "1g", 1.40, "2026-12-06"), 1.15, record).passed
    alone = headroom.judged(_capacity(of, "1g", 1.20, "2026-12-06"), 1.15, [])
    assert alone.passed and alone.multiple == 1.15 and "no spread between sittings yet" in alone.basis


def walked(tmp_path, outcomes: dict):
    """The shipped tree without its tune options, walked over fake cells with a reference cell, then its leaf."""
    tree = load_decision().model_copy(update={"steps": [s.model_copy(update={"tune": []})
                                                        for s in load_decision().steps]})
    walk = fake_walk(tmp_path, outcomes, tree=tree, headroom=True)
    walk.opts = CellOptions(profile="ratio")
    walk.run()
    return walk, run_leaf(walk)


def test_a_design_that_passes_today_only_is_not_the_answer_while_one_with_headroom_passes(tmp_path, monkeypatch):
    """Every engine fails everywhere. SQLite's block log passes at 1x at every level and carries 1.05x (under the
    1.15 band); current ∪ history behind a block log carries 1.9x: it is the answer at every level, and the block log
    is said to pass today only (it implies nothing above it)."""
    monkeypatch.setattr(headroom, "PUBLISHED", tmp_path / "none")
    monkeypatch.setattr(headroom, "reference_figure", lambda root, rec: 2000.0)
    fails = {(e, m): "failed" for e in ("sqlite", "libsql", "postgres", "duckdb") for m in MEMS}
    bl, chbl = "leaf-block_log", "leaf-current_history_block_log"
    outcomes = {**fails, **{("sqlite", m, t): "passed" for m in MEMS for t in (bl, chbl)},
                **{("sqlite", m, bl, "capacity"): 1.05 for m in MEMS},
                **{("sqlite", m, chbl, "capacity"): 1.9 for m in MEMS}}
    walk, leaf = walked(tmp_path, outcomes)
    steps = [(e, m, t, label) for e, m, t, label in walk.labels if "-at-" in t]
    assert steps and all(label.startswith("capacity step at ") for *_, label in steps)
    block_log = [c for c in leaf if c.design == "block_log"]
    assert [c.mem for c in block_log] == ["1g", "2g", "4g"], "a pass today only implies no level above it"
    full = [(m, label) for e, m, t, label in walk.labels if t == bl]
    assert full == [("1g", "candidate")], "above it, its pass is implied: only its capacity is measured"
    assert [c.implied_from for c in block_log] == [None, "1g", "1g"] and all(c.headroom_here for c in block_log[1:])
    assert all(re.match(r"passes today only: carries (0\.9|1\.0)\dx", c.headroom.says()) for c in block_log)
    ans = with_leaf(answer.answers(walk.tree, MEMS, walk.matrix, lambda m: None), leaf)
    assert all(a.design == "sqlite: current_history_block_log" and not a.fragile for a in ans)
    assert all(re.search(r"holds with headroom: carries 1\.[6-8]\dx", a.in_full()) for a in ans)
    from harness.report.verdict_blocks import leaf_blocks
    v = VerdictFile(decision_file="d", profile="ratio", mems=MEMS, repeats=1, dir="d", criteria=[], steps=[], leaf=leaf)
    text = " ".join(" ".join(b.items or []) for b in leaf_blocks(v))
    assert re.search(r"passes today only: carries (0\.9|1\.0)\dx", text)


def test_where_nothing_has_headroom_the_best_pass_today_is_the_answer_labelled_fragile(tmp_path, monkeypatch):
    monkeypatch.setattr(headroom, "PUBLISHED", tmp_path / "none")
    monkeypatch.setattr(headroom, "reference_figure", lambda root, rec: 2000.0)
    outcomes = {("sqlite", m): "passed" for m in MEMS}
    outcomes.update({(e, m, "", "capacity"): 1.05 for m in MEMS for e in ("sqlite", "libsql", "postgres", "duckdb")})
    tree = load_decision().model_copy(update={"steps": [s.model_copy(update={"tune": []})
                                                        for s in load_decision().steps], "leaf": None})
    walk = fake_walk(tmp_path, outcomes, tree=tree, headroom=True)
    walk.opts = CellOptions(profile="ratio")
    walk.run()
    assert [m for e, m in walk.ran if e == "libsql"] == MEMS, "a pass today only leaves its level open"
    ans = answer.answers(walk.tree, MEMS, walk.matrix, lambda m: None)
    assert all(a.engine == "sqlite" and a.fragile and "fragile: passes today only" in a.headline() for a in ans)


def _rec(status, p99_ms, dir, scenario, bounds=None) -> CellRecord:
    t = ThresholdResult(expr="p99(commit_ms) < 500", value=p99_ms, passed=status == "passed", bounds=bounds,
                        judged="undecided" if bounds else ("passed" if status == "passed" else "failed"))
    return CellRecord(cell_id="x", scenario=scenario, engine="sqlite", mem="4g", data_limit_bytes=None, scale=1.0,
                      runtime="local", dir=dir, state="complete", status=status, thresholds=[t])


def _sqlite_alone_at_4g(tmp_path, monkeypatch, p99_ms: float, bounds) -> tuple[Walk, list]:
    """SQLite at 4g on the first criterion, with a reference cell: every cell it runs passes at p99_ms."""
    monkeypatch.setattr(headroom, "PUBLISHED", tmp_path / "none")
    monkeypatch.setattr(headroom, "reference_figure", lambda root, rec: 2000.0)
    tree = load_decision()
    tree = tree.model_copy(update={"steps": [s.model_copy(update={"tune": [], "control": None}) for s in tree.steps],
                                   "criteria": tree.criteria[:1], "leaf": None})
    mems = order_mems(["4g"])
    walk = Walk(tree, mems, criterion_plans(tree, lambda sc: 3600), CellOptions(runtime="local", profile="ratio"),
                tmp_path)
    ran = []

    def run_cells(runs, path, meta, stop=None, place="local"):
        cells = []
        for cr in runs:
            ran.append((cr.cell.tag, cr.cell.repeat, cr.plan.workload.block_interval_ms, tuple(cr.plan.thresholds)))
            cells.append(_rec("passed", p99_ms, cr.dir.name, cr.cell.scenario, bounds=bounds))
        return SimpleNamespace(cells=cells)
    monkeypatch.setattr(walk_module, "run_cells", run_cells)
    walk.run()
    return walk, ran


def test_a_candidate_that_passed_has_its_capacity_measured_and_no_same_sitting_confirmation(tmp_path, monkeypatch):
    """SQLite passes at 4g, p99 300 ms, decided. With a reference, its capacity steps run, with its blocks due m
    times as often and the absolute rate's line raised with them; no second run."""
    walk, ran = _sqlite_alone_at_4g(tmp_path, monkeypatch, 300.0, None)
    candidate = [r for r in ran if r[0] == ""]
    assert [r[1] for r in candidate] == [1], "one run: no confirmation"
    first = next(r for r in ran if r[0] == "at-1.15x")
    assert first[2] == pytest.approx(candidate[0][2] / 1.15, abs=0.01)
    assert "rate(rows) > 6555" in first[3] and "rate(rows) > 5700" in candidate[0][3]
    h = walk.matrix[0].headroom
    assert h.passed and h.capacity.at_least and h.capacity.of == "sqlite" and h.capacity.mem == "4g"
    assert [r.label for r in walk.records if r.dir.startswith("sqlite-4g")][:1] == ["candidate"]


def test_a_close_call_passes_today_only_without_a_capacity_measured_on_more_load(tmp_path, monkeypatch):
    """p99 469 ms against 500, its bounds straddling the line (2026-12-05: in-place SQLite at 2568m, which then
    carried 2.5x the load at the same p99: its blocks' service time, not their queueing, is what moves between
    sittings). A close call answers nothing on another day: no capacity steps, passes today only, one run."""
    walk, ran = _sqlite_alone_at_4g(tmp_path, monkeypatch, 469.0, (300.0, 560.0))
    # each engine's step then has its try (a pass today only answers nothing), one run each
    assert [r[:2] for r in ran if not r[0].startswith("reference")] == [("", 1)] * 4, "no capacity step, no confirmation"
    h = walk.matrix[0].headroom
    assert not h.passed and h.capacity is None and "469, its one-sided 95% bounds" in h.close_call
    assert h.says().startswith("passes today only: a close call (p99(commit_ms) < 500: 469")
    assert walk.matrix[0].outcome == "pass" and fragile(walk.matrix[0])


def test_the_answer_table_puts_each_deciding_figure_beside_its_line():
    from harness.report.answer_table import margin
    assert margin(ThresholdResult(expr="p99(commit_ms) < 500", value=12.6, passed=True)) == \
        "p99(commit_ms) 12.6 (< 500; 97% to spare)"
    assert margin(ThresholdResult(expr="rate(rows) > 5700", value=5400, passed=False)) == \
        "rate(rows) 5,400 (> 5,700; 5% over)"
    assert margin(ThresholdResult(expr="count(lost_acked_blocks) == 0", value=0, passed=True)) == \
        "count(lost_acked_blocks) 0 (== 0)"


def test_an_answers_deciding_figures_are_plotted_minute_by_minute(tmp_path):
    """A block log's answer: its acknowledgement p99, apply lag p99 and busy share, a point per minute, from the
    cell's blocks.csv and design.csv (what its trends were fitted to)."""
    from harness.report import plots
    from harness.report.collect import CellData
    d = tmp_path / "cell"
    d.mkdir()
    (d / "blocks.csv").write_text("block_index,due_s,commit_ms\n" + "".join(f"{i},{10 + 2 * i},{5 + i % 3}\n"
                                                                           for i in range(90)))
    (d / "design.csv").write_text("metric,t_s,value\n" + "".join(f"apply_lag_blocks,{2 * i},{i % 2}\n"
                                                                 for i in range(90))
                                  + "".join(f"apply_utilisation,{15 + 30 * i},0.4\n" for i in range(6)))
    result = SimpleNamespace(scenario="p99_5x", engine="sqlite", thresholds=[])
    cell = SimpleNamespace(blocks=lambda: CellData.blocks(SimpleNamespace(run_dir=d)),
                           design_points=lambda: CellData.design_points(SimpleNamespace(run_dir=d)),
                           timeseries=lambda: [], run_dir=d,
                           scenario="p99_5x", label="sqlite with a block log", result=result)
    svg = plots.answer_over_minutes(cell)
    assert "apply lag p99 (blocks)" in svg and "applier busy (share)" in svg and "commit p99 (ms)" in svg
    from harness.report.minutes import minutes
    assert [(m.minute, m.blocks, m.ack_p99_ms) for m in minutes(cell)] == [(1, 30, 7.0), (2, 30, 7.0), (3, 30, 7.0)]


def test_reorg_behind_a_block_log_is_screened_and_p99_5x_is_not(tmp_path):
    """decision.yaml's behind_a_log: a reorg's acknowledgement behind a log is the log's (p99 1.6-1.8 ms in the 11-29
    walk, 13 min of a full cell): screened over 60 blocks there; p99_5x stays in full, and so does a reorg on an
    engine without a log."""
    from harness.scenario.matrix import load_matrix
    from harness.walks.verdict.roles import CANDIDATE
    tree = load_decision()
    walk = Walk(tree, ["2g"], criterion_plans(tree, lambda sc: 600), CellOptions(runtime="local", profile="ratio"),
                tmp_path)
    p99_5x, reorg = walk.criteria[0], walk.criteria[1]
    log = load_matrix().engines["sqlite"].options["block_log"]
    assert walk.screened(reorg, log, CANDIDATE) == tree.screen_blocks == 60
    assert walk.screened(reorg, None, CANDIDATE) is None and walk.screened(p99_5x, log, CANDIDATE) is None
    (run,) = walk.criterion_runs(reorg, "sqlite", {}, "leaf-block_log", "2g", log, screen_blocks=60)
    assert run.plan.phases.measure_s == 60 * run.plan.workload.block_interval_ms / 1000
