"""A state kept packed where its clone does not fit beside it: real zstd on real files, each cell unpacking a full
copy, the state staying for the next."""
import os
import types
from pathlib import Path

import pytest

from harness.state import pack, sizes, store
from harness.state.clone import clone, link, take


def _state(root: Path) -> Path:
    d = root / "sqlite-x"
    data = d / store.DATA
    (data / "sub").mkdir(parents=True)
    (data / "db.sqlite").write_bytes(b"page" * 50_000 + os.urandom(4096))
    (data / "sub" / "wal").write_bytes(b"")
    (data / "link").symlink_to("db.sqlite")
    os.utime(data / "db.sqlite", ns=(1_700_000_000_000_000_000, 1_700_000_000_000_000_000))
    (d / store.MODEL).write_bytes(b"model")
    return d


def _tree(d: Path) -> dict:
    return {str(p.relative_to(d)): (p.read_bytes() if p.is_file() and not p.is_symlink() else os.readlink(p)
                                    if p.is_symlink() else "dir") for p in sorted(d.rglob("*"))}


def test_a_packed_state_unpacks_into_each_clone_as_it_was_and_stays_packed(tmp_path):
    d = _state(tmp_path / "states")
    before, mtime = _tree(d / store.DATA), (d / store.DATA / "db.sqlite").stat().st_mtime_ns
    done = pack.pack(d)
    assert pack.is_packed(d) and not (d / store.DATA).exists() and (d / store.MODEL).is_file()
    assert done.data_bytes > done.packed_bytes > 0 and pack.record(d) == done, "the repeated pages compress"
    assert "packed" in done.says() and "x)" in done.says()
    [listed] = store.listing(tmp_path / "states")
    assert listed["packed"] is True and listed["bytes"] < done.data_bytes, "make states says it is packed"
    for i in range(2):                 # every cell that clones it: a full copy, the packed state left for the next
        c = clone(d / store.DATA, tmp_path / f"cell{i}" / "data")
        assert c.method == "unpack" and c.bytes == done.data_bytes and pack.is_packed(d)
        assert _tree(tmp_path / f"cell{i}" / "data") == before
        assert (tmp_path / f"cell{i}" / "data" / "db.sqlite").stat().st_mtime_ns == mtime
    assert link(d / store.DATA, tmp_path / "linked") is None, "nothing to hard-link: a packed state is unpacked"
    taken, c = take(d, tmp_path / "took" / "data")
    assert taken == d and c.method == "unpack" and pack.is_packed(d), "a packed state is never moved in"


def test_a_pack_that_fails_leaves_the_state_as_it_was(tmp_path, monkeypatch):
    d = _state(tmp_path / "states")
    before = _tree(d / store.DATA)

    def no_room(args, what):
        raise RuntimeError(f"{what}: zstd exited 1: No space left on device")
    monkeypatch.setattr(pack, "_zstd", no_room)
    with pytest.raises(RuntimeError, match="No space left"):
        pack.pack(d)
    assert not pack.is_packed(d) and _tree(d / store.DATA) == before
    assert not any(p.name.startswith(store.PACKED) for p in d.iterdir()), "no partial left behind"


def test_a_cell_packs_its_state_only_where_that_makes_room_else_moves_it_in(tmp_path, monkeypatch):
    from harness import cell
    d = _state(tmp_path / "states")
    man = types.SimpleNamespace(id="sqlite-x", data_bytes=40 << 30)
    plan = types.SimpleNamespace(model_copy=lambda update: ("moved in", update))
    monkeypatch.setattr(sizes, "growth_bytes", lambda plan, b: 2 << 30)
    # 60 GiB free: a 40 GiB clone beside its state does not fit; packed (20 GiB by the share), it does
    monkeypatch.setattr(store, "free_bytes", lambda p: 60 << 30)
    assert sizes.pack_fits(plan, man.data_bytes, d.parent)
    assert cell.no_room_for_clone(plan, d, man) is plan and pack.is_packed(d)
    # packed already: never packed again; moved in, which unpacks it (take) and says so where there is no room
    assert cell.no_room_for_clone(plan, d, man) == ("moved in", {"take_state": True}) and pack.is_packed(d)
    # 20 GiB free: not even the packed files fit beside the data
    monkeypatch.setattr(store, "free_bytes", lambda p: 20 << 30)
    assert not sizes.pack_fits(plan, man.data_bytes, d.parent)


def test_a_walk_whose_clones_do_not_fit_but_fit_packed_is_let_through_and_says_so(tmp_path, monkeypatch, capsys):
    from harness import cell_states
    from harness.errors import ConfigError
    from harness.scenario.plan import resolve_plan
    from harness.state import probe
    monkeypatch.setenv(store.STATES_ENV, str(tmp_path / "states"))
    plan = resolve_plan("p99_5x", "sqlite", profile="ratio", data_root=tmp_path / "data", results_root=tmp_path)
    need = cell_states.walk_disk([plan], tmp_path / "states", False)
    size = cell_states._bytes(tmp_path / "states", cell_states.state_inputs(plan)[-1])[0]
    assert need.cloning - need.packing == size - sizes.packed_bytes(size) > 0
    monkeypatch.setattr(probe, "guessed", lambda plans: [])        # the shape's guess taken as it is
    between = (need.cloning + need.packing) // 2 + store.MARGIN_BYTES
    monkeypatch.setattr(store, "free_bytes", lambda p: between)
    assert cell_states.check_walk_disk([plan], False, "knee") is False
    assert "is packed (zstd) when its first cell starts" in capsys.readouterr().err
    monkeypatch.setattr(store, "free_bytes", lambda p: need.packing - (1 << 30))
    with pytest.raises(ConfigError, match="DROP_STATES=1"):
        cell_states.check_walk_disk([plan], False, "knee")
