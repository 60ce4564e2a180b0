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


def test_a_dc_beside_mendoza_is_measured_in_two_probes_and_sized_by_both(tmp_path, monkeypatch, capsys):
    """hour_checked's state (mendoza and a DC seed whose payloads are 10 KiB): each part probed alone at a tenth,
    each kept in the ledger, and the state's estimate the sum of the two measures, not the guess (12-06: a 5x
    state of ~54 GiB guessed at 132 GiB, refused on 78 GiB free). A DC state was never probed before."""
    monkeypatch.setenv("STATES", str(tmp_path / "states"))
    root = tmp_path / "states"
    plan = resolve_plan("hour_checked", "sqlite", profile="smoke", scale=0.01,
                        overrides=["workload.dc.fraction=0.01"])       # 8,000 entities + 6,000 DC entities
    inputs = store.inputs_for(plan)
    assert sizes.mendoza_guessed(root, inputs) and sizes.dc_guessed(root, inputs)
    guessed = sizes.estimate_bytes(root, inputs)
    cs.probe.measure(plan, "run")
    err = capsys.readouterr().err
    assert f"measuring it at {inputs.entities // sizes.NEAR_SHARE} entities" in err, err
    assert "measuring it at its DC seed alone at 0.001 of a DC" in err, err
    assert not sizes.is_guess(root, inputs), "both parts measured"
    assert sizes.estimate_bytes(root, inputs) < guessed
    assert store.listing(root) == [], "the probes went once measured"
    # the estimate is the two measures' sum: built for real, the state is within a third of it
    from harness.state.build import ensure
    _, man, _ = ensure(plan, root, aged_ok=False)
    assert man.data_bytes == pytest.approx(sizes.estimate_bytes(root, inputs), rel=0.35)
