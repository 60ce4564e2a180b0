"""The copy-on-write store (harness/state/cow_store.py): where the disk cannot share extents, a knee's step at 5x
must still clone its state without copying it."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from harness.cell_states import walk_disk
from harness.environment import filesystem
from harness.scenario.plan import resolve_plan
from harness.state import cow_store
from harness.state.clone import clone, shares_extents
from harness.state.sizes import clone_bytes
from harness.state.store import NoRoom

ROOT = Path(__file__).resolve().parents[2]


def _why_not() -> str | None:
    if os.geteuid() != 0:
        return "a loop device needs root"
    if shutil.which("mkfs.xfs") is None or not Path("/dev/loop-control").exists():
        return "no mkfs.xfs (make install installs xfsprogs) or no loop devices"
    return None


needs_loop = pytest.mark.skipif(_why_not() is not None, reason=_why_not() or "")


@needs_loop
def test_a_state_in_the_store_is_cloned_by_reflink_and_the_store_outlives_a_detach(tmp_path):
    image, mount = tmp_path / "store.img", tmp_path / "store"
    try:
        s = cow_store.make(512 << 20, mount, image)
        assert s.made_now and s.device.startswith("/dev/loop") and (mount / "states").is_dir()
        assert filesystem(mount / "data")["fstype"] == "xfs"
        state = mount / "states" / "s1" / "data"
        state.mkdir(parents=True)
        (state / "db").write_bytes(os.urandom(8 << 20))
        used = cow_store.status(mount, image).used_bytes
        assert shares_extents(mount / "states", mount / "data" / "cell") and not shares_extents(tmp_path, mount)
        c = clone(state, mount / "data" / "cell")
        assert c.method == "reflink" and (mount / "data" / "cell" / "db").read_bytes() == (state / "db").read_bytes()
        assert cow_store.status(mount, image).used_bytes - used < 2 << 20      # shared: not another 8 MiB
        assert cow_store.make(512 << 20, mount, image).device == s.device        # made once
        # a walk's disk check: on the store the clone is its cell's writes; from ext4 into it, the state's bytes
        plan = resolve_plan("p99_5x", "sqlite", profile="ratio", data_root=mount / "data", results_root=tmp_path)
        shared, copied = (walk_disk([plan], root, False).lines for root in (mount / "states", tmp_path))
        assert shared[-2].split("up to ")[1] == shared[-1].split("about ")[1] != copied[-2].split("up to ")[1], \
            (shared, copied)
        # a reboot detaches it: made again, the image is attached and mounted with its states
        subprocess.run(["umount", str(mount)], check=True)
        subprocess.run(["losetup", "-d", s.device], check=True)
        again = cow_store.make(512 << 20, mount, image)
        assert not again.made_now and (state / "db").stat().st_size == 8 << 20
    finally:
        done = cow_store.remove(mount, image)
    assert not image.exists() and not mount.exists() and any("unmounted" in d for d in done)


def test_a_store_larger_than_the_free_disk_is_refused_naming_its_image(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(shutil, "which", lambda tool: f"/usr/sbin/{tool}")
    free = shutil.disk_usage(tmp_path).free
    with pytest.raises(NoRoom, match="store.img"):
        cow_store.make(free + (4 << 30), tmp_path / "store", tmp_path / "store.img")
    assert not (tmp_path / "store.img").exists()


def test_make_gives_every_walk_and_run_the_data_directory():
    for target in ("writes POINTS=1:1g", "knee AXIS=rows", "curve", "run SCENARIO=reorg", "reads"):
        out = subprocess.run(["make", "-n", *target.split(), "ENGINE=sqlite", "DATA=store/data"], cwd=ROOT,
                             capture_output=True, text=True, timeout=60).stdout
        assert "--data store/data" in out, (target, out[-400:])


def test_a_clone_on_a_copy_on_write_store_costs_its_cells_writes_not_the_state():
    assert clone_bytes(50 << 30, 3 << 30, shares=True) == 3 << 30
    assert clone_bytes(50 << 30, 3 << 30, shares=False) == 50 << 30
    assert clone_bytes(1 << 30, 3 << 30, shares=True) == 1 << 30        # never more than the state


@needs_loop
@pytest.mark.slow(seconds=150)
def test_store_bias_runs_one_cell_alternately_on_the_disk_and_a_reflinked_clone_and_compares_them(tmp_path,
                                                                                                  monkeypatch):
    from harness.walks.store_bias import BIAS_FILE, store_bias
    from harness.walks.sweep import CellOptions
    from harness.results import load_result
    image, mount = tmp_path / "store.img", tmp_path / "store"
    monkeypatch.setenv("STATES", str(tmp_path / "states"))
    try:
        cow_store.make(3 << 30, mount, image)         # sparse: a build keeps 1 GiB free beside it
        opts = CellOptions(profile="smoke", runtime="local", data_root=str(tmp_path / "data"))
        assert store_bias("p99_5x", "sqlite", None, None, 2, opts, tmp_path / "results", mount) == 0
        [root] = (tmp_path / "results").glob("store-bias-*")
        cells = sorted(root.glob("*/p99_5x/*/result.json"), key=lambda p: load_result(p).environment["started_utc"])
        assert [p.parts[-4] for p in cells] == ["disk", "store", "disk", "store"]          # alternating
        for p in cells:
            fs = load_result(p).environment["filesystem"]["fstype"]
            method = json.loads((p.parent / "state.json").read_text())["clone_method"]
            assert (fs, method) == (("xfs", "reflink") if p.parts[-4] == "store" else (fs, "copy")) and \
                (fs == "xfs") == (p.parts[-4] == "store"), (p, fs, method)
        [cmp] = json.loads((root / BIAS_FILE).read_text())["comparison"]
        assert all(f["n_a"] == f["n_b"] == 2 for f in cmp["figures"]) and cmp["figures"], cmp
    finally:
        cow_store.remove(mount, image)
