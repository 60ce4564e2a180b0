"""A level's answer as the summary, the report and a published README write it: the leaf's design and the close
calls' k of n are part of it, so a reader of the published page is not told only that no engine passed."""
from harness.results.walks import MemAnswer


def test_a_level_answered_by_the_leaf_says_its_design_and_k_of_n():
    a = MemAnswer(mem="2568m", status="none", decision="No engine met the criteria", runs=["p99_5x: passed 2 of 2"],
                  design="block_log", leaf="sqlite with a block log in front passes: acknowledgement p99 5 ms")
    assert a.in_full() == ("No engine met the criteria (a close call: p99_5x: passed 2 of 2); the last leaf, measured: "
                           "sqlite with a block log in front passes: acknowledgement p99 5 ms")
    assert MemAnswer(mem="1g", status="answered", decision="sqlite").in_full() == "sqlite"
