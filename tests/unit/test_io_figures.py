"""The measured phase's I/O figures (harness/runner/io_watch.py, harness/platform/blockio.py): residency read
at the phase's ends follows the page cache, device counters move with real writes."""
import os

import pytest

from harness.environment import filesystem
from harness.platform.blockio import IoProbe, device_of, device_snapshot
from harness.runner.io_watch import IoWatch
from harness.platform.pagecache import evict
from harness.state.preload import preload


@pytest.fixture
def data(tmp_path):
    if filesystem(tmp_path)["fstype"] == "tmpfs" or device_of(tmp_path) is None:
        pytest.skip("no block device under the test's folder: its pages are always resident")
    d = tmp_path / "db"
    d.mkdir()
    (d / "arkiv.db").write_bytes(os.urandom(16 << 20))
    (d / "block-spool.bin").write_bytes(os.urandom(1 << 20))     # the feed's, not the engine's
    evict(d, write_back=True)
    return d


def test_residency_is_zero_after_eviction_and_whole_after_a_preload(data):
    watch = IoWatch(IoProbe.for_data(data, None, runner_holds_data=True), data)
    watch.take_start_residency()
    preload(data)
    watch.take_end_residency()
    r = watch.figures(1.0, None).residency
    assert r.file_bytes_start == 16 << 20, "the feed's spool is not the engine's file"
    assert r.resident_bytes_start == 0 and r.share_start == 0
    assert r.resident_bytes_end == 16 << 20 and r.share_end == 1


def test_device_counters_see_a_synced_write(data):
    probe = IoProbe.for_data(data, None, runner_holds_data=True)
    before = device_snapshot(probe.device)
    with open(data / "more", "wb") as f:
        f.write(os.urandom(4 << 20))
        f.flush()
        os.fsync(f.fileno())
    grew = device_snapshot(probe.device).since(before)
    assert grew["write_bytes"] >= 4 << 20 and grew["write_ops"] > 0
    own = probe.snapshot()["processes"]       # no cgroup of its own: this process's /proc/self/io
    assert own[os.getpid()].write_bytes >= 4 << 20


def test_the_random_read_probe_reads_the_data_from_the_device_and_leaves_the_page_cache_as_it_was(data):
    from harness.environment import disk_random_read
    from harness.platform.pagecache import resident_file_bytes
    assert "no file of 64 MiB" in disk_random_read(data)["error"]        # a schema built in place: nothing to read
    big = data / "arkiv.db"
    with open(big, "ab") as f:
        f.write(os.urandom(64 << 20))
    evict(data, write_back=True)
    r = disk_random_read(data, samples=300)
    assert r["samples"] == 300 and r["file_bytes"] == 80 << 20 and 0 < r["p50_us"] <= r["p99_us"]
    assert resident_file_bytes(big) == 0                                 # O_DIRECT: nothing cached
