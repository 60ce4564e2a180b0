"""Host side of the block feed, started by the runtime for each run, outside the run's memory limit.

It generates every block (load and measured), converts it for the engine's driver (prepare_block) and
digests it into the expected-state model, then serves the results over run_dir/feed.sock. The runner
holds no model: each block carries the model's digest after it, which is all integrity needs.

After the load it spools the blocks of warmup + measure to a file before the clock starts (TSBS-style):
even at SCHED_IDLE, generating while the engine works took CPU from it on two cores (docs/overhead.md).
The spool is written here, so its page-cache pages are charged to this side, not to the engine's limit;
the runner reads them without charge or disk I/O. It holds every block asked for (an hour of p99_5x is ~3.6 GB
here, a 4-hour horizon four times that): the only bound is the disk's room, which the cell's disk check counts
(state/sizes.growth_bytes); blocks past a spool the disk cut short are generated live, and the result says so."""
from __future__ import annotations

import ctypes
import multiprocessing as mp
import os
import random
import shutil
import signal
import socket
import time
from pathlib import Path

from harness.feed import spool_cache
from harness.feed.protocol import (SOCKET_NAME, SPOOL_NAME, Built, FeedError, LoadArgs, Spooled, SpoolRequest,
                                   frame, recv, send, socket_path)
from harness.reads import params
from harness.reads.dc_check import ANSWER_LOG
from harness.workload.block import Block
from harness.workload.generator import BlockGenerator, WorkloadSpec

KEY_SAMPLE_EVERY_BLOCKS = 8
SPOOL_DISK_RESERVE_BYTES = 2 << 30   # a spool stops short of leaving less than this free: the engine's own room
SPOOL_DISK_CHECK_EVERY = 16          # records between two looks at the disk's free bytes
START_TIMEOUT_S = 60.0
_PR_SET_PDEATHSIG = 1


class FeedServer:
    """One run's feed process: start() returns once it listens; stop() ends it (a context manager)."""

    def __init__(self, spec: WorkloadSpec, load: LoadArgs | None, engine_name: str | None, run_dir: Path,
                 data_dir: Path, log_records: bool = False) -> None:
        self.run_dir, self.data_dir = Path(run_dir), Path(data_dir)
        ctx = mp.get_context("spawn")       # no fork of a process that may hold threads or connections
        self._ready, self._stop = ctx.Event(), ctx.Event()
        self._proc = ctx.Process(target=_main, name="block-feed", daemon=True,
                                 args=(spec, load, (engine_name, log_records), str(self.run_dir),
                                       str(self.data_dir), self._ready, self._stop, os.getpid()))

    @classmethod
    def for_plan(cls, plan) -> "FeedServer":
        return cls(plan.workload_spec(), LoadArgs(plan.load_entities, plan.load.batch_rows,
                                                  plan.load.expiry_spread_blocks,
                                                  plan.state.model if plan.state else None,
                                                  plan.load.age_blocks - (plan.state.aged_blocks if plan.state else 0),
                                                  plan.checked_reads),
                   plan.engine, Path(plan.run_dir), Path(plan.data_dir), log_records=plan.design is not None)

    def start(self) -> "FeedServer":
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._proc.start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self._ready.wait(0.1):
            if not self._proc.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the block feed did not start (exit code {self._proc.exitcode})")
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._proc.pid is not None:
            self._proc.join(timeout=5)
            if self._proc.is_alive():
                self._proc.kill()
                self._proc.join(timeout=5)
        (self.data_dir / SPOOL_NAME).unlink(missing_ok=True)

    def __enter__(self) -> "FeedServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def _main(spec, load, prep: tuple, run_dir: str, data_dir: str, ready, stop, parent_pid: int) -> None:
    for sig in (signal.SIGINT, signal.SIGTERM):      # the runtime handles Ctrl-C and SIGTERM, and stops us
        signal.signal(sig, signal.SIG_IGN)
    try:   # die with the runtime that started us, whatever kills it
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass
    # Lowest CPU priority: on a small machine the feed must not take cores from the engine while it works
    # (nice 19 alone did, docs/overhead.md); it runs in the engine's idle time.
    os.nice(19)
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except (AttributeError, OSError):
        pass
    with socket_path(Path(run_dir)) as (path, dir_fd):
        _listen_and_serve(path, dir_fd, spec, load, prep, Path(data_dir), Path(run_dir), ready, stop, parent_pid)


def _listen_and_serve(path: str, dir_fd: int, spec, load, prep: tuple, data_dir: Path, run_dir: Path, ready,
                      stop, parent_pid: int) -> None:
    try:
        os.unlink(SOCKET_NAME, dir_fd=dir_fd)
    except FileNotFoundError:
        pass
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    os.chmod(SOCKET_NAME, 0o666, dir_fd=dir_fd)        # a container's non-root runner connects too
    srv.listen(1)
    srv.settimeout(0.5)
    ready.set()
    try:
        while True:
            try:
                conn, _ = srv.accept()
                break
            except socket.timeout:
                if stop.is_set() or os.getppid() != parent_pid:
                    return
        conn.settimeout(None)
        try:
            _serve(conn, spec, load, prep, data_dir, run_dir)
        except (BrokenPipeError, ConnectionResetError, EOFError):
            return                                       # the runner is done, or gone
        except BaseException as e:
            try:
                send(conn, FeedError(f"block feed failed: {type(e).__name__}: {e}"))
            except OSError:
                pass
            raise
        finally:
            conn.close()
    finally:
        srv.close()
        os.unlink(SOCKET_NAME, dir_fd=dir_fd)


def _build(gen: BlockGenerator, block: Block | None, prepare, key_rng: random.Random, with_keys: bool) -> Built:
    m = gen.model
    sample = params.sample(m, key_rng, params.READ_SAMPLE) if with_keys and m.live_ids else None
    return Built(block, prepare(block) if block else None, m.digest.as_dict(), m.digest.logical_bytes,
                 len(m.live_ids), sample, m.digest.logical_bytes_added)


def _serve(conn: socket.socket, spec: WorkloadSpec, load: LoadArgs | None, prep: tuple,
           data_dir: Path, run_dir: Path) -> None:
    """Load blocks, the end-of-load marker, then (once the runner asks) the spool, then live blocks.
    prep: (engine name or None, whether a block log's records are made here)."""
    engine_name, log_records = prep
    if engine_name:
        from harness import registry
        prepare = registry.preparer(engine_name, log_records)
    else:
        prepare = lambda b: b                                          # noqa: E731 (harness-logic tests)
    gen = BlockGenerator(spec)
    key_rng = params.sample_rng(spec.seed)
    if load and load.model_path:       # the engine starts from a cloned state: its model, as built
        gen.restore(Path(load.model_path))
    elif load:
        for b in gen.load_blocks(load.entities, load.batch_rows, load.expiry_spread_blocks):
            send(conn, _build(gen, b, prepare, key_rng, with_keys=False))
    if load and load.answer_log and gen.dc:     # from the load's end: every block the readers may see
        gen.dc.start_log(run_dir / ANSWER_LOG, gen.block_number)
    for _ in range(load.age_blocks if load else 0):
        send(conn, _build(gen, gen.next_block(), prepare, key_rng, with_keys=False))
    send(conn, _build(gen, None, prepare, key_rng, with_keys=True))
    stream = _Stream(gen, prepare, key_rng)
    req = recv(conn)
    if not isinstance(req, SpoolRequest):
        raise RuntimeError(f"expected a spool request after the load, got {type(req).__name__}")
    send(conn, _spool_or_reuse(data_dir / SPOOL_NAME, stream, req.blocks,
                               spool_cache.cache_dir(spec, load, prep, req.blocks, KEY_SAMPLE_EVERY_BLOCKS)))
    while True:
        send(conn, next(stream))


class _Stream:
    """The blocks after the load, counted: every KEY_SAMPLE_EVERY_BLOCKS-th carries read parameters."""

    def __init__(self, gen: BlockGenerator, prepare, key_rng: random.Random) -> None:
        self.gen, self.prepare, self.key_rng, self.sent = gen, prepare, key_rng, 0

    def __iter__(self) -> "_Stream":
        return self

    def __next__(self) -> Built:
        built = _build(self.gen, self.gen.next_block(), self.prepare, self.key_rng,
                       with_keys=self.sent % KEY_SAMPLE_EVERY_BLOCKS == 0)
        self.sent += 1
        return built


def _spool_or_reuse(path: Path, stream: _Stream, want: int, cache: Path | None) -> Spooled:
    if want <= 0:
        return Spooled("", 0, 0, 0.0)
    if (kept := spool_cache.reuse(cache, path, stream)) is not None:
        return kept
    sp = spool(path, stream, want)
    spool_cache.keep(cache, path, stream, sp)
    return sp


def spool(path: Path, blocks, want: int, reserve_bytes: int = SPOOL_DISK_RESERVE_BYTES) -> Spooled:
    """Write `want` records (framed as on the socket) and write them back to disk, all before the clock starts,
    stopping short only where the disk would keep less than reserve_bytes free. The pages stay cached, charged
    to this process's cgroup."""
    t0, n, size, short = time.monotonic(), 0, 0, ""
    free_at_start = shutil.disk_usage(path.parent).free
    with open(path, "wb") as f:
        while n < want:
            data = frame(next(blocks))
            if n % SPOOL_DISK_CHECK_EVERY == 0:     # what it wrote counts at once: the disk's figure only at writeback
                free = min(shutil.disk_usage(path.parent).free, free_at_start - size)
                if free - len(data) * SPOOL_DISK_CHECK_EVERY < reserve_bytes:
                    short = (f"the disk kept {free / (1 << 30):.1f} GiB free after {n} of {want} blocks "
                             f"({size / (1 << 30):.2f} GiB), {reserve_bytes / (1 << 30):.1f} GiB kept for the engine")
                    break
            f.write(data)
            n, size = n + 1, size + len(data)
        f.flush()
        os.fdatasync(f.fileno())
    return Spooled(path.name, n, size, round(time.monotonic() - t0, 3), short_of=short)
