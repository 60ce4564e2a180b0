"""The open-loop block writer. Block i is due at t0 + i*interval; commit latency = end - due (a stall is
charged to every block queued behind it), service time = end - start. Blocks are built ahead by the
block feed process, so generation stays off the timed path; any wait for it is measured separately."""
from __future__ import annotations

import time

from harness.runner.abort import EarlyAbort
from harness.feed.protocol import Built
from harness.runner.feed_client import BlockFeed
from harness.runner.counters import RunState
from harness.runner.phases import cpu_delta_ms


def write_blocks(engine, pre: BlockFeed, state: RunState, *, interval_ms: float, warmup_s: float,
                 measure_s: float, checkpoint_every: int, checkpoint_mode: str,
                 abort: EarlyAbort | None = None) -> Built | None:
    """Run warmup then the measured phase on one continuous schedule; return the last applied block.
    With `abort`, the measured phase ends early once a threshold can no longer pass (abort.reason)."""
    interval_ns = int(interval_ms * 1e6)
    t0 = time.monotonic_ns()          # the schedule's origin; state.t0_ns is the run's clock
    run0 = state.t0_ns
    state.timed_start_ns = t0
    warm_end, end = t0 + int(warmup_s * 1e9), t0 + int((warmup_s + measure_s) * 1e9)
    state.window_end_ns, state.measure_from_ns = end, warm_end

    def start_measure(due_ns: int) -> None:
        state.start_measure(due_ns)
        state.counters_at_measure_start = engine.counters()

    state.phase = "warmup" if warmup_s > 0 else "measure"
    if state.phase == "measure":
        start_measure(t0)
    last: Built | None = None
    i, due = 0, t0
    while True:
        if interval_ns:
            due = t0 + i * interval_ns
        else:                      # unthrottled: each block is due when the previous one ends
            due = time.monotonic_ns() if i else t0
        if due >= end:
            break
        if state.phase == "warmup" and due >= warm_end:
            start_measure(warm_end)     # the planned window: its blocks are those due in it, this one first
        state.next_due_ns = due
        w0 = time.monotonic_ns()
        built = pre.get()
        waited = time.monotonic_ns() - w0
        now = time.monotonic_ns()
        if now < due:
            time.sleep((due - now) / 1e9)
        elif state.phase == "measure" and waited > 0 and now > due:
            state.generator_wait_s += min(waited, now - due) / 1e9   # only waits that made us late
        cpu0 = state.cpu_probe.read()
        start = time.monotonic_ns()
        engine.apply_block(built.prepared)
        end_ns = time.monotonic_ns()
        cpu1 = state.cpu_probe.read()
        last = built
        if built.read_sample:      # drawn after this block: the readers' parameters once it is committed
            pre.read_sample = built.read_sample
        _record(state, built, due, start, end_ns, run0)
        if state.phase == "measure":
            state.phase_log.add((end_ns - start) / 1e6, engine.block_phases(), cpu_delta_ms(cpu0, cpu1))
            if abort and abort.check((end_ns - run0) / 1e9, (end_ns - due) / 1e6, (end_ns - start) / 1e6,
                                     (end_ns - state.measure_start_ns) / 1e9, state.blocks, engine.ack_lag_blocks()):
                state.window_end_ns = min(end, end_ns)
                break
        i += 1
        if checkpoint_every and i % checkpoint_every == 0:
            _checkpoint(engine, state, checkpoint_mode)
    _end_measure(engine, state)
    state.next_due_ns = 0
    return last


def _record(state: RunState, built: Built, due: int, start: int, end_ns: int, run0: int) -> None:
    """A block's latencies (ns clocks), and in the measured phase its rows and its line in blocks.csv."""
    state.commit.record_us((end_ns - due) // 1000)
    state.service.record_us((end_ns - start) // 1000)
    state.lag.record_us(max(0, start - due) // 1000)
    added = built.logical_bytes_added - state.logical_bytes_seen
    state.logical_bytes_seen = built.logical_bytes_added
    if state.phase == "measure":
        state.logical_bytes_written += added
        rows = built.block.rows_written
        state.blocks += 1
        state.rows += rows
        if end_ns <= state.window_end_ns:
            state.rows_in_window += rows
        state.block_log.add((due - run0) / 1e9, (start - run0) / 1e9, (end_ns - run0) / 1e9, rows, built.block.kind)


def _checkpoint(engine, state: RunState, mode: str) -> None:
    c0 = time.monotonic_ns()
    engine.checkpoint(mode)
    state.checkpoint_ms.append((time.monotonic_ns() - c0) / 1e6)
    state.manual_checkpoints += 1


def _end_measure(engine, state: RunState) -> None:
    state.end_measure()
    state.counters_at_measure_end = engine.counters()


def hold_phases(engine, state: RunState, *, warmup_s: float, measure_s: float) -> None:
    """A read-only run: no blocks; the phases pass on the same clock while the readers work."""
    t0 = time.monotonic_ns()
    state.timed_start_ns = t0
    state.window_end_ns = end = t0 + int((warmup_s + measure_s) * 1e9)
    state.measure_from_ns = t0 + int(warmup_s * 1e9)
    time.sleep(warmup_s)
    state.start_measure(state.measure_from_ns)      # the planned start, however late the sleep ended
    state.counters_at_measure_start = engine.counters()
    time.sleep(max(0.0, (end - time.monotonic_ns()) / 1e9))
    _end_measure(engine, state)
