"""Async writes, a design of the tree's last leaf (docs/design.md, "Designs over the contract"): a block is
acknowledged once its record is durable in an append-only log on the data mount (log_file.py); an applier
thread applies what has arrived to the engine, up to group_blocks blocks in ONE transaction that also records
the last block it applied (the adapter's apply_group and applied_mark). Opening replays the log past that mark,
so a block applied twice (a crash between its commit and the log's release) is skipped, not rewritten.

A record is released only once the engine says its apply is durable (durable_mark(), or every commit where the
engine syncs each one): a power cut takes back an engine's unsynced commits, never the log's records.

It wraps any adapter that has apply_group: to the runner, the crash lives and the readers it is the engine, and
every call it passes on takes the engine's lock. What it adds is measured here (figures(), block_log_figures.py):
the apply lag, the applier's utilisation and drain, the log's bytes, the replay at open."""
from __future__ import annotations

import pickle
import queue
import threading
import time
from pathlib import Path
from typing import Callable, Mapping

from harness.designs.block_log_figures import Applied, Pending, Transaction, busy_share, trend_points, window_figures
from harness.designs.log_file import BlockLogFile
from harness.engine_api import LoggedBlock
from harness.workload.block import Block

LOG_DIR = "block-log"           # in the data directory: the same mount, inside MEM with the data
MEMORY_BLOCKS = 8               # pending blocks held as objects; past them the applier reads its records back


def record_of(prepared) -> LoggedBlock:
    """What the log takes: the feed's record as it came (registry.preparer), or one made here from an adapter's
    prepared form (a Block, or an object carrying it as .block), for callers that prepare blocks themselves."""
    if isinstance(prepared, LoggedBlock):
        return prepared
    return LoggedBlock.of(prepared if isinstance(prepared, Block) else prepared.block, prepared)


class BlockLogEngine:
    """The engine contract over `inner`: every call to it under one lock, the applier's among them."""

    def __init__(self, inner, group_blocks: int, sync: bool, applied_is_durable: bool = False,
                 segment_bytes: int | None = None, lag_bound_blocks: int = 0) -> None:
        self.inner, self.group_blocks, self.sync = inner, group_blocks, sync
        self.segment_bytes, self.lag_bound_blocks = segment_bytes, lag_bound_blocks
        # whether the engine's commit outlives a power cut: then a record goes once applied, else once the engine
        # says its apply is durable (durable_mark)
        self.applied_is_durable = applied_is_durable
        self._applied_through = 0
        self.phase_hook: Callable[[str, int], None] | None = None    # a crash life's status while a group applies
        # the due time of the block being acknowledged (the runner's schedule): a block is queryable from it
        self.due_clock: Callable[[], int] | None = None
        self.applied: list[Applied] = []
        self.transactions: list[Transaction] = []
        self.acks: list[tuple[int, float, float, int]] = []   # (ack_ns, write ms, sync ms, log bytes) per block
        self.replay: dict = {"blocks": 0, "seconds": 0.0, "from_block": None}
        self._counters = self._storage = None
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self._engine_lock = threading.Lock()

    # --- opening: the adapter's, then the replay, then the applier ------------------------------
    def open(self, settings: Mapping[str, object], data_dir: Path) -> None:
        with self._engine_lock:
            self.inner.open(settings, data_dir)
        self.log = BlockLogFile(Path(data_dir) / LOG_DIR, self.sync, self.segment_bytes)
        self.log.on_rotate = lambda number: self._hook("rotate", number)
        self._q: queue.Queue = queue.Queue()
        self._done = threading.Condition()
        self._acked = self._applied_count = self._behind = 0
        self._ckpts_queued = self._ckpts_done = 0     # checkpoints among the blocks: a drain waits for them too

    def create_schema(self, variant: str, indexes=None) -> None:
        with self._engine_lock:
            self.inner.create_schema(variant, indexes)
        self._start()

    def use_schema(self, variant: str) -> None:
        with self._engine_lock:
            self.inner.use_schema(variant)
        self._start()

    def _start(self) -> None:
        """Replay what the log holds past the engine's applied mark (timed), then start the applier."""
        t0 = time.perf_counter()
        with self._engine_lock:
            mark = self.inner.applied_mark()
            group, replayed, last = [], 0, mark
            for number, _, _, payload in self.log.records():
                if number <= mark:
                    continue
                group.append(pickle.loads(payload))
                last = number
                if len(group) == self.group_blocks:
                    self.inner.apply_group(group, last)
                    replayed, group = replayed + len(group), []
            if group:
                self.inner.apply_group(group, last)
                replayed += len(group)
            self._refresh()
        self._applied_through = last
        self._release()            # the mark read at open may itself be an unsynced commit: only what is durable
        self.replay = {"blocks": replayed, "seconds": round(time.perf_counter() - t0, 4), "from_block": mark + 1}
        self._thread = threading.Thread(target=self._apply_loop, name="block-log-applier", daemon=True)
        self._thread.start()

    def _refresh(self) -> None:
        """The engine's counters (and its storage, once the sampler has asked for it), read under the lock by
        whoever holds it: the runner's sampler and writer ask while the applier is inside a transaction, and get
        these (a driver's connection may not be used from two threads at once, and the acknowledgement must not
        wait for an apply to ask). An observation that fails keeps the last one: the sampler reports its own."""
        self._counters = self.inner.counters()
        if self._storage is not None:
            try:
                self._storage = self.inner.storage()
            except Exception:
                pass

    def _release(self) -> None:
        durable = self._applied_through if self.applied_is_durable else self._locked(self.inner.durable_mark)
        self.log.release_through(min(durable, self._applied_through))

    def _locked(self, fn, *args):
        with self._engine_lock:
            return fn(*args)

    # --- the acknowledgement: the runner times this ---------------------------------------------
    def apply_block(self, prepared) -> None:
        if self._error is not None:
            raise RuntimeError(f"the block log's applier failed: {self._error}") from self._error
        rec = record_of(prepared)
        t0 = time.monotonic_ns()
        seg, at, sync_ns = self.log.append(rec.number, rec.payload)
        t1 = time.monotonic_ns()
        with self._done:
            behind = self._acked - self._applied_count     # the engine's lag behind the head, in blocks
            self._acked += 1
        self._behind = behind
        due = self.due_clock() if self.due_clock else None
        self._q.put(Pending(rec.number, rec.rows_written, t1, (seg, at),
                            rec.payload if behind < MEMORY_BLOCKS else None, behind, due or None))
        self.acks.append((t1, (t1 - t0 - sync_ns) / 1e6, sync_ns / 1e6, self.log.bytes_on_disk()))

    def block_phases(self) -> dict[str, float] | None:
        return None          # the acknowledgement is the log's append; the apply's phases are in figures()

    def ack_lag_blocks(self) -> int | None:
        return self._behind

    def applier_busy_share(self, start_ns: int, end_ns: int) -> float | None:
        """The applier's busy share over [start_ns, end_ns], of the transactions it has finished (one still open is
        not in it yet: read early, a window's share is never over what the end of the phase will find)."""
        return busy_share(list(self.transactions), start_ns, end_ns)

    def counters(self):
        """As of the applier's last group: off by at most the group in flight at either end of a phase."""
        return self._counters

    def storage(self):
        """Read now where the engine is free (or on the first call), else as of the applier's last group."""
        if not self._engine_lock.acquire(blocking=self._storage is None):
            return self._storage
        try:
            self._storage = self.inner.storage()
            return self._storage
        finally:
            self._engine_lock.release()

    # --- the applier --------------------------------------------------------------------------
    def _apply_loop(self) -> None:
        try:
            while (item := self._q.get()) is not None:
                if isinstance(item, str):           # a checkpoint, in its place among the blocks
                    with self._engine_lock:
                        self._hook("checkpoint")
                        self.inner.checkpoint(item)
                        self._refresh()
                        self._hook("idle")
                    self._release()
                    with self._done:
                        self._ckpts_done += 1
                        self._done.notify_all()
                    continue
                self._apply(self._group(item))
        except BaseException as e:       # the next acknowledgement (or drain) raises it
            self._error = e
            with self._done:
                self._done.notify_all()

    def _group(self, first: Pending) -> list[Pending]:
        group = [first]
        while len(group) < self.group_blocks:
            try:
                nxt = self._q.get_nowait()
            except queue.Empty:
                break
            if not isinstance(nxt, Pending):
                self._q.put(nxt)         # after this group: a checkpoint or the stop
                break
            group.append(nxt)
        return group

    def _apply(self, group: list[Pending]) -> None:
        # decoded here, on the applier's side, as a real applier decodes what its log holds
        prepared = [pickle.loads(p.payload if p.payload is not None else self.log.read(*p.where)) for p in group]
        last = group[-1].number
        with self._engine_lock:
            self._hook("apply", last)
            t0 = time.monotonic_ns()
            self.inner.apply_group(prepared, last)
            t1 = time.monotonic_ns()
            phases = dict(self.inner.block_phases() or {})
            self._refresh()
            self._hook("idle", last)
        self.transactions.append(Transaction(len(group), t0, t1, phases))
        # the lag as each block's acknowledgement found it: sampled on the writer's clock, so the drain after the
        # measured phase (no new blocks, the backlog shrinking) does not read as a lag that fell
        self.applied += [Applied(p.number, p.rows, p.ack_ns, t1, p.lag_blocks, p.due_ns) for p in group]
        self._applied_through = last
        self._release()
        with self._done:             # last: a drain returns on a group wholly done, its records let go
            self._applied_count += len(group)
            self._done.notify_all()

    def _hook(self, phase: str, block: int = -1) -> None:
        if self.phase_hook:
            self.phase_hook(phase, block)

    def drain(self) -> float:
        """Wait until every acknowledged block is applied, and every checkpoint queued among them run (none may
        then use the connection under a reader of it); the seconds it took."""
        t0 = time.perf_counter()
        with self._done:
            while (self._applied_count < self._acked or self._ckpts_done < self._ckpts_queued) \
                    and self._error is None:
                self._done.wait(0.5)
        if self._error is not None:
            raise RuntimeError(f"the block log's applier failed: {self._error}") from self._error
        return time.perf_counter() - t0

    def figures(self, start_ns: int, end_ns: int, drain_s: float | None):
        """(BlockLogFigures, {metric: values in ms}) of the blocks acknowledged in [start_ns, end_ns]."""
        return window_figures(self, start_ns, end_ns, drain_s)

    def trend_points(self, start_ns: int, end_ns: int, window_s: float) -> dict[str, list[tuple[float, float]]]:
        """Its figures over the window as time series, for their trends (runner/trends.py)."""
        return trend_points(self, start_ns, end_ns, window_s)

    # --- the rest of the contract, in step with the applier ------------------------------------
    def checkpoint(self, mode: str) -> None:
        with self._done:
            self._ckpts_queued += 1
        self._q.put(mode)            # the applier runs it between groups: the acknowledgements never wait

    def settle(self) -> None:
        self.drain()
        self._locked(self.inner.settle)

    def row_counts(self) -> dict[str, int]:
        self.drain()
        return self._locked(self.inner.row_counts)

    def iter_rows(self, table: str):
        """The rows, read under the lock a batch at a time (the applier is idle once drained)."""
        self.drain()
        rows = self._locked(self.inner.iter_rows, table)
        while True:
            with self._engine_lock:
                batch = [r for _, r in zip(range(2000), rows)]
            if not batch:
                return
            yield from batch

    def prepare_block(self, block: Block):
        return self.inner.prepare_block(block)      # touches no connection (the contract): no lock to take

    def reader(self):
        return self._locked(self.inner.reader)

    def reader_factory(self):
        return self._locked(self.inner.reader_factory)

    def info(self):
        return self._locked(self.inner.info)

    def page_map(self):
        return self.inner.page_map()        # uses no connection (the contract), and runs beside iter_rows

    def close(self, discard: bool = False) -> None:
        if self._thread is not None and self._thread.is_alive():
            if not discard:
                try:
                    self.drain()
                except RuntimeError:
                    pass
            else:                 # the files go next: what is queued is not applied
                while not self._q.empty():
                    self._q.get_nowait()
            self._q.put(None)
            self._thread.join(timeout=None if not discard else 60)
        if "log" in vars(self):          # open() got that far
            self.log.close()
        with self._engine_lock:
            self.inner.close(discard)
