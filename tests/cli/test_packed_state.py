"""A packed state (harness/state/pack.py), for real: a cell of the smoke profile from a state kept packed unpacks a
full copy, passes its every-row check against the state's model, and leaves the state packed for the next cell."""
import pytest

from harness.state import pack, store
from tests.cli.test_cli_run import run_scenario

SMOKE = ["--scenario", "p99_5x", "--profile", "smoke", "--duration", "2"]


@pytest.mark.slow(seconds=40)
def test_a_cell_from_a_packed_state_unpacks_it_checks_every_row_and_leaves_it_packed(tmp_path, monkeypatch):
    monkeypatch.setenv(store.STATES_ENV, str(tmp_path / "states"))      # a state of its own: others clone theirs
    _, first, _, _ = run_scenario(tmp_path / "a", *SMOKE)
    assert first["load"]["clone_method"] == "copy" and first["load"]["state_built_now"] is True
    state = tmp_path / "states" / first["load"]["state"]
    done = pack.pack(state)
    assert done.packed_bytes < done.data_bytes and pack.is_packed(state)
    for run in ("b", "c"):
        _, r, _, err = run_scenario(tmp_path / run, *SMOKE)
        assert r["load"]["clone_method"] == "unpack" and r["load"]["state_built_now"] is False, err[-2000:]
        assert r["load"]["clone_bytes"] == done.data_bytes
        assert r["integrity"]["ok"] is True and r["integrity"]["method"] == "model", r["error"]
        assert pack.is_packed(state), "the state stays packed for the next cell"
