"""A disk check that would refuse on the shape's guess measures the state first (harness/state/probe.py): the
same layout at a tenth of its entities, a real SQLite build, its bytes per entity kept, the probe gone. On a
fresh clone the guess (3 bytes per logical byte) refused a 5x state the disk held."""
import re

import pytest

from harness import cell_states as cs
from harness.errors import ConfigError
from harness.scenario.plan import resolve_plan
from harness.state import sizes, store


def _plan():
    return resolve_plan("p99_5x", "sqlite", profile="smoke", scale=0.01)       # 8,000 entities, 200k rows


def test_a_check_refused_on_the_guess_measures_the_state_and_decides_on_the_measure(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("STATES", str(tmp_path / "states"))
    root, plan = tmp_path / "states", _plan()
    inputs = store.inputs_for(plan)
    assert sizes.is_guess(root, inputs)
    guessed = cs._need([plan], root, True, True).taking
    free = int(guessed * 0.8) + cs.MARGIN           # the guess does not fit; a third of it would
    monkeypatch.setattr(store, "free_bytes", lambda path: free)
    try:
        cs.check_walk_disk([plan], True, "run", takes=True)
        fitted = True
    except ConfigError as e:
        fitted = False
        assert "the run needs about" in str(e), e
    err = capsys.readouterr().err
    assert f"measuring it at {inputs.entities // sizes.NEAR_SHARE} entities" in err, err
    assert not sizes.is_guess(root, inputs), "the probe's bytes per entity size the state now"
    measured = cs._need([plan], root, True, True).taking
    assert measured < guessed, (measured, guessed)          # the guess errs high
    assert fitted == (measured + cs.MARGIN <= free)
    assert store.listing(root) == [], "the probe went once measured"
    said = [float(x) for x in re.findall(r"\[run\] disk: needs about ([\d.]+) GiB", err)]
    assert said == [pytest.approx(measured / cs.GIB, abs=0.06)], err


def test_a_need_no_measure_could_fit_is_refused_without_building(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("STATES", str(tmp_path / "states"))
    root, plan = tmp_path / "states", _plan()
    guessed = cs._need([plan], root, True, True).taking
    monkeypatch.setattr(store, "free_bytes", lambda path: guessed // 4)     # below even its logical bytes
    with pytest.raises(ConfigError, match=r"the run needs about .* GiB"):
        cs.check_walk_disk([plan], True, "run", takes=True)
    assert "measuring it" not in capsys.readouterr().err
    assert not root.exists() or not any(root.iterdir()), "nothing built"
