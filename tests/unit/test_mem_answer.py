"""A level's answer as the summary, the report and a published README write it: the leaf's design and the close
calls' k of n are part of it, so a reader of the published page is not told only that no engine passed."""
from harness.results.walks import MemAnswer


def test_a_level_answered_by_the_leaf_says_its_design_first_and_k_of_n():
    a = MemAnswer(mem="2568m", status="none", decision="Deploy sqlite with a block log in front",
                  runs=["p99_5x: passed 2 of 2"], design="sqlite: block_log",
                  leaf="acknowledgement p99 5 ms; no engine as deployed met the criteria here")
    assert a.in_full() == ("Deploy sqlite with a block log in front (a close call: p99_5x: passed 2 of 2): "
                           "acknowledgement p99 5 ms; no engine as deployed met the criteria here")
    no_design = MemAnswer(mem="1g", status="none", decision="No engine met the criteria", leaf="closest x")
    assert no_design.in_full() == "No engine met the criteria; the last leaf, measured: closest x"
    assert MemAnswer(mem="1g", status="answered", decision="sqlite").in_full() == "sqlite"


def test_the_answer_line_of_a_level_with_a_design_names_it_first_and_no_engine_met_nowhere(tmp_path):
    """with_leaf over a real tree's answers: the design that passed opens the line; the tree's 'otherwise' is gone."""
    from harness.results import LeafCell
    from harness.scenario.decision import load_decision
    from harness.walks.verdict.leaf import with_leaf
    tree = load_decision()
    none = MemAnswer(mem="2g", status="none", decision=tree.otherwise)
    leaf = [LeafCell(engine="sqlite", design="block_log", says="a block log in front", mem="2g", outcome="pass",
                     ack_p99_ms=5.2, lag_p99_blocks=1)]
    (a,) = with_leaf([none], leaf)
    line = a.in_full()
    assert line.startswith("Deploy sqlite with a block log in front"), line
    assert "No engine met" not in line and tree.otherwise not in line and "durable in 5 ms (acknowledgement p99)" in line and a.status == "answered"
