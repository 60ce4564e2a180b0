"""The answer as one typed object (issue 84): verdict.json says per level what kind of thing answers it, with its
capacity, its durable and queryable p99 and the figure that binds; and, from the same cells, the answer for readers
who must see a block within 500 ms. The walk is faked as in test_headroom.py; the answers are the walk's own code's."""
from harness.results import CellRecord, LeafCell, MatrixCell, ThresholdResult, VerdictFile
from harness.walks.verdict import answer, headroom
from harness.walks.verdict.leaf import with_leaf
from harness.walks.verdict.typed import readers_answers, typed
from tests.unit.test_headroom import walked
from tests.unit.test_verdict_walk import MEMS

CHBL = "leaf-current_history_block_log"


def test_a_level_answered_by_a_design_names_it_with_a_status_that_says_it_answered(tmp_path, monkeypatch):
    """bb2cb81 wrote status "none" and engine null at every level the design answered: a script got no answer."""
    monkeypatch.setattr(headroom, "PUBLISHED", tmp_path / "none")
    monkeypatch.setattr(headroom, "reference_figure", lambda root, rec: 2000.0)
    fails = {(e, m): "failed" for e in ("sqlite", "libsql", "postgres", "duckdb") for m in MEMS}
    outcomes = {**fails, **{("sqlite", m, CHBL): "passed" for m in MEMS},
                **{("sqlite", m, CHBL, "capacity"): 1.6 for m in MEMS}}
    walk, leaf = walked(tmp_path, outcomes)
    ans = typed(with_leaf(answer.answers(walk.tree, MEMS, walk.matrix, lambda m: None), leaf), walk.matrix, leaf,
                walk.records, {s.engine: s.set for s in walk.tree.steps})
    assert [a.mem for a in ans] == MEMS
    for a in ans:
        assert a.status == "answered" and a.kind == "design" and a.design == "sqlite: current_history_block_log"
        assert a.measured_at == "1g", "measured at the smallest level, implied above"
        assert 1.4 <= a.capacity < 1.6 and a.capacity_sitting and a.held == "1 of 1"
        assert a.settings.get("workload.schema") == "current_history" and a.decision.startswith("Deploy sqlite")
    v = VerdictFile(decision_file="d", profile="ratio", mems=MEMS, repeats=1, dir="d", criteria=[], steps=[],
                    leaf=leaf, matrix=walk.matrix, answers=ans, cells=walk.records)
    from harness.report.answer_table import answer_rows
    rows = answer_rows(v)
    assert all(len(c) <= 200 for row in rows for c in row), "no cell over ~200 characters"
    assert "(measured at 1g, implied here)" in rows[0][1] and "holds" in rows[0][3] and rows[0][5] == "1 of 1"


def _rec(name: str, mem: str, q: float | None, p99: float) -> CellRecord:
    return CellRecord(cell_id="x", scenario="p99_5x", engine="sqlite", mem=mem, data_limit_bytes=None, scale=1.0,
                      runtime="local", dir=name, state="complete", status="passed", label="candidate", p99_ms=p99,
                      queryable_p99_ms=q, thresholds=[ThresholdResult(expr="p99(commit_ms) < 500", value=p99,
                                                                      passed=True)])


def test_the_500_ms_readers_answer_comes_from_the_walks_own_cells():
    """At 2g SQLite as deployed passed (commit p99 420 ms: a reader sees a block at its commit) and so did the design
    (acknowledged in 12 ms, applied 1,090 ms after its due time): the 500 ms reader's answer there is SQLite as
    deployed; at 1g only the design passed, so none, with it as the closest and its figure."""
    recs = [_rec("sqlite-2g-s1", "2g", 420.0, 420.0), _rec("sqlite-leaf-chbl-1g-s1", "1g", 1090.0, 12.0)]
    matrix = [MatrixCell(engine="sqlite", mem="2g", outcome="pass", cells=["p99_5x/sqlite-2g-s1"]),
              MatrixCell(engine="sqlite", mem="1g", outcome="fail", cells=[])]
    leaf = [LeafCell(engine="sqlite", design="chbl", says="d", mem="1g", outcome="pass",
                     cells=["p99_5x/sqlite-leaf-chbl-1g-s1"]),
            LeafCell(engine="sqlite", design="chbl", says="d", mem="2g", outcome="pass", implied_from="1g")]
    got = {r.mem: r for r in readers_answers(["2g", "1g"], 500, matrix, leaf, recs)}
    assert got["2g"].status == "answered" and got["2g"].what == "sqlite at its own settings"
    assert got["2g"].queryable_p99_ms == 420.0
    assert got["1g"].status == "none" and got["1g"].closest == "sqlite: chbl" and got["1g"].closest_ms == 1090.0
    lax = {r.mem: r for r in readers_answers(["1g"], 10000, matrix, leaf, recs)}
    assert lax["1g"].status == "answered" and lax["1g"].what == "sqlite: chbl", "the same cells at the 10 s line"


def _cell(scenario: str, figures: dict[str, float]) -> CellRecord:
    return CellRecord(cell_id="x", scenario=scenario, engine="sqlite", mem="1g", data_limit_bytes=None, scale=1.0,
                      runtime="local", dir="d", state="complete", status="passed", label="candidate",
                      thresholds=[ThresholdResult(expr=e, value=v, passed=True) for e, v in figures.items()])


def test_the_binding_figure_is_what_limits_the_answer_not_a_rate_that_met_its_offer():
    """12-06's answer table named `rate(applied_rows) 100 (>= 95; 5% to spare)` at every level: every row applied,
    a figure that cannot rise past the offer and reads the same for every candidate, while the applier's busy
    share (0.611 against 0.85) is what bounds the answer's capacity. The figures are that walk's 5137m cell's."""
    from harness.walks.verdict.typed import binding
    p99 = _cell("p99_5x", {"p99(commit_ms) < 500": 5.539, "rate(rows) > 5700": 6004.6,
                           "p99(apply_lag_blocks) < 5": 0.0, "rate(applied_rows) >= 95%": 100.0,
                           "last(apply_utilisation) < 0.85": 0.611, "last(apply_drain_s) < 10": 0.98,
                           "last(log_growth_segments) < 2": -0.026})
    reorg = _cell("reorg", {"last(apply_utilisation) < 0.85": 0.06, "rate(applied_rows) >= 95%": 100.0})
    rec, t = binding([reorg, p99])
    assert (rec.scenario, t.expr) == ("p99_5x", "last(apply_utilisation) < 0.85"), "the cell it came from, named"
    short = _cell("p99_5x", {"rate(applied_rows) >= 95%": 96.5, "last(apply_utilisation) < 0.85": 0.611})
    assert binding([short])[1].expr == "rate(applied_rows) >= 95%", "a rate short of its offer binds"
    behind = _cell("p99_5x", {"rate(rows) > 5700": 5200.0, "p99(commit_ms) < 500": 300.0})
    assert binding([behind])[1].expr == "rate(rows) > 5700", "a rate past its line binds"
