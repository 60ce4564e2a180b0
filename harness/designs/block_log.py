"""Async writes, a design of the tree's last leaf (docs/design.md, "Designs over the contract"): a block is
acknowledged once its record is durable in an append-only log on the data mount (log_file.py); an applier
thread applies what has arrived to the engine, up to group_blocks blocks in ONE transaction that also records
the last block it applied (the adapter's apply_group and applied_mark). Opening replays the log past that mark,
so a block applied twice (a crash between its commit and the log's release) is skipped, not rewritten.

It wraps any adapter that has apply_group: to the runner, the crash lives and the readers it is the engine.
What it adds is measured here (figures()): the apply lag per block in seconds and in blocks, the apply
transactions and their phases, the replay at open."""
from __future__ import annotations

import pickle
import queue
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping

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


@dataclass
class _Pending:
    number: int
    rows: int
    ack_ns: int                 # time.monotonic_ns() when its record was durable
    where: tuple[int, int]      # (segment, offset) in the log
    payload: bytes | None       # its record, held in memory; None: read back from the log
    lag_blocks: int             # blocks acknowledged before it and not yet applied when it was acknowledged


@dataclass(frozen=True)
class Applied:
    """One block's apply, as figures() reads it."""
    number: int
    rows: int
    ack_ns: int
    applied_ns: int             # its transaction's commit end
    lag_blocks: int             # how far the engine trailed the log's head when it was acknowledged


@dataclass(frozen=True)
class Transaction:
    blocks: int
    start_ns: int
    end_ns: int
    phases: dict                # the adapter's block_phases() for the group


class BlockLogEngine:
    """The engine contract over `inner`; whatever it does not define is the adapter's own."""

    def __init__(self, inner, group_blocks: int, sync: bool, applied_is_durable: bool = False) -> None:
        self.inner, self.group_blocks, self.sync = inner, group_blocks, sync
        # whether the engine's commit outlives a power cut: then a record goes once applied, else once a checkpoint
        # made its apply durable (a power cut takes back unsynced commits; replay must still find their records)
        self.applied_is_durable = applied_is_durable
        self._applied_through = 0
        self._ckpts_seen = 0            # the engine's own checkpoints in commit, as of the last group
        self.phase_hook: Callable[[str, int], None] | None = None    # a crash life's status while a group applies
        self.applied: list[Applied] = []
        self.transactions: list[Transaction] = []
        self.ack_phases: list[tuple[int, float, float]] = []   # (ack_ns, write ms, sync ms) per block
        self.replay: dict = {"blocks": 0, "seconds": 0.0, "from_block": None}
        self._counters = None
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    def __getattr__(self, name: str):
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    # --- opening: the adapter's, then the replay, then the applier ------------------------------
    def open(self, settings: Mapping[str, object], data_dir: Path) -> None:
        self.inner.open(settings, data_dir)
        self.log = BlockLogFile(Path(data_dir) / LOG_DIR, self.sync)
        self._q: queue.Queue = queue.Queue()
        self._engine_lock = threading.Lock()
        self._done = threading.Condition()
        self._acked = self._applied_count = 0

    def create_schema(self, variant: str, indexes=None) -> None:
        self.inner.create_schema(variant, indexes)
        self._start()

    def use_schema(self, variant: str) -> None:
        self.inner.use_schema(variant)
        self._start()

    def _start(self) -> None:
        """Replay what the log holds past the engine's applied mark (timed), then start the applier."""
        t0 = time.perf_counter()
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
        self._applied_through, self._ckpts_seen = last, self.inner.checkpoints_in_commit()
        if self.applied_is_durable:      # else the mark read at open may itself be an unsynced commit
            self.log.release_through(last)
        self.replay = {"blocks": replayed, "seconds": round(time.perf_counter() - t0, 4), "from_block": mark + 1}
        self._counters = self.inner.counters()
        self._thread = threading.Thread(target=self._apply_loop, name="block-log-applier", daemon=True)
        self._thread.start()

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
        self._q.put(_Pending(rec.number, rec.rows_written, t1, (seg, at),
                             rec.payload if behind < MEMORY_BLOCKS else None, behind))
        self.ack_phases.append((t1, (t1 - t0 - sync_ns) / 1e6, sync_ns / 1e6))

    def block_phases(self) -> dict[str, float] | None:
        return None          # the acknowledgement is the log's append; the apply's phases are in figures()

    def counters(self):
        """The engine's counters as the applier last read them, after its last group: a driver's connection may
        not be used from two threads at once (APSW refuses), and the acknowledgement must not wait for an apply
        to ask. So the measured phase's counters are off by at most the group in flight at either end."""
        return self._counters

    # --- the applier --------------------------------------------------------------------------
    def _apply_loop(self) -> None:
        try:
            while (item := self._q.get()) is not None:
                if isinstance(item, str):           # a checkpoint, in its place among the blocks
                    with self._engine_lock:
                        self._hook("checkpoint")
                        through = self._applied_through
                        self.inner.checkpoint(item)
                        self._hook("idle")
                    self.log.release_through(through)      # what it applied before the checkpoint is on disk now
                    continue
                group = [item]
                while len(group) < self.group_blocks:
                    try:
                        nxt = self._q.get_nowait()
                    except queue.Empty:
                        break
                    if not isinstance(nxt, _Pending):
                        self._q.put(nxt)         # after this group: a checkpoint or the stop
                        break
                    group.append(nxt)
                self._apply(group)
        except BaseException as e:       # the next acknowledgement (or drain) raises it
            self._error = e
            with self._done:
                self._done.notify_all()

    def _apply(self, group: list[_Pending]) -> None:
        # decoded here, on the applier's side, as a real applier decodes what its log holds
        prepared = [pickle.loads(p.payload if p.payload is not None else self.log.read(*p.where)) for p in group]
        last = group[-1].number
        with self._engine_lock:
            self._hook("apply", last)
            t0 = time.monotonic_ns()
            self.inner.apply_group(prepared, last)
            t1 = time.monotonic_ns()
            self._counters = self.inner.counters()      # read where the connection is this thread's
            ckpts = self.inner.checkpoints_in_commit()
            self._hook("idle", last)
        self.transactions.append(Transaction(len(group), t0, t1, dict(self.inner.block_phases() or {})))
        # the lag as each block's acknowledgement found it: sampled on the writer's clock, so the drain after the
        # measured phase (no new blocks, the backlog shrinking) does not read as a lag that fell
        self.applied += [Applied(p.number, p.rows, p.ack_ns, t1, p.lag_blocks) for p in group]
        self._applied_through = last
        if self.applied_is_durable or ckpts > self._ckpts_seen:     # its commit, or a checkpoint in it, synced it
            self.log.release_through(last)
        self._ckpts_seen = ckpts
        with self._done:             # last: a drain returns on a group wholly done, its records let go
            self._applied_count += len(group)
            self._done.notify_all()

    def _hook(self, phase: str, block: int = -1) -> None:
        if self.phase_hook:
            self.phase_hook(phase, block)

    def drain(self) -> float:
        """Wait until every acknowledged block is applied; the seconds it took."""
        t0 = time.perf_counter()
        with self._done:
            while self._applied_count < self._acked and self._error is None:
                self._done.wait(0.5)
        if self._error is not None:
            raise RuntimeError(f"the block log's applier failed: {self._error}") from self._error
        return time.perf_counter() - t0

    # --- the rest of the contract, in step with the applier ------------------------------------
    def checkpoint(self, mode: str) -> None:
        self._q.put(mode)            # the applier runs it between groups: the acknowledgements never wait

    def settle(self) -> None:
        self.drain()
        with self._engine_lock:
            self.inner.settle()

    def row_counts(self) -> dict[str, int]:
        self.drain()
        with self._engine_lock:
            return self.inner.row_counts()

    def iter_rows(self, table: str):
        self.drain()
        return self.inner.iter_rows(table)

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
        self.inner.close(discard)
