"""The block feed: a separate process that generates, prepares and digests every block (load and
measured) and ships it to the runner ready to apply. As a thread, the generator shared the GIL with
in-process drivers (sqlite, libsql, duckdb) and held the writer back: bench-overhead measured 0.78-0.84
of a hand-written loop's rows/s. In its own process only unpickling (C code) is left in the runner.

Even in its own process, at the lowest priority, generating while the engine works cost postgres a
fifth of its rows/s on 2 cores (p99_5x quick unthrottled, tmpfs: 27.5-31.7K rows/s against 37.6-39.1K
with the feed idle). So after the load the feed spools the blocks of warmup + measure to a file before
the clock starts, as TSBS pre-generates its data, and the runner streams them back; only blocks beyond
the spool (an unthrottled run that outran its estimate, or the byte cap) are generated live."""
from __future__ import annotations

import itertools
import multiprocessing as mp
import os
import pickle
import queue
import random
import signal
import threading
import time
from dataclasses import dataclass

from harness.workload.block import Block
from harness.workload.generator import BlockGenerator, WorkloadSpec

# Blocks in flight per queue (the feed's pipe and the runner's local queue). All of it counts against
# the run's memory limit: a mendoza load block (1,000 entities) is ~10 MB as Python objects, so the
# depth stays small; bench-overhead's generator_wait_s shows whether it ever starves the writer.
PREFETCH_BLOCKS = 2
KEY_SAMPLE = 512            # live entity keys shipped for the readers to pick from
KEY_SAMPLE_EVERY_BLOCKS = 8
_PUT_TIMEOUT_S = 0.2
SPOOL_MAX_BYTES = 2 << 30     # beyond this the blocks are generated live (a full-profile hour is ~4 GB)
_SPOOL_DROP_EVERY_BYTES = 64 << 20   # read pages leave the page cache (and the memory limit) this often
_LEN = 8                      # bytes of each spooled record's length prefix


@dataclass
class Built:
    block: Block | None         # None: the end-of-load marker (its digest is the starting database's)
    prepared: object            # what the engine's apply_block takes (engine.prepare_block(block))
    digest_after: dict          # the model's per-table digest once this block is applied
    logical_bytes_after: int
    live_entities: int
    live_keys: list[bytes] | None = None   # a fresh sample of live keys, every few blocks


@dataclass(frozen=True)
class LoadArgs:
    entities: int
    batch_rows: int
    expiry_spread_blocks: int


@dataclass
class FeedError:
    message: str


@dataclass
class Spooled:
    """The feed's report once the spool file is complete (sent after the end-of-load marker)."""
    path: str
    blocks: int
    bytes: int
    seconds: float


def _build(gen: BlockGenerator, block: Block | None, prepare, key_rng: random.Random, with_keys: bool) -> Built:
    m = gen.model
    keys = None
    if with_keys and m.live_ids:
        ids = key_rng.sample(m.live_ids, min(KEY_SAMPLE, len(m.live_ids)))
        keys = [m.live[i].key for i in ids]
    return Built(block, prepare(block) if block else None, m.digest.as_dict(), m.digest.logical_bytes, len(m.live_ids), keys)


def _feed_main(spec: WorkloadSpec, load: LoadArgs | None, engine_name: str | None, q, stop, parent_pid: int,
               spool_path: str | None, spool_want, spool_drop_cache: bool) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)    # the runner handles Ctrl-C and stops us
    # Lowest CPU priority: on a small machine the feed must not take cores from a multi-threaded engine
    # (duckdb) while it applies a block; it runs ahead in the engine's idle time instead. nice 19 alone
    # still cost duckdb a fifth of its rows/s on 2 cores (6.3K vs 7.7K rows/s with SCHED_IDLE).
    os.nice(19)
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except (AttributeError, OSError):
        pass                   # not Linux, or refused: nice 19 stays
    try:
        _feed(spec, load, engine_name, q, stop, parent_pid, spool_path, spool_want, spool_drop_cache)
    except BaseException as e:
        q.put(FeedError(f"block feed failed: {type(e).__name__}: {e}"))
        raise


def _spool(path: str, blocks, want: int, runner_alive, drop_cache: bool) -> Spooled:
    """Write up to `want` Built records (length-prefixed pickles) to `path`, within SPOOL_MAX_BYTES, and
    write them back before the clock starts. With `drop_cache` (a run under a memory limit, where cached
    pages count against the engine's budget) they also leave the page cache until read back."""
    t0, n, size = time.monotonic(), 0, 0
    with open(path, "wb") as f:
        while n < want and size < SPOOL_MAX_BYTES and runner_alive():
            data = pickle.dumps(next(blocks), protocol=pickle.HIGHEST_PROTOCOL)
            f.write(len(data).to_bytes(_LEN, "little"))
            f.write(data)
            n, size = n + 1, size + _LEN + len(data)
        f.flush()
        os.fdatasync(f.fileno())
        if drop_cache:
            os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
    return Spooled(path, n, size, round(time.monotonic() - t0, 3))


def _feed(spec: WorkloadSpec, load: LoadArgs | None, engine_name: str | None, q, stop, parent_pid: int,
          spool_path: str | None = None, spool_want=None, spool_drop_cache: bool = False) -> None:
    if engine_name:
        from harness import registry
        prepare = registry.engine_class(engine_name)().prepare_block   # conversion only, never opened
    else:
        prepare = lambda b: b                                          # noqa: E731 (harness-logic tests)
    gen = BlockGenerator(spec)
    key_rng = random.Random(spec.seed ^ 0x5EED)      # its own stream: the workload's rng is untouched

    def runner_alive() -> bool:
        return not stop.is_set() and os.getppid() == parent_pid    # else killed or done: nothing to feed

    def put(item) -> bool:
        while runner_alive():
            try:
                q.put(item, timeout=_PUT_TIMEOUT_S)
                return True
            except queue.Full:
                continue
        return False

    if load:
        blocks = gen.load_blocks(load.entities, load.batch_rows, load.expiry_spread_blocks)
        for b in blocks:
            if not put(_build(gen, b, prepare, key_rng, with_keys=False)):
                return
        if not put(_build(gen, None, prepare, key_rng, with_keys=True)):
            return
    stream = (_build(gen, gen.next_block(), prepare, key_rng, with_keys=i % KEY_SAMPLE_EVERY_BLOCKS == 0)
              for i in itertools.count())
    if spool_path:
        while spool_want.value < 0:          # the runner sizes the spool once the load's rate is known
            if not runner_alive():
                return
            time.sleep(0.05)
        if spool_want.value and not put(_spool(spool_path, stream, spool_want.value, runner_alive,
                                               spool_drop_cache)):
            return
    while put(next(stream)):
        pass


class BlockFeed:
    """Runner side: a receiver thread unpickles what the feed process ships into a local queue, so the
    writer's get() is a queue pop. Errors in the feed process surface as a RuntimeError on get()."""

    def __init__(self, spec: WorkloadSpec, load: LoadArgs | None = None, engine_name: str | None = None,
                 spool_path: str | None = None, spool_drop_cache: bool = False) -> None:
        """With `spool_path` the feed waits after the load for spool(n) and writes n blocks there;
        `spool_drop_cache` keeps them out of the page cache but for the part being read back."""
        ctx = mp.get_context("spawn")       # no fork of a process holding open engine connections/threads
        self._mpq = ctx.Queue(maxsize=PREFETCH_BLOCKS)
        self._stop = ctx.Event()
        self._spool_want = ctx.Value("q", -1, lock=False)
        self._spool_path = spool_path
        self._spool_drop_cache = spool_drop_cache
        self.spooled: Spooled | None = None
        self._spool_ready = threading.Event()
        self.taken_after_load = 0              # blocks get() handed out after the end-of-load marker
        self._proc = ctx.Process(target=_feed_main, name="block-feed", daemon=True,
                                 args=(spec, load, engine_name, self._mpq, self._stop, os.getpid(),
                                       spool_path, self._spool_want, spool_drop_cache))
        self._local: queue.Queue = queue.Queue(maxsize=PREFETCH_BLOCKS)
        self._recv = threading.Thread(target=self._receive, name="block-feed-recv", daemon=True)
        self.live_keys: list[bytes] = []       # the latest sample; readers pick from it
        self.error: str | None = None
        self.after_load: Built | None = None

    def start(self) -> "BlockFeed":
        self._proc.start()
        self._recv.start()
        return self

    def _receive(self) -> None:
        while not self._stop.is_set():
            try:
                item = self._mpq.get(timeout=0.5)
            except queue.Empty:
                if not self._proc.is_alive():
                    return                  # get() reports how it died
                continue
            except Exception as e:
                self.error = f"block feed: {type(e).__name__}: {e}"
                return
            if isinstance(item, FeedError):
                self.error = item.message
                return
            if isinstance(item, Spooled):
                self.spooled = item
                self._spool_ready.set()
                if not self._read_spool(item):
                    return
                continue
            if not self._deliver(item):
                return

    def _deliver(self, item: Built) -> bool:
        if item.live_keys:
            self.live_keys = item.live_keys
        while not self._stop.is_set():
            try:
                self._local.put(item, timeout=0.2)
                return True
            except queue.Full:
                continue
        return False

    def _read_spool(self, sp: Spooled) -> bool:
        try:
            with open(sp.path, "rb") as f:
                dropped = 0
                for _ in range(sp.blocks):
                    built = pickle.loads(f.read(int.from_bytes(f.read(_LEN), "little")))
                    if not self._deliver(built):
                        return False
                    if self._spool_drop_cache and f.tell() - dropped >= _SPOOL_DROP_EVERY_BYTES:
                        os.posix_fadvise(f.fileno(), 0, f.tell(), os.POSIX_FADV_DONTNEED)
                        dropped = f.tell()
        except Exception as e:
            self.error = f"block spool {sp.path}: {type(e).__name__}: {e}"
            return False
        finally:
            self._unlink_spool()
        return True

    def _unlink_spool(self) -> None:
        if self._spool_path:
            try:
                os.unlink(self._spool_path)
            except FileNotFoundError:
                pass

    def spool(self, blocks: int, progress=None) -> Spooled | None:
        """After the load: have the feed write the next `blocks` blocks to the spool file and wait until
        it has (progress(seconds) every few seconds). None when there is no spool."""
        if not self._spool_path or blocks <= 0:
            self._spool_want.value = 0
            return None
        self._spool_want.value = blocks
        t0 = last = time.monotonic()
        while not self._spool_ready.wait(0.5):
            self._raise_if_failed()
            if progress and time.monotonic() - last >= 5:
                last = time.monotonic()
                progress(last - t0)
        return self.spooled

    def get(self) -> Built:
        """The next Built: the load blocks, the end-of-load marker (block None), then measured blocks."""
        while True:
            try:
                item = self._local.get(timeout=0.5)
                if self.after_load is not None:
                    self.taken_after_load += 1
                return item
            except queue.Empty:
                self._raise_if_failed()

    def _raise_if_failed(self) -> None:
        if self.error:
            raise RuntimeError(self.error)
        if not self._proc.is_alive():
            # Killed mid-message (OOM), the receiver can block forever on a partial read.
            code = self._proc.exitcode
            raise RuntimeError(f"block feed process died (exit code {code}"
                               f"{', SIGKILL: out of memory?' if code == -9 else ''})")

    def load_blocks(self):
        """Yield the load blocks; the end-of-load marker is kept as self.after_load."""
        while (item := self.get()).block is not None:
            yield item
        self.after_load = item

    def stop(self) -> None:
        self._stop.set()
        self._recv.join(timeout=5)
        self._proc.join(timeout=5)
        if self._proc.is_alive():
            self._proc.kill()
            self._proc.join(timeout=5)
        self._mpq.cancel_join_thread()
        self._mpq.close()
        self._unlink_spool()             # a run that stopped before reading it all
