"""The block log's file: append-only segments on the data mount. A record is a header (magic, block number,
payload length, CRC-32 of the payload) and the payload; it is durable once fdatasync returns, and a new
segment's name once its folder is synced too.

Two threads share it: the writer appends (and rotates), the applier releases. They agree on the segments under
one lock, held only over bookkeeping, never over I/O: the applier releases only segments the writer has closed,
and `head` never names a segment past the first one that still holds a block not yet released.

Recovery reads records in order. Only a torn tail of the last segment is a crash's signature (an append that
never returned, so never acknowledged): it is cut, and the cut synced. A bad record anywhere else is damage to
acknowledged blocks: the open stops with an error naming the segment and offset, and nothing is deleted."""
from __future__ import annotations

import os
import struct
import threading
import time
import zlib
from pathlib import Path
from typing import Iterator

_HEAD = struct.Struct("<IqII")      # magic, block number, payload bytes, crc32
MAGIC = 0xB10C1061
_MAGIC_BYTES = struct.pack("<I", MAGIC)
SEGMENT_BYTES = 64 << 20            # a segment is deleted whole once every block in it is durably applied
SUFFIX = ".seg"
HEAD = "head"                       # the first segment still needed


class LogDamaged(RuntimeError):
    """A bad record where no crash can leave one: acknowledged blocks are unreadable."""


class BlockLogFile:
    """Segments 00000001.seg, 00000002.seg, ... from the one a `head` file names: found by name, never by listing
    the folder (the power-cut layer's FUSE mount lists nothing)."""

    def __init__(self, folder: Path, sync: bool, segment_bytes: int | None = None) -> None:
        self.folder, self.sync = Path(folder), sync
        self.segment_bytes = segment_bytes or SEGMENT_BYTES
        self.folder.mkdir(parents=True, exist_ok=True)
        self.bytes_written = 0
        self.rotations = 0                              # segments opened by append since open
        self.on_rotate = None                           # called (block) as its record opens a segment: a kill aims there
        self._lock = threading.Lock()                   # the bookkeeping below, writer and applier alike
        self._release_lock = threading.Lock()           # one release at a time
        self._closed: dict[int, tuple[int, int]] = {}   # segment -> (its last block, its bytes): never written again
        self._fd: int | None = None
        self._seq: int | None = None                    # the segment being written
        self._cur_last = 0
        self._size = 0
        self._first = int((self.folder / HEAD).read_text()) if (self.folder / HEAD).exists() else 1
        self._next = self._first
        self.peak_bytes = 0
        self._held_bytes = 0                            # on disk now: kept as it changes, read on the timed path

    def _path(self, seq: int) -> Path:
        return self.folder / f"{seq:08d}{SUFFIX}"

    # --- recovery ------------------------------------------------------------------------------
    def records(self) -> Iterator[tuple[int, int, int, bytes]]:
        """(block, segment, offset, payload) of every whole record, in order, from the head. Raises LogDamaged at a
        bad record anywhere but a torn tail of the last segment, before deleting anything."""
        seq = self._first
        while self._path(seq).exists():
            data = self._path(seq).read_bytes()
            last_segment = not self._path(seq + 1).exists()
            at, last = 0, 0
            while at < len(data):
                rec = _record(data, at)
                if rec is None:
                    if last_segment and not _whole_record_after(data, at):
                        self._cut(seq, at)
                        break
                    where = "a later segment exists" if not last_segment else "a whole record follows it"
                    raise LogDamaged(f"block log {self._path(seq)}: a bad record at offset {at} of {len(data)} bytes, "
                                     f"and {where}: acknowledged blocks are damaged; nothing was deleted")
                number, payload = rec
                yield number, seq, at, payload
                last = number
                at += _HEAD.size + len(payload)
            with self._lock:
                self._closed[seq] = (last, at)
                self._held_bytes += at
            seq += 1
        self._next = seq
        self.peak_bytes = max(self.peak_bytes, self._held_bytes)

    def _cut(self, seq: int, at: int) -> None:
        """The torn tail: cut, and the cut synced, so a second crash finds the same log."""
        fd = os.open(self._path(seq), os.O_WRONLY)
        try:
            os.ftruncate(fd, at)
            if self.sync:
                os.fsync(fd)
        finally:
            os.close(fd)

    # --- the writer ----------------------------------------------------------------------------
    def append(self, number: int, payload: bytes) -> tuple[int, int, int]:
        """Write one record (synced when the log is): (segment, where it starts, ns spent syncing)."""
        if self._fd is None or self._size >= self.segment_bytes:
            self._open_segment(number)
        at = self._size
        rec = _HEAD.pack(MAGIC, number, len(payload), zlib.crc32(payload)) + payload
        os.write(self._fd, rec)
        t0 = time.monotonic_ns()
        if self.sync:
            os.fdatasync(self._fd)
        sync_ns = time.monotonic_ns() - t0
        with self._lock:
            self._size += len(rec)
            self._cur_last = number
            self._held_bytes += len(rec)
        self.bytes_written += len(rec)
        self.peak_bytes = max(self.peak_bytes, self._held_bytes)
        return self._seq, at, sync_ns

    def _open_segment(self, number: int) -> None:
        """The new segment's file and name made durable first, then the old one published as closed: until then a
        release sees the old one as the one being written and keeps it."""
        seq = self._next
        fd = os.open(self._path(seq), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        self._sync_folder()       # the new name itself must survive a power cut
        rotating = self._seq is not None
        if rotating:
            self.rotations += 1
            if self.on_rotate is not None:
                self.on_rotate(number)
        old_fd = self._fd
        with self._lock:
            if self._seq is not None:
                self._closed[self._seq] = (self._cur_last, self._size)
            self._seq, self._next, self._fd, self._size = seq, seq + 1, fd, 0
        if old_fd is not None:
            os.close(old_fd)

    def read(self, seq: int, offset: int) -> bytes:
        with open(self._path(seq), "rb") as f:
            f.seek(offset)
            _, _, n, _ = _HEAD.unpack(f.read(_HEAD.size))
            return f.read(n)

    # --- the applier ---------------------------------------------------------------------------
    def release_through(self, number: int) -> int:
        """Drop the closed segments every block of which is at or before `number` (durably applied): the head first,
        so a crash between the two leaves only files no replay reads. The segments dropped."""
        with self._release_lock:
            with self._lock:
                current = self._seq if self._seq is not None else self._next
                kept = [s for s, (last, _) in self._closed.items() if last > number]
                first = min(kept + [current])
                done = sorted(s for s in self._closed if s < first)
            if not done:
                return 0
            self._write_head(first)
            for seq in done:
                self._path(seq).unlink(missing_ok=True)
            with self._lock:
                self._first = first
                for seq in done:
                    self._held_bytes -= self._closed.pop(seq)[1]
            return len(done)

    def _write_head(self, first: int) -> None:
        tmp = self.folder / f"{HEAD}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, str(first).encode())
            if self.sync:          # its bytes before its name: a power cut never leaves an empty head
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, self.folder / HEAD)
        self._sync_folder()

    # --- what it holds -------------------------------------------------------------------------
    def segments_last_blocks(self) -> list[int]:
        """The last block of each segment still on disk, oldest first (the one being written last)."""
        with self._lock:
            held = dict((s, last) for s, (last, _) in self._closed.items())
            if self._seq is not None:
                held[self._seq] = self._cur_last
        return [held[s] for s in sorted(held)]

    def bytes_on_disk(self) -> int:
        return self._held_bytes

    def _sync_folder(self) -> None:
        if self.sync:
            dfd = os.open(self.folder, os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)

    def close(self) -> None:
        with self._lock:
            fd, self._fd = self._fd, None
            if self._seq is not None:
                self._closed[self._seq] = (self._cur_last, self._size)
                self._seq = None
        if fd is not None:
            os.close(fd)


def _record(data: bytes, at: int) -> tuple[int, bytes] | None:
    if at + _HEAD.size > len(data):
        return None
    magic, number, n, crc = _HEAD.unpack_from(data, at)
    payload = data[at + _HEAD.size:at + _HEAD.size + n]
    if magic != MAGIC or len(payload) != n or zlib.crc32(payload) != crc:
        return None
    return number, payload


def _whole_record_after(data: bytes, at: int) -> bool:
    """Whether a whole record starts anywhere past `at`: records are synced in order, so one proves that the bad
    record before it had been acknowledged, and is damage rather than a torn append."""
    pos = data.find(_MAGIC_BYTES, at + 1)
    while pos != -1:
        if _record(data, pos) is not None:
            return True
        pos = data.find(_MAGIC_BYTES, pos + 1)
    return False
