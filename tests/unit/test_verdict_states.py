"""What a walk that drops its states (DROP_STATES=1, or a disk too small) leaves on disk after each step."""
import json
from types import SimpleNamespace

from harness.state import store
from harness.state.clone import CLONE_RECORD
from harness.walks.verdict import states


def _state(root, sid: str, base: str | None = None) -> None:
    (root / sid / store.DATA).mkdir(parents=True)
    (root / sid / store.MANIFEST).write_text(json.dumps({"id": sid, "inputs": {"aged": {"base": base} if base else None}}))


def _cell(walk_root, engine: str, name: str, state: str):
    d = walk_root / "p99_5x" / name
    d.mkdir(parents=True)
    (d / CLONE_RECORD).write_text(json.dumps({"state": state}))
    return SimpleNamespace(engine=engine, scenario="p99_5x", dir=name)


def test_a_step_drops_the_bases_its_tuned_layouts_were_aged_from_but_not_what_a_later_step_opens(tmp_path, monkeypatch):
    """SQLite's step cloned its aged state and its simple schema's (an option's layout, built and aged for it alone);
    libSQL's step ages SQLite's base. After SQLite's step its aged states and the simple schema's base go (a 1x
    walk once left that 7.6 GiB base behind to the end), SQLite's base stays for libSQL; after libSQL's, it goes."""
    root = tmp_path / "states"
    for sid, base in [("sqlite-base", None), ("sqlite-aged", "sqlite-base"), ("simple-base", None),
                      ("simple-aged", "simple-base"), ("libsql-aged", "sqlite-base")]:
        _state(root, sid, base)
    monkeypatch.setenv(store.STATES_ENV, str(root))
    monkeypatch.setattr(states.store, "inputs_for", lambda plan: SimpleNamespace(id=plan))   # a plan's base state
    plans = {("p99_5x", "sqlite"): "sqlite-base", ("p99_5x", "libsql"): "sqlite-base"}
    runs = tmp_path / "walk"
    walk = SimpleNamespace(root=runs, records=[_cell(runs, "sqlite", "own", "sqlite-aged"),
                                               _cell(runs, "sqlite", "simple", "simple-aged")])
    states.drop_step_states("sqlite", plans, walk)
    assert sorted(e["id"] for e in store.listing(root)) == ["libsql-aged", "sqlite-base"]
    walk.records.append(_cell(runs, "libsql", "own-libsql", "libsql-aged"))
    states.drop_step_states("libsql", plans, walk)
    assert store.listing(root) == []
