"""The open-loop block writer. Block i is due at t0 + i*interval; commit latency = end - due (a stall is
charged to every block queued behind it), service time = end - start. Blocks are built ahead by a
generator thread, so generation stays off the timed path; any wait for it is measured separately."""
from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass
from typing import Callable

from harness.runner.state import RunState
from harness.workload.block import Block
from harness.workload.generator import BlockGenerator

PREFETCH_BLOCKS = 8


@dataclass
class Built:
    block: Block
    prepared: object            # what the engine's apply_block takes (engine.prepare_block(block))
    digest_after: dict          # the model's per-table digest once this block is applied
    logical_bytes_after: int


class Prefetcher(threading.Thread):
    def __init__(self, gen: BlockGenerator, prepare: Callable[[Block], object] = lambda b: b) -> None:
        super().__init__(name="block-generator", daemon=True)
        self.gen, self.prepare, self.q = gen, prepare, queue.Queue(maxsize=PREFETCH_BLOCKS)
        self._stop_evt = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            while not self._stop_evt.is_set():
                b = self.gen.next_block()
                d = self.gen.model.digest
                item = Built(b, self.prepare(b), d.as_dict(), d.logical_bytes)
                while not self._stop_evt.is_set():
                    try:
                        self.q.put(item, timeout=0.1)
                        break
                    except queue.Full:
                        continue
        except BaseException as e:  # surfaced to the writer, which fails the run with it
            self.error = e

    def get(self) -> Built:
        while True:
            try:
                return self.q.get(timeout=0.5)
            except queue.Empty:
                if self.error:
                    raise RuntimeError(f"block generator failed: {self.error!r}") from self.error

    def stop(self) -> None:
        self._stop_evt.set()
        self.join(timeout=10)


def write_blocks(engine, pre: Prefetcher, state: RunState, *, interval_ms: float, warmup_s: float,
                 measure_s: float, checkpoint_every: int, checkpoint_mode: str) -> Built | None:
    """Run warmup then the measured phase on one continuous schedule; return the last applied block."""
    interval_ns = int(interval_ms * 1e6)
    t0 = time.monotonic_ns()          # the schedule's origin; state.t0_ns is the run's clock
    run0 = state.t0_ns
    warm_end, end = t0 + int(warmup_s * 1e9), t0 + int((warmup_s + measure_s) * 1e9)
    state.phase = "warmup" if warmup_s > 0 else "measure"
    if state.phase == "measure":
        state.start_measure(t0)
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
            state.start_measure(due)
        state.next_due_ns = due
        w0 = time.monotonic_ns()
        built = pre.get()
        waited = time.monotonic_ns() - w0
        now = time.monotonic_ns()
        if now < due:
            time.sleep((due - now) / 1e9)
        elif state.phase == "measure" and waited > 0 and now > due:
            state.generator_wait_s += min(waited, now - due) / 1e9   # only waits that made us late
        start = time.monotonic_ns()
        engine.apply_block(built.prepared)
        end_ns = time.monotonic_ns()
        last = built
        state.commit.record_us((end_ns - due) // 1000)
        state.service.record_us((end_ns - start) // 1000)
        state.lag.record_us(max(0, start - due) // 1000)
        if state.phase == "measure":
            state.blocks += 1
            state.rows += built.block.rows_written
            state.block_log.add((due - run0) / 1e9, (start - run0) / 1e9, (end_ns - run0) / 1e9,
                                built.block.rows_written, built.block.kind)
        i += 1
        if checkpoint_every and i % checkpoint_every == 0:
            c0 = time.monotonic_ns()
            engine.checkpoint(checkpoint_mode)
            state.checkpoint_ms.append((time.monotonic_ns() - c0) / 1e6)
            state.manual_checkpoints += 1
    state.measure_end_ns = time.monotonic_ns()
    state.next_due_ns = 0
    return last
