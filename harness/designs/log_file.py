"""The block log's file: append-only segments on the data mount. A record is a header (magic, block number,
payload length, CRC-32 of the payload) and the payload; it is durable once fdatasync returns, and a new
segment's name once its folder is synced too. Recovery reads records in order and cuts the log at the first
torn one (a crash in the middle of an append): nothing after it was ever acknowledged."""
from __future__ import annotations

import os
import struct
import time
import zlib
from pathlib import Path
from typing import Iterator

_HEAD = struct.Struct("<IqII")      # magic, block number, payload bytes, crc32
MAGIC = 0xB10C1061
SEGMENT_BYTES = 64 << 20            # a segment is deleted whole once every block in it is applied
SUFFIX = ".seg"
HEAD = "head"                       # the first segment still needed


class BlockLogFile:
    """Segments 00000001.seg, 00000002.seg, ... from the one a `head` file names: found by name, never by listing
    the folder (the power-cut layer's FUSE mount lists nothing)."""

    def __init__(self, folder: Path, sync: bool) -> None:
        self.folder, self.sync = Path(folder), sync
        self.folder.mkdir(parents=True, exist_ok=True)
        self.bytes_written = 0
        self._last: dict[int, int] = {}           # segment -> the last block it holds
        self._fd: int | None = None
        self._seq: int | None = None              # the segment being written
        self._size = 0
        self._first = int((self.folder / HEAD).read_text()) if (self.folder / HEAD).exists() else 1
        self._next = self._first

    def _path(self, seq: int) -> Path:
        return self.folder / f"{seq:08d}{SUFFIX}"

    def records(self) -> Iterator[tuple[int, int, int, bytes]]:
        """(block, segment, offset, payload) of every whole record, in order; the log is cut at a torn one."""
        seq = self._first
        while self._path(seq).exists():
            data = self._path(seq).read_bytes()
            self._next = seq + 1
            at = 0
            while at < len(data):
                rec = _record(data, at)
                if rec is None:           # torn: cut here; any segment after it was never acknowledged
                    os.truncate(self._path(seq), at)
                    while self._path(self._next).exists():
                        self._path(self._next).unlink()
                        self._next += 1
                    self._next = seq + 1
                    return
                number, payload = rec
                self._last[seq] = number
                yield number, seq, at, payload
                at += _HEAD.size + len(payload)
            seq += 1

    def append(self, number: int, payload: bytes) -> tuple[int, int, int]:
        """Write one record (synced when the log is): (segment, where it starts, ns spent syncing)."""
        if self._fd is None or self._size >= SEGMENT_BYTES:
            self._open_segment()
        at = self._size
        os.write(self._fd, _HEAD.pack(MAGIC, number, len(payload), zlib.crc32(payload)) + payload)
        t0 = time.monotonic_ns()
        if self.sync:
            os.fdatasync(self._fd)
        sync_ns = time.monotonic_ns() - t0
        self._size += _HEAD.size + len(payload)
        self.bytes_written += _HEAD.size + len(payload)
        self._last[self._seq] = number
        return self._seq, at, sync_ns

    def read(self, seq: int, offset: int) -> bytes:
        with open(self._path(seq), "rb") as f:
            f.seek(offset)
            _, _, n, _ = _HEAD.unpack(f.read(_HEAD.size))
            return f.read(n)

    def release_through(self, number: int) -> None:
        """Drop the segments every block of which is applied (not the one being written): the head first, so a
        crash between the two leaves only files no replay reads."""
        done = sorted(seq for seq, last in self._last.items() if last <= number and seq != self._seq)
        if not done:
            return
        first = min([s for s in self._last if s not in done] + [self._next])
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
        self._first = first
        for seq in done:
            self._path(seq).unlink(missing_ok=True)
            del self._last[seq]

    def segments_last_blocks(self) -> list[int]:
        """The last block of each segment still on disk, oldest first."""
        return [self._last[s] for s in sorted(self._last)]

    def bytes_on_disk(self) -> int:
        return sum(self._path(s).stat().st_size for s in self._last if self._path(s).exists())

    def _open_segment(self) -> None:
        self.close()
        self._seq, self._next = self._next, self._next + 1
        self._fd = os.open(self._path(self._seq), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        self._size = 0
        self._sync_folder()       # the new name itself must survive a power cut

    def _sync_folder(self) -> None:
        if self.sync:
            dfd = os.open(self.folder, os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _record(data: bytes, at: int) -> tuple[int, bytes] | None:
    if at + _HEAD.size > len(data):
        return None
    magic, number, n, crc = _HEAD.unpack_from(data, at)
    payload = data[at + _HEAD.size:at + _HEAD.size + n]
    if magic != MAGIC or len(payload) != n or zlib.crc32(payload) != crc:
        return None
    return number, payload
