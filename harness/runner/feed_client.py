"""The runner's side of the block feed (harness/feed/server.py runs outside the memory limit): a
receiver thread reads what the feed sends over run_dir/feed.sock, and the spool file once the feed
has written it, into a small local queue, so the writer's get() is a queue pop."""
from __future__ import annotations

import os
import queue
import socket
import struct
import threading
import time
from pathlib import Path

from harness.feed.protocol import (PREFETCH_BLOCKS, Built, FeedError, Spooled, SpoolRequest, read_frame, recv,
                                   send, socket_path)
from harness.platform.watch import process_cpu_s

CONNECT_TIMEOUT_S = 60.0
SPOOL_DROP_EVERY_BLOCKS = 8     # read spool pages leave the cache in steps of this many blocks (~16 MB at p99_5x)


class BlockFeed:
    def __init__(self, run_dir: Path, data_dir: Path) -> None:
        self.run_dir, self.data_dir = Path(run_dir), Path(data_dir)
        self._sock: socket.socket | None = None
        self._stop = threading.Event()
        self._local: queue.Queue = queue.Queue(maxsize=PREFETCH_BLOCKS)
        self._recv = threading.Thread(target=self._receive, name="block-feed-recv", daemon=True)
        self._spool_ready = threading.Event()
        self.spooled: Spooled | None = None
        self.taken_after_load = 0              # blocks get() handed out after the end-of-load marker
        self.read_sample: list[dict] | None = None   # the latest sample; readers draw parameters from it
        self.error: str | None = None
        self.after_load: Built | None = None
        self.pid: int | None = None            # the feed's process, where this runner's pid namespace sees it

    def start(self) -> "BlockFeed":
        deadline = time.monotonic() + CONNECT_TIMEOUT_S
        with socket_path(self.run_dir) as (path, _):
            while True:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                try:
                    s.connect(path)
                    break
                except (FileNotFoundError, ConnectionRefusedError) as e:
                    s.close()
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"no block feed at {self.run_dir / 'feed.sock'}: {e}") from None
                    time.sleep(0.1)
        self._sock = s
        self.pid = _peer_pid(s)
        self._recv.start()
        return self

    def cpu_s(self) -> float | None:
        """The feed's CPU seconds so far: what generating blocks took from the machine (None where a container
        hides the feed's process from this runner)."""
        return process_cpu_s(self.pid) if self.pid else None

    def _receive(self) -> None:
        try:
            while not self._stop.is_set():
                item = recv(self._sock)
                if isinstance(item, FeedError):
                    self.error = item.message
                    return
                if isinstance(item, Spooled):
                    self.spooled = item
                    self._spool_ready.set()
                    if item.blocks and not self._read_spool(item):
                        return
                    continue
                if not self._deliver(item):
                    return
        except (EOFError, OSError) as e:
            if not self._stop.is_set():
                self.error = f"block feed: {e}"
        except Exception as e:
            self.error = f"block feed: {type(e).__name__}: {e}"

    def _deliver(self, item: Built) -> bool:
        if item.read_sample and item.block is None:   # the loaded database's; a block's, once applied
            self.read_sample = item.read_sample
        while not self._stop.is_set():
            try:
                self._local.put(item, timeout=0.2)
                return True
            except queue.Full:
                continue
        return False

    def _read_spool(self, sp: Spooled) -> bool:
        """The spool's blocks in order, each page dropped from the cache once read: an hour's spool is ~4-8 GB of
        the host's cache, and a page evicted before it is read comes back charged to this process (inside MEM
        for an embedded engine); read once, none of it is needed again."""
        path = self.data_dir / sp.name
        try:
            with open(path, "rb") as f:
                for i in range(sp.blocks):
                    if not self._deliver(read_frame(f)):
                        return False
                    if i % SPOOL_DROP_EVERY_BLOCKS == SPOOL_DROP_EVERY_BLOCKS - 1:
                        os.posix_fadvise(f.fileno(), 0, f.tell(), os.POSIX_FADV_DONTNEED)
        except Exception as e:
            self.error = f"block spool {path}: {type(e).__name__}: {e}"
            return False
        finally:
            path.unlink(missing_ok=True)
        return True

    def spool(self, blocks: int, progress=None) -> Spooled:
        """After the load: have the feed spool the next `blocks` blocks and wait until it has written them
        back (progress(seconds) every few seconds)."""
        send(self._sock, SpoolRequest(max(0, blocks)))
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
        if not self._recv.is_alive() and self._local.empty():
            raise RuntimeError("the block feed stopped sending")

    def load_blocks(self):
        """Yield the load blocks; the end-of-load marker is kept as self.after_load."""
        while (item := self.get()).block is not None:
            yield item
        self.after_load = item

    def stop(self) -> None:
        self._stop.set()
        if self._sock is not None:
            try:
                self._sock.shutdown(socket.SHUT_RDWR)     # wakes the receiver out of recv()
            except OSError:
                pass
        if self._recv.is_alive():
            self._recv.join(timeout=5)
        if self._sock is not None:
            self._sock.close()


def _peer_pid(s: socket.socket) -> int | None:
    """The pid of the process that listens on the feed's socket (the feed itself), or None where the kernel
    reports 0: a peer in another pid namespace, as for a runner in a container."""
    try:
        pid = struct.unpack("3i", s.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))[0]
    except (OSError, AttributeError):
        return None
    return pid or None
