"""An aged starting state (harness/state/aged.py), for real: aged once, cloned by a cell of another cache
setting without ageing again, its rows verified; a page size of its own ages its own."""
import pytest

from tests.cli.test_cli_run import run_scenario

AGE = ["--scenario", "p99_5x", "--profile", "smoke", "--duration", "2", "--set", "load.aged_state=true",
       "--set", "load.age_blocks=8"]


@pytest.mark.slow(seconds=70)
def test_an_aged_state_is_aged_once_and_cloned_by_a_cell_of_another_cache(tmp_path):
    _, first, _, err1 = run_scenario(tmp_path / "a", *AGE)
    _, second, _, err2 = run_scenario(tmp_path / "b", *AGE, "--set", "engines.sqlite.cache_size=2MB")
    _, paged, _, _ = run_scenario(tmp_path / "c", *AGE, "--set", "engines.sqlite.page_size=8192")
    for r in (first, second, paged):
        assert r["integrity"]["ok"] is True and r["integrity"]["method"] == "model", r["error"]
        load = r["load"]
        assert load["state_aged_blocks"] == 8 and load["age_blocks"] == 0, "aged in the state, not in the cell"
        assert "-aged8-" in load["state"]
    assert "[state] ageing" in err1 and first["load"]["state_built_now"] is True
    assert second["load"]["state"] == first["load"]["state"] and second["load"]["state_built_now"] is False
    assert "[state] ageing" not in err2 and "[p99_5x/sqlite] ageing" not in err2
    assert paged["load"]["state"] != first["load"]["state"]
