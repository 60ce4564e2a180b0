"""load.preload (harness/state/preload.py): residency read with mincore agrees with util-linux's fincore, a
read brings the files in, and inside a memory cgroup the kernel keeps no more than the limit allows."""
import json
import os
import subprocess
import sys

import pytest

from harness.environment import filesystem
from harness.platform.pagecache import evict
from harness.platform.pagecache import resident_bytes, resident_file_bytes
from harness.state.preload import preload
from tests.conftest import can_use_cgroups


def fincore_bytes(path) -> int:
    return int(subprocess.check_output(["fincore", "--bytes", "--noheadings", "--output", "RES", str(path)]))


@pytest.fixture
def db(tmp_path):
    if filesystem(tmp_path)["fstype"] == "tmpfs":
        pytest.skip("tmpfs pages are always resident")
    d = tmp_path / "db"
    (d / "sub").mkdir(parents=True)
    (d / "a.db").write_bytes(os.urandom(24 << 20))
    (d / "sub" / "a.db-wal").write_bytes(os.urandom(3 << 20) + b"x")      # not a whole page
    evict(d, write_back=True)
    return d


def test_mincore_agrees_with_fincore_and_a_preload_makes_the_files_resident(db):
    assert resident_bytes(db) < 256 << 10, "evicted"
    with (db / "a.db").open("rb", buffering=0) as f:                          # a third of it, no readahead
        os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_RANDOM)
        f.read(8 << 20)
    assert resident_file_bytes(db / "a.db") == fincore_bytes(db / "a.db")
    assert 8 << 20 <= resident_file_bytes(db / "a.db") < 16 << 20
    record = preload(db)
    size = (24 << 20) + (3 << 20) + 1
    assert record["preload_bytes"] == size and record["preload_s"] >= 0
    assert 8 << 20 <= record["resident_bytes_before_preload"] < 16 << 20
    assert record["resident_bytes_after_preload"] == size == resident_bytes(db)
    assert fincore_bytes(db / "sub" / "a.db-wal") == resident_file_bytes(db / "sub" / "a.db-wal") + 4095


@pytest.mark.cgroup
@pytest.mark.skipif(can_use_cgroups() is not None, reason=str(can_use_cgroups()))
def test_inside_a_limit_the_preload_keeps_what_fits(tmp_path):
    """As vmtouch -t in the cell's cgroup: 96 MiB read inside a 48 MiB limit leaves at most the limit resident,
    charged to that cgroup (so the engine starts with what fits, never with pages cached outside its MEM)."""
    from harness.platform.cgroup import MemoryCgroup
    if filesystem(tmp_path)["fstype"] == "tmpfs":
        pytest.skip("tmpfs pages are always resident")
    d = tmp_path / "db"
    d.mkdir()
    (d / "big.db").write_bytes(os.urandom(96 << 20))
    evict(d, write_back=True)
    out = tmp_path / "preload.json"
    cg = MemoryCgroup(f"test-preload-{os.getpid()}", 48 << 20)
    try:
        subprocess.run([sys.executable, "-m", "harness.state.preload", str(d), str(out)], check=True,
                       preexec_fn=cg.add_self)
    finally:
        cg.remove()
    record = json.loads(out.read_text())
    assert record["preload_bytes"] == 96 << 20
    assert 8 << 20 < record["resident_bytes_after_preload"] <= 48 << 20, record
