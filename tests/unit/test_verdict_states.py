"""What a walk that drops its states (DROP_STATES=1, or a disk too small) leaves on disk after each step."""
import json
from types import SimpleNamespace

import pytest

from harness.cell_states import DiskNeed
from harness.state import store
from harness.state.clone import CLONE_RECORD
from harness.walks.verdict import states

GIB = 2 ** 30


def _state(root, sid: str, base: str | None = None) -> None:
    (root / sid / store.DATA).mkdir(parents=True)
    aged = {"base": base} if base else None
    (root / sid / store.MANIFEST).write_text(json.dumps({"id": sid, "inputs": {"aged": aged}}))


def _cell(walk_root, engine: str, name: str, state: str):
    d = walk_root / "p99_5x" / name
    d.mkdir(parents=True)
    (d / CLONE_RECORD).write_text(json.dumps({"state": state}))
    return SimpleNamespace(engine=engine, scenario="p99_5x", dir=name)


@pytest.fixture
def walk(tmp_path, monkeypatch):
    """SQLite's step cloned its aged state and its simple schema's (an option's layout, built and aged for it
    alone); libSQL's step clones SQLite's aged state; PostgreSQL's comes next. A plan here is its base state's id,
    aged into '<base>-aged'; the leaf's first engine is SQLite."""
    root = tmp_path / "states"
    for sid, base in [("sqlite", None), ("sqlite-aged", "sqlite"), ("simple", None), ("simple-aged", "simple")]:
        _state(root, sid, base)
    monkeypatch.setenv(store.STATES_ENV, str(root))
    monkeypatch.setattr(states.store, "inputs_for", lambda plan: SimpleNamespace(id=plan))
    monkeypatch.setattr(states, "state_inputs",
                        lambda plan: [SimpleNamespace(id=plan), SimpleNamespace(id=f"{plan}-aged")])
    runs = tmp_path / "walk"
    tree = SimpleNamespace(steps=[SimpleNamespace(engine=e) for e in ("sqlite", "libsql", "postgres")],
                           leaf=SimpleNamespace(designs={"postgres": ["block_log"], "sqlite": ["block_log"]}))
    return SimpleNamespace(root=runs, tree=tree, states=root, records=[
        _cell(runs, "sqlite", "own", "sqlite-aged"), _cell(runs, "sqlite", "simple", "simple-aged")])


PLANS = {("p99_5x", "sqlite"): "sqlite", ("p99_5x", "libsql"): "sqlite", ("p99_5x", "postgres"): "postgres"}


def _room(monkeypatch, free_gib: float, later_need_gib: float) -> None:
    """later_need_gib: the later steps' states one at a time (each cell moving its state in where a clone does not
    fit); with every clone beside them they would need far more, guessed high before a build."""
    monkeypatch.setattr(states.store, "free_bytes", lambda root: int(free_gib * GIB))
    monkeypatch.setattr(states, "walk_disk", lambda plans, root, drop: DiskNeed(int(5 * later_need_gib * GIB),
                                                                                int(later_need_gib * GIB), []))


def _listed(walk) -> list[str]:
    return sorted(e["id"] for e in store.listing(walk.states))


def test_a_step_drops_the_bases_its_tuned_layouts_were_aged_from_but_not_what_a_later_step_opens(walk, monkeypatch):
    """After SQLite's step the simple schema's states go (a 1x walk once left its 7.6 GiB base behind to the end);
    SQLite's base and aged state stay: libSQL's step clones the aged one (it ages none of its own)."""
    _room(monkeypatch, free_gib=60, later_need_gib=45)
    states.drop_step_states("sqlite", PLANS, walk)
    assert _listed(walk) == ["sqlite", "sqlite-aged"]


@pytest.mark.parametrize("free_gib, kept", [(60, ["sqlite", "sqlite-aged"]), (40, [])])
def test_the_leafs_first_engine_keeps_its_states_through_the_later_steps_where_they_fit(walk, monkeypatch, free_gib,
                                                                                         kept):
    """After libSQL's step, SQLite's states stay for the leaf (its block log clones the aged one, its reorg ages the
    base) when PostgreSQL's step still fits beside them; else they go as before. After the leaf they go."""
    _room(monkeypatch, free_gib=free_gib, later_need_gib=45)
    states.drop_step_states("sqlite", PLANS, walk)
    walk.records.append(_cell(walk.root, "libsql", "own-libsql", "sqlite-aged"))
    states.drop_step_states("libsql", PLANS, walk)
    assert _listed(walk) == kept
    states.drop_step_states("sqlite", PLANS, walk, leaf_done=True)
    assert _listed(walk) == []
    assert states.leaf_engine(walk) == ["sqlite"], "the tree's order, not the file's, names the leaf's first engine"


def test_a_derived_states_source_goes_with_it_and_the_walk_leaves_nothing_it_built(walk, monkeypatch):
    """PostgreSQL's trade-off screen cloned a state derived from its simple schema's base: the drop after its step
    follows derived_from down to the base (on 11-29 that base, 8.4 GiB, escaped every drop). Whatever else the walk
    built goes at its end; a state on disk before the walk stays."""
    before = states.state_ids(walk.states)
    _state(walk.states, "postgres", None)
    _state(walk.states, "pg-simple", None)
    (walk.states / "pg-simple-derived" / store.DATA).mkdir(parents=True)
    (walk.states / "pg-simple-derived" / store.MANIFEST).write_text(json.dumps(
        {"id": "pg-simple-derived", "inputs": {}, "derived_from": "pg-simple"}))
    walk.records.append(_cell(walk.root, "postgres", "no_bitemporal", "pg-simple-derived"))
    _room(monkeypatch, free_gib=100, later_need_gib=1)
    states.drop_step_states("postgres", PLANS, walk)
    assert "pg-simple" not in _listed(walk) and "pg-simple-derived" not in _listed(walk)
    _state(walk.states, "escaped", None)
    states.drop_new_states(before)
    assert _listed(walk) == sorted(before)


@pytest.mark.parametrize("free_gib, reference, kept", [(60, "sqlite", ["sqlite", "sqlite-aged"]), (40, "sqlite", []),
                                                       (60, None, [])])
def test_the_leaf_drops_an_engines_states_before_the_next_engines_designs(walk, monkeypatch, free_gib, reference,
                                                                          kept):
    """2026-12-05: SQLite's designs kept its states and their current ∪ history layout (~45 GB) and PostgreSQL's
    leaf state could not be built. After an engine's designs every state of it goes, its designs' layouts too, but
    the end's reference cell's (SQLite at its own settings) where PostgreSQL's leaf still fits beside them."""
    _state(walk.states, "ch", None)
    _state(walk.states, "ch-aged", "ch")
    walk.records.append(_cell(walk.root, "sqlite", "leaf-current_history", "ch-aged"))
    walk.tree.reference = SimpleNamespace(engine=reference) if reference else None
    walk.headroom_on = reference is not None
    walk.criteria = [SimpleNamespace(criterion=SimpleNamespace(scenario="p99_5x"))]
    _room(monkeypatch, free_gib=free_gib, later_need_gib=45)
    states.drop_leaf_engine_states("sqlite", PLANS, walk)
    assert _listed(walk) == kept
