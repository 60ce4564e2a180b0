"""The verdict's walk and answers (harness/walks/verdict/): which cells run, which are implied, what each MEM's
answer is. The cells themselves are replaced by outcomes given per engine and MEM: these tests are about
the walk's own logic (the CLI tests in tests/cli/test_sweep.py run real cells)."""
import json
from dataclasses import replace
import os
import re
import subprocess
import sys

import pytest

from harness.results import CellRecord
from harness.scenario.decision import load_decision
from harness.state import store
from harness.walks.sweep import CellOptions
from harness.walks.verdict import answer
from harness.walks.verdict.plan import criterion_plans, order_mems
from harness.walks.verdict.roles import candidate_of
from harness.walks.verdict.trade_offs import screen_trade_offs
from harness.walks.verdict.walk import CANDIDATE, Walk

MEMS = order_mems(["1g", "4g", "2g"])


def fake_walk(tmp_path, outcomes: dict, all_cells=False, tree=None, headroom=False) -> Walk:
    """outcomes: (engine, mem) -> 'passed' | 'failed' | 'error', or (engine, mem, option) for a tuned step's
    option; anything not listed passes, but a tuning option, which fails. Without headroom, the tree's reference
    cell is dropped (the walk's logic apart from it: tests/unit/test_headroom.py)."""
    if tree is None:      # the walk's own logic: the shipped tree without its tuning (tested on its own below)
        tree = load_decision()
        tree = tree.model_copy(update={"steps": [s.model_copy(update={"tune": []}) for s in tree.steps]})
    if not headroom:
        tree = tree.model_copy(update={"reference": None})
    walk = Walk(tree, MEMS, criterion_plans(tree, lambda sc: 3600), CellOptions(), tmp_path, all_cells=all_cells)
    ran, labels = [], []

    def engine_at(engine, settings, tag, mem, option=None, role=CANDIDATE):
        criteria = walk.criteria[:role.criteria]
        labels.append((engine, mem, tag, role.label))
        if role.load != 1:      # a capacity step: it passes under the capacity given as (engine, mem, tag, "capacity")
            limit = outcomes.get((engine, mem, candidate_of(tag), "capacity"), 9.0)
            return [CellRecord(cell_id="x", scenario=criteria[0].criterion.scenario, engine=engine, mem=mem,
                               data_limit_bytes=None, scale=1.0, runtime="local", dir=f"{engine}-{tag}-{mem}",
                               state="complete", status="passed" if role.load < limit else "failed",
                               label=role.label)]
        if option is not None:
            ran.append((engine, mem, tag))
            status = outcomes.get((engine, mem, tag), "failed")
            return [CellRecord(cell_id="x", scenario=c.criterion.scenario, engine=engine, mem=mem,
                               data_limit_bytes=None, scale=1.0, runtime="local", dir=f"{engine}-{tag}-{mem}",
                               state="complete", status=status, label=role.label)
                    for c in criteria[:1 if status != "passed" else None]]
        if not tag:                       # a control's cells are the step's own business
            ran.append((engine, mem))
        walk.controls = getattr(walk, "controls", []) + ([(engine, mem)] if tag else [])
        status = outcomes.get((engine, mem, tag), outcomes.get((engine, mem), "passed"))
        return [CellRecord(cell_id="x", scenario=c.criterion.scenario, engine=engine, mem=mem, data_limit_bytes=None,
                           scale=1.0, runtime="local", dir=f"{engine}-{mem}", state="complete", status=status,
                           diagnosis=None if status == "passed" else f"{status} here", label=role.label)
                for c in criteria[:1 if status != "passed" else None]]
    walk.engine_at = engine_at
    walk.ran, walk.labels = ran, labels
    return walk


def test_mems_are_walked_largest_first():
    assert MEMS == ["4g", "2g", "1g"]


def test_a_failure_at_the_largest_mem_marks_the_smaller_ones_implied(tmp_path):
    walk = fake_walk(tmp_path, {("sqlite", "4g"): "failed", ("libsql", "4g"): "failed"})
    walk.run()
    assert walk.ran[:2] == [("sqlite", "4g"), ("libsql", "4g")]
    outcome = {(c.engine, c.mem): c.outcome for c in walk.matrix}
    assert outcome[("sqlite", "2g")] == outcome[("sqlite", "1g")] == "implied"
    assert ("sqlite", "2g") not in walk.ran and ("sqlite", "1g") not in walk.ran
    assert outcome[("postgres", "4g")] == "pass" and outcome[("duckdb", "4g")] == "not run"
    ans = {a.mem: a for a in answer.answers(walk.tree, MEMS, walk.matrix, lambda m: None)}
    assert all(a.engine == "postgres" and a.status == "answered" for a in ans.values())
    assert walk.steps[0].cells_unrun == 2 * len(walk.criteria)


def test_the_next_engine_is_walked_only_where_no_answer_is_yet(tmp_path):
    walk = fake_walk(tmp_path, {("sqlite", "1g"): "failed", ("sqlite", "2g"): "failed"})
    walk.run()
    assert ("sqlite", "4g") in walk.ran and ("sqlite", "2g") in walk.ran and ("sqlite", "1g") not in walk.ran
    assert [m for e, m in walk.ran if e == "libsql"] == ["2g", "1g"]
    ans = {a.mem: a.engine for a in answer.answers(walk.tree, MEMS, walk.matrix, lambda m: None)}
    assert ans == {"4g": "sqlite", "2g": "libsql", "1g": "libsql"}
    assert walk.steps[0].outcome == "mixed" and walk.steps[0].passed
    assert walk.controls == [("sqlite", "2g"), ("sqlite", "1g")], "the control where libsql passed and sqlite failed"
    assert walk.steps[1].control.engine == "sqlite" and not walk.steps[1].control.passed     # the fake fails it


def test_an_error_cell_makes_its_mem_inconclusive_never_the_next_engines(tmp_path):
    walk = fake_walk(tmp_path, {("sqlite", "4g"): "error", ("sqlite", "2g"): "failed"})
    walk.run()
    assert [m for e, m in walk.ran if e == "libsql"] == ["2g", "1g"], "no next engine where sqlite errored"
    ans = {a.mem: a for a in answer.answers(walk.tree, MEMS, walk.matrix, lambda m: None)}
    assert ans["4g"].status == "inconclusive" and "sqlite-4g" in ans["4g"].why and "error here" in ans["4g"].why
    assert ans["2g"].engine == ans["1g"].engine == "libsql"


def test_all_cells_runs_what_a_failure_implies(tmp_path):
    walk = fake_walk(tmp_path, {("sqlite", m): "failed" for m in MEMS}, all_cells=True)
    walk.run()
    assert [m for e, m in walk.ran if e == "sqlite"] == MEMS
    assert not any(c.outcome == "implied" for c in walk.matrix)


def test_a_window_longer_than_the_phase_is_scaled_down_and_said():
    tree = load_decision()
    plans = criterion_plans(tree, lambda sc: 8.0)
    reorg = next(p for p in plans if p.criterion.scenario == "reorg")
    assert "p99(commit_ms) over 4s < 500" in reorg.thresholds and reorg.notes
    assert "shorter than the 60 s window" in reorg.notes[0]
    full = criterion_plans(tree, lambda sc: 3600.0)
    assert all(not p.notes and p.thresholds == tuple(p.criterion.thresholds) for p in full)


def run_tree(tmp_path, tree: dict, timeout: int, *extra: str, env: dict | None = None):
    """A real smoke verdict over `tree`: the process and its verdict.json (None if it wrote none)."""
    path = tmp_path / "tree.yaml"
    path.write_text(json.dumps(tree))
    p = subprocess.run([sys.executable, "-m", "harness.cli", "verdict", "--decision", str(path), "--profile", "smoke",
                        "--runtime", "local", "--results", str(tmp_path / "r"), "--data", str(tmp_path / "d"), *extra],
                       capture_output=True, text=True, timeout=timeout, env=env)
    found = next((tmp_path / "r").glob("verdict-*/verdict.json"), None)
    return p, json.loads(found.read_text()) if found else None


def test_an_error_cell_gives_an_inconclusive_verdict_and_exit_3(tmp_path):
    """For real: a cell whose engine errors at open (a bin_dir with no PostgreSQL in it) makes its MEM
    inconclusive; the verdict exits 3 and says which cell."""
    tree = {"steps": [{"engine": "postgres", "decision": "use postgres", "set": {"bin_dir": str(tmp_path)}}],
            "otherwise": "revisit", "mems": {"smoke": ["256m"]}, "criteria": [{"name": "reorg", "scenario": "reorg",
                                                  "thresholds": ["p99(commit_ms) < 60000"],
                                                  "target": {"scale": 1.0, "measure_s": 3600}}]}
    p, v = run_tree(tmp_path, tree, timeout=300)
    assert p.returncode == 3, p.stderr[-2000:]
    assert v["answers"][0]["status"] == "inconclusive" and "postgres" in v["answers"][0]["why"]
    assert "inconclusive" in p.stderr


def test_a_failed_state_build_is_build_failed_not_oom(tmp_path):
    """DuckDB builds its state outside any limit: its out of memory there says nothing of the cell's MEM."""
    from harness.results import load_result
    from harness.cell import execute
    from harness.scenario.plan import resolve_plan
    plan = resolve_plan("p99_5x", "duckdb", scale=0.01, mem="256m", results_root=tmp_path,
                        data_root=tmp_path / "data", overrides=["engines.duckdb.memory_limit=8MB"])
    assert execute(plan) == 3
    r = load_result(tmp_path / plan.run_id / "result.json")
    assert r.status == "build_failed" and "Out of Memory" in r.error


def test_an_engine_out_of_memory_inside_the_cell_is_its_oom_with_the_engines_reason(tmp_path):
    """DuckDB refusing an allocation at its own memory_limit while the runner loads is the cell's oom (a fail of
    the engine at that memory, as an OOM kill is), not an error, and the diagnosis names the engine's limit."""
    from harness.results import load_result
    from harness.cell import execute
    from harness.scenario.plan import resolve_plan
    plan = resolve_plan("p99_5x", "duckdb", scale=0.01, mem="256m", results_root=tmp_path, data_root=tmp_path / "data",
                        overrides=["engines.duckdb.memory_limit=8MB", "load.method=organic"])
    assert execute(plan) == 3
    run_dir = tmp_path / plan.run_id
    r = load_result(run_dir / "result.json")
    assert r.status == "oom" and r.error.startswith("the engine ran out of memory: OutOfMemoryException"), r.error
    rec = CellRecord(cell_id="x", scenario="p99_5x", engine="duckdb", mem="256m", data_limit_bytes=256 << 20, scale=0.01,
                     runtime="local", dir=plan.run_id, state="complete", status="oom")
    said = answer.diagnose(rec, run_dir)
    # a memory_limit set by hand is no sized cache, so the diagnosis names MEM (sized cells name the engine's share)
    assert said.startswith("memory: the engine ran out of memory within MEM 256") and "Out of Memory" in said, said
    assert answer.at_mem([rec]) == "fail"


def test_a_windowed_percentile_over_too_few_blocks_says_it_is_the_max():
    from harness.runner.judge import window_note
    from harness.scenario.plan import resolve_plan
    from harness.scenario.thresholds import parse_threshold
    t = parse_threshold("p99(commit_ms) over 60s < 500")
    ratio = resolve_plan("reorg", "sqlite", profile="ratio")                      # 2 s blocks: 30 a window
    assert "30 blocks" in window_note(t, ratio) and "each window's max" in window_note(t, ratio)
    fine = ratio.model_copy(update={"workload": ratio.workload.model_copy(update={"block_interval_ms": 500})})
    assert window_note(t, fine) is None                                           # 120 a window
    some = ratio.model_copy(update={"workload": ratio.workload.model_copy(update={"block_interval_ms": 1000})})
    assert "2nd largest" in window_note(t, some)                                  # 60: rank 59
    assert window_note(parse_threshold("p99(commit_ms) < 500"), ratio) is None


def _tuned_tree():
    tree = load_decision()     # its sqlite step's options, in another order than their cost
    first = tree.steps[0].model_copy(update={"tune": ["no_bitemporal", "mmap", "autockpt_off_passive"]})
    return tree.model_copy(update={"steps": [first, *tree.steps[1:]]})


def test_a_failing_step_tries_its_options_cheapest_first_and_answers_with_the_one_that_passes(tmp_path):
    walk = fake_walk(tmp_path, {("sqlite", "4g"): "failed", ("sqlite", "4g", "autockpt_off_passive"): "passed",
                                ("sqlite", "2g"): "failed"}, tree=_tuned_tree())
    walk.run()
    screen_trade_offs(walk)
    tried = [t for e, m, *t in walk.ran if m == "4g" and t]
    assert tried == [["mmap"], ["autockpt_off_passive"]], "no trade-off once an option that gives nothing up passed"
    ans = {a.mem: a for a in answer.answers(walk.tree, MEMS, walk.matrix, lambda m: None)}
    assert ans["4g"].engine == "sqlite" and ans["4g"].tuned_with.startswith("wal_autocheckpoint off")
    assert ans["4g"].decision == "Stay with SQLite with " + ans["4g"].tuned_with
    two = next(c for c in walk.matrix if c.engine == "sqlite" and c.mem == "2g")
    assert two.outcome == "fail" and two.tried == ["autockpt_off_passive", "no_bitemporal"], "mmap failed at 4g"
    assert "implied failed: mmap (failed at 4g): no option was enough" in two.diagnosis
    assert ans["2g"].engine == "libsql"


def test_a_trade_off_that_passes_is_screened_once_never_confirmed_nor_carried_down(tmp_path):
    """Giving up history passes at 4g: it is screened there, once, on the first criterion (a trade-off is never
    the answer, so it never costs what an answer costs), named as a trade-off, and never run at 2g or 1g, where
    SQLite is implied failed with every option."""
    walk = fake_walk(tmp_path, {("sqlite", m): "failed" for m in MEMS} | {("sqlite", "4g", "no_bitemporal"): "passed"},
                     tree=_tuned_tree())
    walk.confirmations = lambda *a, **k: pytest.fail("a trade-off was confirmed")
    walk.run()
    screen_trade_offs(walk)
    ans = {a.mem: a for a in answer.answers(walk.tree, MEMS, walk.matrix, lambda m: None)}
    assert ans["4g"].engine == "libsql" and ans["4g"].trade_offs == [
        "sqlite: no bi-temporality (the simple schema, 6 indexes) (gives up history: no version survives its update; "
        f"passed p99_5x, screened over {walk.tree.screen_blocks} blocks, one run)"]
    screened = [x for x in walk.labels if x[2] == "no_bitemporal"]
    assert screened == [("sqlite", "4g", "no_bitemporal", f"screened over {walk.tree.screen_blocks} blocks")]
    assert not [x for x in walk.ran if x[0] == "sqlite" and x[1] != "4g"], "nothing of sqlite's runs below 4g"
    assert ans["2g"].trade_offs == [] and ans["1g"].trade_offs == []


def test_a_trade_off_is_screened_after_the_answer_and_only_within_the_walks_budget(tmp_path):
    """SQLite fails at 4g with every option that gives nothing up: its trade-off is not screened then (the walk goes
    on to libSQL first), but after it. With a budget it cannot fit in, it is never run and the answer says so."""
    from harness.scenario.decision import Costs
    tree = _tuned_tree()
    costs = Costs(state={"sqlite": 1}, fail=1, screen=5, full={}, measured="a test's", walk_budget=4)
    tree = tree.model_copy(update={"estimate": tree.estimate.model_copy(update={"minutes": {"smoke": costs}})})
    walk = fake_walk(tmp_path, {("sqlite", m): "failed" for m in MEMS} | {("sqlite", "4g", "no_bitemporal"): "passed"},
                     tree=tree)
    walk.opts = replace(walk.opts, profile="smoke")
    walk.run()
    assert [p[1:] for p in walk.pending] == [("4g", "no_bitemporal")] and not [x for x in walk.ran if x[2:]
                                                                              == ("no_bitemporal",)]
    assert any(x[0] == "libsql" for x in walk.ran), "libSQL was walked before the trade-off's screen"
    screen_trade_offs(walk)
    assert not [x for x in walk.ran if "no_bitemporal" in x], "5 min of screen do not fit in a 4 min budget"
    four = next(c for c in walk.matrix if c.engine == "sqlite" and c.mem == "4g")
    assert "no_bitemporal" not in four.tried and len(four.unscreened) == 1
    assert "not screened" in four.unscreened[0] and "budget of 4 min" in four.unscreened[0]
    ans = {a.mem: a for a in answer.answers(walk.tree, MEMS, walk.matrix, lambda m: None)}
    assert ans["4g"].trade_offs == [f"sqlite: {four.unscreened[0]}"]


def test_tune_stops_at_the_first_option_that_passes_and_gives_nothing_up(tmp_path):
    """Two options that give nothing up would pass at 4g: the cheaper one answers, the other never runs, and
    tuned_with names the one that ran (it once named the last that passed, and ran every option)."""
    from harness.scenario.matrix import load_matrix
    tree = load_decision()
    first = tree.steps[0].model_copy(update={"tune": ["ckpt_background_256m", "autockpt_off_passive", "no_bitemporal"]})
    tree = tree.model_copy(update={"steps": [first, *tree.steps[1:]]})
    walk = fake_walk(tmp_path, {("sqlite", "4g"): "failed", ("sqlite", "4g", "autockpt_off_passive"): "passed",
                                ("sqlite", "4g", "ckpt_background_256m"): "passed"}, tree=tree)
    walk.run()
    screen_trade_offs(walk)
    opts = load_matrix().engines["sqlite"].options
    cheaper = min(["ckpt_background_256m", "autockpt_off_passive"], key=lambda n: opts[n].cost)
    assert [t for e, m, *t in walk.ran if m == "4g" and t] == [[cheaper]]
    cell = next(c for c in walk.matrix if c.engine == "sqlite" and c.mem == "4g")
    assert cell.tuned_with == opts[cheaper].says and cell.tried == [cheaper] and cell.passed_options == [cheaper]


def test_what_failed_above_is_not_run_again_below_where_an_option_passed(tmp_path):
    """SQLite's own settings fail at 4g and its cheaper option passes there, so SQLite is walked at 2g: its own
    settings are implied failed there (a failure above implies one below), not run. At 2g the cheaper option
    fails and the other passes; at 1g only the other runs."""
    from harness.scenario.matrix import load_matrix
    tree = load_decision()
    first = tree.steps[0].model_copy(update={"tune": ["ckpt_background_256m", "autockpt_off_passive"]})
    tree = tree.model_copy(update={"steps": [first, *tree.steps[1:]]})
    opts = load_matrix().engines["sqlite"].options
    cheaper, other = sorted(["ckpt_background_256m", "autockpt_off_passive"], key=lambda n: opts[n].cost)
    walk = fake_walk(tmp_path, {("sqlite", m): "failed" for m in MEMS} | {
        ("sqlite", "4g", cheaper): "passed", ("sqlite", "2g", other): "passed", ("sqlite", "1g", other): "passed"},
        tree=tree)
    walk.run()
    assert [x for x in walk.ran if x[0] == "sqlite"] == [
        ("sqlite", "4g"), ("sqlite", "4g", cheaper), ("sqlite", "2g", cheaper), ("sqlite", "2g", other),
        ("sqlite", "1g", other)]
    cells = {c.mem: c for c in walk.matrix if c.engine == "sqlite"}
    assert all(c.outcome == "pass" for c in cells.values())
    assert cells["2g"].diagnosis == "its own settings: implied by their failure at 4g"
    assert cells["1g"].tried == [other] and cells["1g"].tuned_with == opts[other].says
    assert walk.steps[0].cells_unrun == 2 * len(walk.criteria), "its own settings at 2g and 1g"


def test_an_option_that_failed_above_is_named_implied_where_no_option_passes_below(tmp_path):
    from harness.scenario.matrix import load_matrix
    tree = load_decision()
    first = tree.steps[0].model_copy(update={"tune": ["ckpt_background_256m", "autockpt_off_passive"]})
    tree = tree.model_copy(update={"steps": [first, *tree.steps[1:]]})
    opts = load_matrix().engines["sqlite"].options
    cheaper, other = sorted(["ckpt_background_256m", "autockpt_off_passive"], key=lambda n: opts[n].cost)
    walk = fake_walk(tmp_path, {("sqlite", m): "failed" for m in MEMS} | {("sqlite", "4g", other): "passed"},
                     tree=tree)
    walk.run()
    cells = {c.mem: c for c in walk.matrix if c.engine == "sqlite"}
    assert cells["2g"].outcome == "fail" and cells["2g"].tried == [other]
    assert cells["2g"].diagnosis == (f"its own settings: implied by their failure at 4g; tried {other}; implied "
                                     f"failed: {cheaper} (failed at 4g): no option was enough")
    assert cells["1g"].outcome == "implied", "every option failed at 2g or above: the engine is implied below"


@pytest.mark.slow
def test_a_real_verdict_tries_the_steps_options_and_answers_with_the_one_that_passes(tmp_path):
    """For real, at smoke scale: a criterion SQLite misses at its stock checkpointing (the WAL grows to
    wal_autocheckpoint's 10,000 pages) and meets with SQLite's own default of 1,000; the option that drops
    history is not run once a clean one passed, and the answer names the option."""
    tree = {"steps": [{"engine": "sqlite", "decision": "Stay with SQLite", "tune": ["no_bitemporal", "autockpt_1000"]}],
            "otherwise": "revisit", "mems": {"smoke": ["256m"]},
            "criteria": [{"name": "a small WAL", "scenario": "p99_5x", "thresholds": ["max(wal_bytes) < 12MB"],
                          "target": {"scale": 0.001, "measure_s": 10}}]}
    p, v = run_tree(tmp_path, tree, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    [ans] = v["answers"]
    assert ans["engine"] == "sqlite" and ans["tuned_with"] == "wal_autocheckpoint=1000"
    assert ans["decision"] == "Stay with SQLite with wal_autocheckpoint=1000"
    [cell] = v["matrix"]
    assert cell["tried"] == ["autockpt_1000"] and cell["outcome"] == "pass"
    assert any(c["status"] == "failed" for c in v["steps"][0]["cells"]), "the policy's settings missed it first"


@pytest.mark.slow(seconds=40)
def test_drop_states_removes_the_states_a_steps_tuned_cells_cloned(tmp_path):
    """--drop-states after a step: its own state and the one its option with a layout of its own (the simple
    schema) built and cloned; at 1x each is 8-23 GB, and a walk over four engines left two behind."""
    tree = {"steps": [{"engine": "sqlite", "decision": "Stay with SQLite", "tune": ["no_bitemporal"]}],
            "otherwise": "revisit", "mems": {"smoke": ["256m"]},
            "criteria": [{"name": "no WAL", "scenario": "p99_5x", "thresholds": ["max(wal_bytes) < 1KB"],
                          "target": {"scale": 0.001, "measure_s": 4}}]}
    states = tmp_path / "states"
    p, v = run_tree(tmp_path, tree, 600, "--drop-states", env={**os.environ, "STATES": str(states)})
    assert v is not None and v["matrix"][0]["tried"] == ["no_bitemporal"], p.stderr[-3000:]
    dropped = re.findall(r"dropped the state (\S+)", p.stderr)
    assert sorted(d.split("-")[1] for d in dropped) == ["bitemporal", "simple"], p.stderr[-3000:]
    assert store.listing(states) == [], "no state left behind"


def test_an_engine_out_of_memory_at_its_policy_tries_its_options_too(tmp_path):
    """An out-of-memory cell is a failure an option can mend (fewer indexes, a smaller cache), so the step's
    options run there as after missed thresholds."""
    walk = fake_walk(tmp_path, {("sqlite", "4g"): "oom", ("sqlite", "4g", "autockpt_off_passive"): "passed",
                                ("sqlite", "2g"): "oom"}, tree=_tuned_tree())
    walk.run()
    assert [t for e, m, *t in walk.ran if m == "4g" and t] == [["mmap"], ["autockpt_off_passive"]]
    ans = {a.mem: a for a in answer.answers(walk.tree, MEMS, walk.matrix, lambda m: None)}
    assert ans["4g"].engine == "sqlite" and ans["4g"].tuned_with.startswith("wal_autocheckpoint off")


def _expecting(tree, *passes: str):
    """The tree with decision.yaml's estimate expecting these to pass (the leaf's walking direction follows it)."""
    return tree.model_copy(update={"estimate": tree.estimate.model_copy(update={"passes": list(passes), "passes_at_largest": []})})


def _untuned():
    tree = load_decision()
    return tree.model_copy(update={"steps": [s.model_copy(update={"tune": []}) for s in tree.steps]})


def test_the_leaf_follows_the_tree_and_walks_each_design_in_the_direction_its_expected_outcome_settles(tmp_path):
    """SQLite passes at 4g; every engine fails at 2g and 1g. The leaf's designs run at 2g and 1g only, in the
    tree's order (sqlite's designs before postgres's), cheapest first. A design expected to fail is walked from
    the largest open MEM down (block_log: fails at 2g, implied at 1g); one expected to pass from the smallest up
    (current_history: fails at 1g, passes at 2g and answers there); after it only 1g is open."""
    from harness.walks.verdict.leaf import designs_in_order, run_leaf, with_leaf
    fails = {(e, m): "failed" for e in ("sqlite", "libsql", "postgres", "duckdb") for m in ("2g", "1g")}
    tree = _expecting(_untuned(), "sqlite/leaf-current_history")
    designs = {**tree.leaf.designs, "sqlite": ["block_log", "current_history", "current_history_block_log"]}
    tree = tree.model_copy(update={"leaf": tree.leaf.model_copy(update={"designs": designs})})
    walk = fake_walk(tmp_path, {**fails, ("sqlite", "2g", "leaf-current_history"): "passed"}, tree=tree)
    walk.run()
    before = len(walk.ran)
    leaf = run_leaf(walk)
    ran = walk.ran[before:]
    assert ran and all(mem in ("2g", "1g") for _, mem, _ in ran), "no design runs where an engine passed"
    order = designs_in_order(walk.tree)
    engines = [e for e, _ in order]
    assert engines == sorted(engines, key=["sqlite", "libsql", "postgres", "duckdb"].index), "the tree's order"
    assert order[:2] == [("sqlite", "block_log"), ("sqlite", "current_history")]
    assert ran[:3] == [("sqlite", "2g", "leaf-block_log"), ("sqlite", "1g", "leaf-current_history"),
                       ("sqlite", "2g", "leaf-current_history")]
    assert all(m == "1g" for _, m, _ in ran[3:]), "2g has its answer: only 1g is walked on"
    implied = next(c for c in leaf if c.design == "block_log" and c.mem == "1g")
    assert implied.outcome == "implied" and implied.implied_from == "2g"
    ans = {a.mem: a for a in with_leaf(answer.answers(walk.tree, MEMS, walk.matrix, lambda m: None), leaf)}
    assert ans["4g"].engine == "sqlite" and ans["4g"].leaf is None
    assert ans["2g"].status == "answered" and ans["2g"].design == "sqlite: current_history"
    assert ans["2g"].decision.startswith("Deploy sqlite with current ∪ history")
    assert "no engine as deployed" in ans["2g"].leaf
    assert ans["1g"].design is None and "no design passes: closest" in ans["1g"].leaf


def test_an_engines_leaf_states_go_only_once_a_later_engines_designs_run(tmp_path):
    """Where SQLite's designs answer every level, its states stay for the implication controls and the closest
    alternative (the 12-06 walk dropped them, then built them again for a control); where a level stays open, they go
    before PostgreSQL's designs run, to make room for them."""
    from harness.walks.verdict.leaf import run_leaf
    fails = {(e, m): "failed" for e in ("sqlite", "libsql", "postgres", "duckdb") for m in MEMS}
    design = "current_history_block_log"
    dropped = []
    walk = fake_walk(tmp_path / "a", {**fails, ("sqlite", "1g", f"leaf-{design}"): "passed"},
                     tree=_expecting(_untuned(), f"sqlite/leaf-{design}"))
    walk.run()
    before = len(walk.ran)
    run_leaf(walk, dropped.append)
    assert dropped == [] and not any(r[0] == "postgres" for r in walk.ran[before:])
    walk = fake_walk(tmp_path / "b", fails, tree=_expecting(_untuned()))
    walk.run()
    before = len(walk.ran)
    run_leaf(walk, lambda e: dropped.append((e, len(walk.ran))))
    first_postgres = next(i for i, r in enumerate(walk.ran) if i >= before and r[0] == "postgres")
    assert dropped == [("sqlite", first_postgres)] and first_postgres > before


def test_a_design_that_passes_at_the_smallest_mem_is_implied_above_and_one_implied_cell_each_way_is_measured(tmp_path):
    """Every engine fails everywhere; current ∪ history with background checkpoints, expected to pass, passes at 1g:
    it answers at 2g and 4g too, implied, not run.
    The implication controls measure one implied failure (sqlite's own at 2g, below its failure at 4g) and one
    implied pass (the design at 2g, screened), once each, and say whether each agreed."""
    from harness.walks.verdict.controls import implication_controls
    from harness.walks.verdict.leaf import run_leaf, with_leaf
    fails = {(e, m): "failed" for e in ("sqlite", "libsql", "postgres", "duckdb") for m in MEMS}
    design = "current_history_ckpt_background"
    walk = fake_walk(tmp_path, {**fails, **{("sqlite", m, f"leaf-{design}"): "passed" for m in MEMS},
                                ("sqlite", "2g", f"implied-{design}"): "passed"},
                     tree=_expecting(_untuned(), f"sqlite/leaf-{design}"))
    walk.run()
    leaf = run_leaf(walk)
    ran = [(m, t) for e, m, *t in walk.ran if t == [f"leaf-{design}"]]
    assert ran == [("1g", [f"leaf-{design}"])], "measured at the smallest MEM only"
    ans = {a.mem: a for a in with_leaf(answer.answers(walk.tree, MEMS, walk.matrix, lambda m: None), leaf)}
    assert all(a.design == f"sqlite: {design}" for a in ans.values())
    assert "implied by its pass at 1g" in ans["4g"].leaf and "implied" not in ans["1g"].leaf
    below, above = implication_controls(walk, leaf)
    assert (below.engine, below.mem, below.implied_from, below.expected) == ("sqlite", "2g", "4g", "fail")
    assert below.outcome == "failed" and below.agreed is True
    assert (above.what, above.mem, above.implied_from, above.expected) == (design, "2g", "1g", "pass")
    assert above.outcome == "passed" and above.agreed is True
    # the implied failure runs as its criteria come; the implied pass is screened (a full phase is an answer's cost)
    assert [x[3] for x in walk.labels if x[2].startswith("implied-")] == ["control", "control, screened over 60 blocks"]
    from harness.walks.verdict.controls import with_controls
    told = {a.mem: a for a in with_controls(list(ans.values()), [below, above])}
    assert "measured here by its implication control (control, screened over 60 blocks): passed" in told["2g"].leaf
    assert "implication control" not in told["4g"].leaf, "4g was implied, and no control ran there"


def test_the_estimate_of_a_walk_is_the_cells_that_walk_then_runs(tmp_path):
    """The estimate plays the walk with the outcomes it expects; given the outcomes the cells will have, it counts
    the cells the walk then runs (steps, tune options, trade-off screens, the libSQL control, the leaf, the
    implication controls), each at its measured minutes."""
    from harness.scenario.decision import Costs
    from harness.walks.verdict.controls import implication_controls
    from harness.walks.verdict.estimate import play
    from harness.walks.verdict.leaf import run_leaf
    passes = {"sqlite/no_bitemporal", "postgres/leaf-block_log"}
    tree = _expecting(_tuned_tree(), *sorted(passes))
    outcomes = {**{("sqlite", m): "failed" for m in MEMS}, ("sqlite", "4g", "no_bitemporal"): "passed",
                ("libsql", "4g"): "failed", ("postgres", "4g"): "failed", ("duckdb", "4g"): "failed",
                ("postgres", "1g", "leaf-block_log"): "passed"}
    cells = []
    walk = fake_walk(tmp_path, outcomes, tree=tree)
    inner = walk.engine_at
    walk.engine_at = lambda *a, **k: cells.extend(r := inner(*a, **k)) or r
    costs = Costs(state={"sqlite": 10, "libsql": 1, "postgres": 12, "duckdb": 5}, fail=4, screen=6,
                  full={"p99_5x": 15, "reorg": 15, "crash": 5}, measured="a test's")
    tally = play(fake_walk(tmp_path, {}, tree=tree), passes, costs)
    walk.run()
    implication_controls(walk, run_leaf(walk))
    screen_trade_offs(walk)
    assert tally.cells == len(cells) > 0
    labels = {}
    for c in cells:
        labels[c.label] = labels.get(c.label, 0) + 1
    assert tally.by_label == labels
    # sqlite at its own, the simple and the current ∪ history schemas; libsql none (it opens sqlite's, aged too);
    # postgres at its own and the simple schema (its block log keeps its own); duckdb at its own only: built without
    # its secondary indexes, aged, then indexed (capabilities.indexes_after_ageing), its trade-off's layout is on disk
    assert tally.state_minutes == 3 * 10 + 2 * 12 + 1 * 5
    # a layout with minutes of its own (engine/option) costs those, wherever the walk first needs it
    own = play(fake_walk(tmp_path, {}, tree=tree), passes,
               costs.model_copy(update={"state": {**costs.state, "sqlite/current_history": 3}}))
    assert own.state_minutes == tally.state_minutes - 10 + 3
    assert tally.minutes > tally.state_minutes
    # where each step's states are dropped after it (DROP_STATES, or a disk too small), sqlite's own stay (libsql
    # opens them, the leaf's first engine clones them: the 11-29 walk rebuilt them, 4.7 min), postgres's go after
    # its step, so its block log in the leaf builds them again; duckdb's go too, and its trade-off, screened after
    # the answer, builds them again
    dropping = play(fake_walk(tmp_path, {}, tree=tree), passes, costs, drop_states=True)
    assert dropping.state_minutes == tally.state_minutes + 12 + 5
    assert dropping.cells == tally.cells
    # a leaf design behind a block log that fails costs its own minutes (its lag piles up before the stop); any
    # other failure, a step's or a design's without a log, the fail's
    failed_designs = sum(c.status == "failed" and "-leaf-" in c.dir and "block_log" in c.dir for c in cells)
    assert any(c.status == "failed" and "-leaf-current_history-" in c.dir for c in cells)
    slow = play(fake_walk(tmp_path, {}, tree=tree), passes, costs.model_copy(update={"design_fail": 9}))
    assert failed_designs > 0 and slow.minutes == tally.minutes + (9 - 4) * failed_designs


def test_a_design_expected_to_pass_at_the_largest_mem_only_is_estimated_as_the_walk_runs_it(tmp_path):
    """The 11-29 walks: a block log passed every criterion at the largest MEM and failed below it, which an
    estimate of 'passes everywhere' or 'fails everywhere' could not say (it printed 147 min for a walk of ~190).
    Named in passes_at_largest, the played walk runs the design as the walk does: from the smallest MEM up (it is
    expected to pass somewhere), a failure at each level below the largest and its every criterion there."""
    from harness.scenario.decision import Costs
    from harness.walks.verdict.controls import implication_controls
    from harness.walks.verdict.estimate import play
    from harness.walks.verdict.leaf import run_leaf
    tree = _untuned()
    tree = tree.model_copy(update={"estimate": tree.estimate.model_copy(
        update={"passes": [], "passes_at_largest": ["sqlite/leaf-block_log"]})})
    outcomes = {**{(e, m): "failed" for e in ("sqlite", "libsql", "postgres", "duckdb") for m in MEMS},
                ("sqlite", "4g", "leaf-block_log"): "passed"}
    cells = []
    walk = fake_walk(tmp_path, outcomes, tree=tree)
    inner = walk.engine_at
    walk.engine_at = lambda *a, **k: cells.extend(r := inner(*a, **k)) or r
    costs = Costs(state={}, fail=4, screen=6, full={"p99_5x": 15, "reorg": 15, "crash": 5}, measured="a test's")
    tally = play(fake_walk(tmp_path, {}, tree=tree), set(), costs, at_largest={"sqlite/leaf-block_log"})
    walk.run()
    implication_controls(walk, run_leaf(walk))
    screen_trade_offs(walk)
    assert tally.cells == len(cells) > 0
    log = [(c.mem, c.status) for c in cells if c.dir.startswith("sqlite-leaf-block_log-")]
    assert log == [("1g", "failed"), ("2g", "failed")] + [("4g", "passed")] * len(walk.criteria), log
    # each cell the walk ran at its kind's minutes: a pass in full, a screen (a reorg behind the log is one: its
    # criterion's behind_a_log), anything else a failure stopped early
    screened = lambda c: (c.label or "").startswith("screened") or (c.scenario == "reorg" and "block_log" in c.dir)  # noqa: E731
    spent = sum(costs.screen if screened(c) else costs.full[c.scenario] if c.status == "passed" else costs.fail
                for c in cells)
    assert tally.minutes == spent, [(c.dir, c.label, c.status) for c in cells]


def test_a_design_that_passes_at_two_levels_runs_in_full_once_and_the_larger_is_implied(tmp_path):
    """The 11-29 fifth sitting: SQLite's block log passed at 2568m far from every line (applier busy 68%), where it
    also passes at 5137m. Walked down from the largest MEM, as a design expected to pass at the largest only was,
    it ran in full at both (2 x 33 min at ratio); walked up, its pass at 2568m implies 5137m's."""
    from harness.walks.verdict.leaf import run_leaf
    tree = _untuned()
    tree = tree.model_copy(update={"estimate": tree.estimate.model_copy(
        update={"passes": [], "passes_at_largest": ["sqlite/leaf-block_log"]})})
    outcomes = {**{(e, m): "failed" for e in ("sqlite", "libsql", "postgres", "duckdb") for m in MEMS},
                ("sqlite", "4g", "leaf-block_log"): "passed", ("sqlite", "2g", "leaf-block_log"): "passed"}
    cells = []
    walk = fake_walk(tmp_path, outcomes, tree=tree)
    inner = walk.engine_at
    walk.engine_at = lambda *a, **k: cells.extend(r := inner(*a, **k)) or r
    walk.run()
    leaf = run_leaf(walk)
    ran = [(c.mem, c.status) for c in cells if c.dir.startswith("sqlite-leaf-block_log-")]
    assert ran == [("1g", "failed")] + [("2g", "passed")] * len(walk.criteria), ran
    at_4g = [c for c in leaf if c.design == "block_log" and c.mem == "4g"]
    assert [(c.outcome, c.implied_from, c.cells) for c in at_4g] == [("pass", "2g", [])]


def test_the_cells_a_walk_announces_bound_what_its_worst_case_runs(tmp_path):
    """Every engine fails everywhere, every option and design too, and every cell is a close call run three
    times: the walk runs its worst case, which must stay within the 'at most' it printed up front. The bound
    once counted each step's own settings only; with the tune options and the leaf's designs a ratio walk runs
    several times that, so its ETA promised an hour for a walk of many."""
    from harness.walks.verdict.leaf import run_leaf
    tree = load_decision()
    walk = fake_walk(tmp_path, {(e, m): "failed" for e in ("sqlite", "libsql", "postgres", "duckdb") for m in MEMS},
                     all_cells=True, tree=tree)
    announced = walk.cells_at_most()
    walk.run()
    run_leaf(walk)
    runs = tree.confirm.runs
    worst = len(walk.ran) * len(walk.criteria) * runs
    assert 0 < worst <= announced
    steps_only = len(MEMS) * len(walk.criteria) * len(tree.steps)
    assert worst > steps_only * runs, "the tune options and the leaf's designs are counted"


def test_a_walk_whose_states_do_not_all_fit_drops_them_after_each_step_on_its_own(monkeypatch):
    """`make verdict PROFILE=ratio` on a disk that cannot hold every 1x state (~160 GiB) once refused to start
    unless DROP_STATES=1 was given; it now drops each engine's states after its step, and says so."""
    from harness import cell_states
    from harness.errors import ConfigError
    from harness.walks.verdict import fit_disk
    asked = []

    def check(plans, drop, who, skip_later=False):
        asked.append(drop)
        if not drop:
            raise ConfigError("the verdict needs about 161.2 GiB and 52.0 GiB are free")
    monkeypatch.setattr(cell_states, "check_walk_disk", check)
    assert fit_disk([], False) is True and asked == [False, True]
    monkeypatch.setattr(cell_states, "check_walk_disk", lambda *a, **k: None)
    assert fit_disk([], False) is False and fit_disk([], True) is True


def test_the_estimate_says_what_it_cannot_foresee_at_its_own_minutes(tmp_path):
    """A pass it did not expect, and a close call, each at the minutes the played walk would spend on them: the
    walk of 11-29's fourth sitting passed SQLite's first option at the largest MEM on a close call, where the
    estimate expected a failure (136 min expected)."""
    from harness.scenario.decision import Costs
    from harness.walks.verdict.estimate import estimate, play
    costs = Costs(state={}, fail=4, screen=6, full={"p99_5x": 15, "reorg": 13, "crash": 5}, measured="a test's")
    tree = _untuned()
    tree = tree.model_copy(update={"estimate": tree.estimate.model_copy(
        update={"passes": [], "passes_at_largest": [], "minutes": {"ratio": costs}})})
    e = estimate(fake_walk(tmp_path, {}, tree=tree), "ratio")
    # what one more pass at the largest MEM costs the played walk, less the failure it then causes one level down
    # (a design without a log: every criterion in full)
    surprised = play(fake_walk(tmp_path, {}, tree=tree), set(), costs, at_largest={"sqlite/leaf-current_history"})
    assert surprised.minutes - costs.fail == e.minutes + e.unexpected_pass_minutes
    assert e.close_call_minutes == (tree.confirm.runs - 1) * costs.full["p99_5x"]
    assert f"about {e.unexpected_pass_minutes:.0f} min more" in e.not_foreseen()
    bare = estimate(fake_walk(tmp_path, {}, tree=tree), "smoke")      # no minutes measured at that profile
    assert bare.unexpected_pass_minutes is None and bare.not_foreseen() == ""


def test_the_libsql_control_carries_the_option_libsql_passed_with(tmp_path):
    """libSQL passes at its own settings at 4g; at 2g it fails at them and passes with PASSIVE checkpoints, as at
    2568m in the walk of 11-29's fourth sitting. The control (SQLite at its newest release) runs SQLite's own settings
    at 4g and, like for like, the same option at 2g."""
    from harness.scenario.matrix import load_matrix
    from harness.walks.verdict import _control_note
    tree = _untuned()
    libsql = tree.steps[1].model_copy(update={"tune": ["autockpt_off_passive"]})
    tree = tree.model_copy(update={"steps": [tree.steps[0], libsql, *tree.steps[2:]]})
    walk = fake_walk(tmp_path, {("sqlite", m): "failed" for m in MEMS} | {
        ("libsql", "2g"): "failed", ("libsql", "2g", "autockpt_off_passive"): "passed", ("libsql", "1g"): "failed"},
        tree=tree)
    walk.run()
    control = walk.steps[1].control
    assert [x for x in walk.labels if x[3] == "control"] == [
        ("sqlite", "4g", "apsw-newest", "control"), ("sqlite", "2g", "apsw-newest-autockpt_off_passive", "control")]
    says = load_matrix().engines["sqlite"].options["autockpt_off_passive"].says
    assert control.set["library"] == "apsw-newest" and control.options == [says]
    assert f"and {says} did not pass the same cells" in _control_note(walk.steps[1])


def test_an_answer_tuned_on_a_close_call_says_k_of_n(tmp_path):
    """The walk of 11-29's fourth sitting answered 5137m with SQLite and PASSIVE checkpoints on a close call run
    3 times; the answer said neither 'passed 3 of 3' nor that it was a close call (the tuned cell lost its runs)."""
    tree = load_decision()
    first = tree.steps[0].model_copy(update={"tune": ["autockpt_off_passive"]})
    tree = tree.model_copy(update={"steps": [first, *tree.steps[1:]]})
    walk = fake_walk(tmp_path, {("sqlite", "4g"): "failed", ("sqlite", "4g", "autockpt_off_passive"): "passed"},
                     tree=tree)
    inner = walk.engine_at

    def with_confirmations(engine, settings, tag, mem, option=None, role=CANDIDATE):
        recs = inner(engine, settings, tag, mem, option, role)
        if tag == "autockpt_off_passive" and recs[0].status == "passed":       # its first criterion, run 3 times
            recs = [recs[0], *(recs[0].model_copy(update={"label": "confirmation"}) for _ in range(2)), *recs[1:]]
        return [r.model_copy(update={"criterion": r.scenario}) for r in recs]
    walk.engine_at = with_confirmations
    walk.run()
    ans = {a.mem: a for a in answer.answers(walk.tree, MEMS, walk.matrix, lambda m: None)}
    assert ans["4g"].tuned_with and ans["4g"].runs == ["p99_5x: passed 3 of 3"]



def test_a_block_the_engine_refuses_fails_the_cell_and_says_so(tmp_path):
    """DuckDB rejected a valid block at ratio 5137m (its ART indexes' limit on updates of indexed columns): an
    error, so the level was inconclusive and the leaf never ran there. A RefusedBlock is the cell's failure (the
    engine could not carry the workload), and the diagnosis says the engine refused it."""
    from harness.cell import execute
    from harness.errors import RefusedBlock, run_failure
    from harness.results import load_result
    from harness.scenario.plan import resolve_plan
    refused = RefusedBlock("ConstraintException: Constraint Error: Duplicate key\nIf this is unexpected ...")
    status, error = run_failure(refused)
    assert (status, error) == ("failed", "the engine refused a valid block: ConstraintException: Constraint Error: "
                                         "Duplicate key")
    assert run_failure(ValueError("x"))[0] == "error" and run_failure(KeyboardInterrupt()) == ("error", "interrupted")
    plan = resolve_plan("p99_5x", "duckdb", profile="smoke", mem="256m", results_root=tmp_path,
                        data_root=tmp_path / "data")
    assert execute(plan) in (0, 1)     # a real cell's result (its thresholds held or not), then as a refusal leaves it
    run_dir = tmp_path / plan.run_id
    r = load_result(run_dir / "result.json")
    (run_dir / "result.json").write_text(r.model_copy(update={"status": status, "error": error}).model_dump_json())
    rec = CellRecord(cell_id="x", scenario="p99_5x", engine="duckdb", mem="256m", data_limit_bytes=256 << 20,
                     scale=0.001, runtime="local", dir=plan.run_id, state="complete", status=status)
    assert answer.diagnose(rec, run_dir) == f"refused: {error}"
    assert answer.at_mem([rec]) == "fail"


def _slow_result(run_dir, commit_p99_ms: float, service_p99_ms: float):
    """A failed p99_5x cell whose median block alone takes 1,262 ms, its commit p99 from the due time given."""
    from harness.results import RunResult, write_json
    run_dir.mkdir(parents=True)
    r = RunResult.model_validate({
        "run_id": "c", "engine": "postgres", "scenario": "p99_5x", "profile": "ratio", "runtime": "local",
        "status": "failed", "scale": 1.0, "plan": {"workload": {"block_interval_ms": 2000}}, "environment": {},
        "memory": {"data_limit_bytes": 5137 << 20, "data_limit_bytes_seen": 5137 << 20},
        "thresholds": [{"expr": "p99(commit_ms) < 500", "value": commit_p99_ms, "passed": False}],
        "metrics": {"commit_latency_ms": {"count": 4, "p50": 1300, "p99": commit_p99_ms, "max": commit_p99_ms},
                    "service_time_ms": {"count": 4, "p50": 1262, "p99": service_p99_ms, "max": service_p99_ms},
                    "rows_per_s": 2936.0, "offered_rows_per_s": 6000.0}})
    write_json(run_dir / "result.json", r)
    (run_dir / "blocks.csv").write_text("commit_ms\n" + "\n".join(str(commit_p99_ms) for _ in range(4)) + "\n")
    return CellRecord(cell_id="x", scenario="p99_5x", engine="postgres", mem="5137m", data_limit_bytes=None,
                      scale=1.0, runtime="local", dir="c", state="complete", status="failed")


def test_a_slow_cell_whose_blocks_queued_is_not_diagnosed_within_the_cadence(tmp_path):
    """PostgreSQL's 5137m cell of 11-29: service p50 1,262 ms, commit p99 11,936 ms from the due time, 2,936 of 6,000
    rows/s committed, was diagnosed 'within the cadence (no queue)'. A commit p99 far past the service p99 is a queue."""
    queued = answer.diagnose(_slow_result(tmp_path / "q" / "c", 11935.7, 1900.0), tmp_path / "q" / "c")
    assert "no queue" not in queued and "a queue behind it: commit p99 11,936 ms" in queued
    assert "committed 2,936 of 6,000 rows/s" in queued
    flat = answer.diagnose(_slow_result(tmp_path / "f" / "c", 1400.0, 1350.0), tmp_path / "f" / "c")
    assert "within the cadence (no queue)" in flat


def test_every_engine_in_a_walk_runs_at_the_durability_the_walk_names(tmp_path):
    """decision.yaml's durability reaches every cell: each engine's matching setting in its resolved plan (the one
    the adapter applies and result.json's engine_settings read back), and a block log's fdatasync, the engine
    behind it keeping its own. DURABILITY= over the file's."""
    from harness import registry
    from harness.walks.verdict import prepare
    from harness.walks.verdict.walk import Walk
    for durability in ("commit", "checkpoint"):
        pre = prepare("smoke", ["256m"], CellOptions(runtime="local"), tmp_path / "r", here=False,
                      durability=None if durability == "commit" else durability)
        assert pre.tree.durability == durability and f"durability={durability}" in pre.opts.overrides
        walk = Walk(pre.tree, pre.mems, pre.criteria, pre.opts, tmp_path / "w")
        for step in pre.tree.steps:
            man = registry.manifest(step.engine)
            (run,) = walk.criterion_runs(pre.criteria[0], step.engine, step.set, "", "256m")[:1]
            if man.durability.setting:
                want = man.durability.select[durability]
                assert str(run.plan.engine_settings[man.durability.setting]) == want, (step.engine, durability)
            assert run.plan.durability == man.durability.guarantee(run.plan.engine_settings)
        from harness.scenario.matrix import load_matrix
        opt = load_matrix().engines["sqlite"].options["block_log"]
        (logged,) = walk.criterion_runs(pre.criteria[0], "sqlite", {}, "leaf-block_log", "256m", opt)[:1]
        assert logged.plan.block_log.sync is (durability == "commit")
        assert logged.plan.engine_settings["synchronous"] == registry.settings_model("sqlite")().synchronous


def test_a_capacity_step_counts_its_rows_where_the_offered_load_checks_every_row(tmp_path):
    """A capacity step is a screen of the load, as a knee's step is: its rows counted against the model's (the
    every-row scan and page map cost ~1.5-2.5 min of a passing 60-block screen on 12-02's host), where its
    configuration's cells at the offered load check every row."""
    walk = fake_walk(tmp_path, {})
    cp = walk.criteria[0]
    [offered] = walk.criterion_runs(cp, "sqlite", {}, "", "1g")
    [step] = walk.criterion_runs(cp, "sqlite", {}, "at-2.00x", "1g", screen_blocks=60, load=2.0)
    assert (offered.plan.integrity, step.plan.integrity) == ("model", "counts")
    assert step.plan.workload.block_interval_ms == offered.plan.workload.block_interval_ms / 2
