"""What the feed server and the runner's client share: the records on the wire, their framing, and
where the socket lives. Frames are an 8-byte little-endian length and a pickle."""
from __future__ import annotations

import os
import pickle
import socket
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from harness.workload.block import Block

SOCKET_NAME = "feed.sock"          # in the run directory: bind-mounted into a container, as results are
SPOOL_NAME = "block-spool.bin"     # in the data directory
# Blocks in flight on the runner side (its local queue). They count against the run's memory limit: a
# mendoza load block (1,000 entities) is ~10 MB as Python objects, so the depth stays small.
PREFETCH_BLOCKS = 2
_LEN = 8


@dataclass
class Built:
    block: Block | None         # None: the end-of-load marker (its digest is the starting database's)
    prepared: object            # what the engine's apply_block takes (engine.prepare_block(block))
    digest_after: dict          # the model's per-table digest once this block is applied
    logical_bytes_after: int
    live_entities: int
    read_sample: list[dict] | None = None  # every few blocks, live entities as read parameters (reads/params.py)
    logical_bytes_added: int = 0   # values' bytes of every row written so far, a terminated version's rewrite too


@dataclass(frozen=True)
class LoadArgs:
    entities: int
    batch_rows: int
    expiry_spread_blocks: int
    model_path: str | None = None        # a starting state's model: restored instead of replaying the load
    age_blocks: int = 0                  # blocks of the mix after the load, sent as load blocks
    answer_log: bool = False             # log the DC model's answers per block (reads/dc_check.py)


@dataclass
class FeedError:
    message: str


@dataclass
class Spooled:
    """The feed's report once the spool file is complete and written back."""
    name: str            # file name in the data directory ("" when nothing was spooled)
    blocks: int
    bytes: int
    seconds: float
    reused: bool = False   # an earlier cell's, copied (feed/spool_cache.py)
    short_of: str = ""     # why it holds fewer blocks than asked (the disk's room), "" when it holds them all


@dataclass(frozen=True)
class SpoolRequest:
    """Runner -> feed, after the load: spool this many blocks now."""
    blocks: int


def frame(obj: object) -> bytes:
    """A record as the socket carries it and spool files hold it."""
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    return len(data).to_bytes(_LEN, "little") + data


def send(sock: socket.socket, obj: object) -> None:
    sock.sendall(frame(obj))


def recv(sock: socket.socket) -> object:
    """The next record; EOFError when the other side closed between records."""
    n = int.from_bytes(_recv_exact(sock, _LEN, at_boundary=True), "little")
    return pickle.loads(_recv_exact(sock, n))


def _recv_exact(sock: socket.socket, n: int, at_boundary: bool = False) -> memoryview:
    buf = memoryview(bytearray(n))
    got = 0
    while got < n:
        k = sock.recv_into(buf[got:])
        if not k:
            raise EOFError("the block feed closed its socket" if at_boundary and not got
                           else "the block feed's socket closed mid-record")
        got += k
    return buf


def read_frame(f) -> object:
    n = int.from_bytes(f.read(_LEN), "little")
    return pickle.loads(f.read(n))


@contextmanager
def socket_path(run_dir: Path):
    """(path, folder descriptor): a path to run_dir/feed.sock that fits sun_path (108 bytes) however deep
    run_dir is, through an open descriptor of the folder (/proc/self/fd/N/feed.sock)."""
    fd = os.open(run_dir, os.O_RDONLY | os.O_DIRECTORY)
    try:
        yield f"/proc/self/fd/{fd}/{SOCKET_NAME}", fd
    finally:
        os.close(fd)
