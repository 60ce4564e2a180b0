"""Coordinated-omission-correct latency, and the harness staying off the timed path.
The engines here are fakes on purpose: they test the runner's own logic, not a database."""
import math
import os
import subprocess
import time

import pytest

from harness.runner.metrics import BlockLog, Recorder, quick_summary_ms
from harness.runner.sampler import Sampler
from harness.runner.state import RunState
from harness.runner.feed import BlockFeed, LoadArgs
from harness.runner.writer import write_blocks
from harness.engine_api import StorageStats
from tests.conftest import mixed_spec

INTERVAL_MS, STALL_MS = 50, 400


class StallingEngine:
    """Applies a block in ~1 ms, except block `stall_at`, which takes STALL_MS."""

    def __init__(self, stall_at: int):
        self.stall_at, self.applied = stall_at, 0

    def apply_block(self, block):
        time.sleep(STALL_MS / 1000 if self.applied == self.stall_at else 0.001)
        self.applied += 1

    def storage(self):
        return StorageStats(0, 0, 0)


def run_writer(engine, measure_s=1.5):
    pre = BlockFeed(mixed_spec(reorg=0.0), LoadArgs(20, 500, 10)).start()
    for _ in pre.load_blocks():
        pass
    state = RunState()
    try:
        write_blocks(engine, pre, state, interval_ms=INTERVAL_MS, warmup_s=0, measure_s=measure_s,
                     checkpoint_every=0, checkpoint_mode="PASSIVE")
    finally:
        pre.stop()
    return state


def test_a_stall_counts_against_the_blocks_queued_behind_it():
    state = run_writer(StallingEngine(stall_at=5))
    log = state.block_log
    commit = [(log.end_s[i] - log.due_s[i]) * 1000 for i in range(len(log))]
    service = [(log.end_s[i] - log.start_s[i]) * 1000 for i in range(len(log))]
    assert service[5] >= STALL_MS * 0.95 and commit[5] >= STALL_MS * 0.95
    behind = range(6, 6 + STALL_MS // INTERVAL_MS - 2)
    # the blocks due during the stall waited for it: their latency carries the queueing delay ...
    for i in behind:
        assert commit[i] >= (STALL_MS - (i - 5) * INTERVAL_MS) * 0.8, (i, commit[i])
    # ... but not their service time
    assert max(service[i] for i in behind) < 50
    # and the schedule is open-loop: blocks stay due every interval, whatever the engine did
    dues = [log.due_s[i] for i in range(len(log))]
    assert all(abs((b - a) * 1000 - INTERVAL_MS) < 1e-6 for a, b in zip(dues, dues[1:]))
    h = state.commit.total
    assert h.get_value_at_percentile(99) / 1000 >= STALL_MS * 0.9
    assert state.service.total.get_value_at_percentile(50) / 1000 < 20


def test_without_stall_latency_is_service_time():
    state = run_writer(StallingEngine(stall_at=-1), measure_s=1.0)
    assert state.commit.total.get_max_value() / 1000 < INTERVAL_MS


def test_sampler_tick_is_cheap():
    """A sampler tick once cost ~400 ms of GIL (HdrHistogram mean/stddev in Python) and stalled the
    writer every second; it must stay a few milliseconds with full histograms."""
    import tempfile
    from pathlib import Path
    state = RunState()
    state.phase = "measure"
    for r in (state.commit, state.service, state.lag, state.read):
        for v in range(1, 400_000, 97):
            r.record_us(v)
    with tempfile.TemporaryDirectory() as d:
        s = Sampler(state, StallingEngine(-1), Path(d), "test", 1.0)
        t = time.perf_counter()
        s.sample()
        took_ms = (time.perf_counter() - t) * 1000
        s.stop()
    assert took_ms < 25, f"a sampler tick took {took_ms:.1f} ms"


def test_quick_summary_nearest_rank():
    s = quick_summary_ms(list(range(1000, 101_000, 1000)))   # 1..100 ms
    assert (s["p50"], s["p99"], s["max"], s["count"]) == (50.0, 99.0, 100.0, 100)


def test_recorder_clamps_and_counts_out_of_range():
    r = Recorder()
    r.record_us(10 ** 13)
    assert r.clamped == 1 and r.total.get_total_count() == 1


def test_worst_window_percentile():
    log = BlockLog()
    for i in range(100):                      # one block per second, 10 ms each, but 1 s spike at t=50
        lat = 1.0 if i == 50 else 0.010
        log.add(i, i, i + lat, 1, "ops")
    assert abs(log.worst_window_percentile_ms(100, 10, "commit_ms") - 1000) < 1e-6
    assert abs(log.worst_window_percentile_ms(50, 10, "commit_ms") - 10) < 1e-6


def test_the_feed_process_ships_the_generators_exact_stream():
    """Blocks built in the feed process are the ones the in-process generator builds from the same
    seed, digests included, so moving generation out of the runner changed no workload."""
    from harness.workload.generator import BlockGenerator
    spec = mixed_spec(reorg=0.2)
    gen = BlockGenerator(spec)
    local_load = list(gen.load_blocks(30, 400, 10))
    feed = BlockFeed(spec, LoadArgs(30, 400, 10)).start()
    try:
        shipped_load = list(feed.load_blocks())
        assert [b.block for b in shipped_load] == local_load
        assert feed.after_load.digest_after == gen.model.digest.as_dict()
        assert len(feed.live_keys) == min(512, len(gen.model.live_ids))
        for _ in range(20):
            local, shipped = gen.next_block(), feed.get()
            assert shipped.block == local
            assert shipped.digest_after == gen.model.digest.as_dict()
    finally:
        feed.stop()


def test_a_feed_failure_reaches_the_writer():
    import dataclasses
    import pytest
    bad = dataclasses.replace(mixed_spec(reorg=0.0), shape="no-such-shape")
    feed = BlockFeed(bad).start()
    try:
        with pytest.raises(RuntimeError, match="no-such-shape"):
            feed.get()
    finally:
        feed.stop()


def test_spooled_blocks_come_back_in_order_and_the_stream_goes_on_live_after_them(tmp_path):
    """The blocks of warmup + measure are generated before the clock into a spool file; the runner gets
    exactly the generator's stream, spooled then live, and the file is gone once read."""
    from harness.workload.generator import BlockGenerator
    spec = mixed_spec(reorg=0.2)
    gen = BlockGenerator(spec)
    for _ in gen.load_blocks(30, 400, 10):
        pass
    path = tmp_path / "spool.bin"
    feed = BlockFeed(spec, LoadArgs(30, 400, 10), spool_path=str(path)).start()
    try:
        for _ in feed.load_blocks():
            pass
        sp = feed.spool(5)
        assert sp.blocks == 5 and sp.bytes > 0 and sp.path == str(path)
        for _ in range(8):                      # 5 from the spool, then 3 generated live
            local, shipped = gen.next_block(), feed.get()
            assert shipped.block == local
            assert shipped.digest_after == gen.model.digest.as_dict()
        assert feed.taken_after_load == 8
        assert not path.exists()
    finally:
        feed.stop()


def test_a_zero_spool_leaves_the_whole_stream_live(tmp_path):
    from harness.workload.generator import BlockGenerator
    spec = mixed_spec(reorg=0.0)
    gen = BlockGenerator(spec)
    for _ in gen.load_blocks(20, 500, 10):
        pass
    feed = BlockFeed(spec, LoadArgs(20, 500, 10), spool_path=str(tmp_path / "spool.bin")).start()
    try:
        for _ in feed.load_blocks():
            pass
        assert feed.spool(0) is None
        for _ in range(3):
            assert feed.get().block == gen.next_block()
        assert not (tmp_path / "spool.bin").exists()
    finally:
        feed.stop()


@pytest.mark.parametrize("mem_limit", [None, "1g"])
def test_the_spool_leaves_the_page_cache_only_under_a_memory_limit(tmp_path, mem_limit):
    """Under a limit its cached pages would count against the engine; without one, the timed phase
    reads it from memory, not from the disk the engine fsyncs to."""
    from harness.environment import filesystem
    from harness.runner.feed import _spool
    from harness.runner.run import spool_drops_cache
    from harness.scenario.plan import resolve_plan
    if filesystem(tmp_path)["fstype"] == "tmpfs":
        pytest.skip("tmpfs pages cannot leave the page cache")
    drop = spool_drops_cache(resolve_plan("reorg", "sqlite", profile="smoke", mem=mem_limit))
    assert drop == (mem_limit is not None)
    path = tmp_path / "spool.bin"
    sp = _spool(str(path), iter(lambda: os.urandom(64 << 10), None), 64, lambda: True, drop_cache=drop)
    assert sp.blocks == 64 and path.stat().st_size == sp.bytes
    resident = int(subprocess.check_output(["fincore", "--bytes", "--noheadings", "--output", "RES", str(path)]))
    if drop:
        assert resident < sp.bytes // 8
    else:
        assert resident >= sp.bytes


def test_the_spool_holds_the_schedule_or_the_load_rate_with_a_margin():
    from harness.runner.feed import PREFETCH_BLOCKS
    from harness.runner.run import UNTHROTTLED_SPOOL_MARGIN, spool_blocks
    from harness.scenario.plan import resolve_plan
    plan = resolve_plan("p99_5x", "sqlite", profile="quick", duration_s=40)     # 500 ms blocks, 15 s warmup
    assert spool_blocks(plan, 1e9) == 55 * 2 + PREFETCH_BLOCKS                    # the load's rate is moot
    fast = resolve_plan("p99_5x", "sqlite", profile="quick", duration_s=40,
                        overrides=["workload.block_interval_ms=0"])
    # 20,000 rows/s for 55 s in 3,000-row blocks: 366.7, times the margin
    assert spool_blocks(fast, 20_000) == math.ceil(UNTHROTTLED_SPOOL_MARGIN * 20_000 * 55 / 3000) + PREFETCH_BLOCKS
    assert spool_blocks(fast, None) == PREFETCH_BLOCKS
