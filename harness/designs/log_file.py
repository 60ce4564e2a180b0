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


class BlockLogFile:
    def __init__(self, folder: Path, sync: bool) -> None:
        self.folder, self.sync = Path(folder), sync
        self.folder.mkdir(parents=True, exist_ok=True)
        self.bytes_written = 0
        self._last: dict[Path, int] = {}          # segment -> the last block it holds
        self._fd: int | None = None
        self._path: Path | None = None
        self._size = 0

    def segments(self) -> list[Path]:
        return sorted(self.folder.glob(f"*{SUFFIX}"))

    def records(self) -> Iterator[tuple[int, Path, int, bytes]]:
        """(block, segment, offset, payload) of every whole record, in order; the log is cut at a torn one."""
        segments = self.segments()
        for i, seg in enumerate(segments):
            with open(seg, "rb") as f:
                data = f.read()
            at = 0
            while at < len(data):
                rec = _record(data, at)
                if rec is None:           # torn: cut here, and drop any segment after (never acknowledged)
                    os.truncate(seg, at)
                    for later in segments[i + 1:]:
                        later.unlink()
                    return
                number, payload = rec
                self._last[seg] = number
                yield number, seg, at, payload
                at += _HEAD.size + len(payload)

    def append(self, number: int, payload: bytes) -> tuple[Path, int, int]:
        """Write one record (synced when the log is): (segment, where it starts, ns spent syncing)."""
        if self._fd is None or self._size >= SEGMENT_BYTES:
            self._open_segment(number)
        at = self._size
        os.write(self._fd, _HEAD.pack(MAGIC, number, len(payload), zlib.crc32(payload)) + payload)
        t0 = time.monotonic_ns()
        if self.sync:
            os.fdatasync(self._fd)
        sync_ns = time.monotonic_ns() - t0
        self._size += _HEAD.size + len(payload)
        self.bytes_written += _HEAD.size + len(payload)
        self._last[self._path] = number
        return self._path, at, sync_ns

    def read(self, seg: Path, offset: int) -> bytes:
        with open(seg, "rb") as f:
            f.seek(offset)
            head = f.read(_HEAD.size)
            _, _, n, _ = _HEAD.unpack(head)
            return f.read(n)

    def release_through(self, number: int) -> None:
        """Delete the segments every block of which is applied (not the one being written)."""
        for seg, last in list(self._last.items()):
            if last <= number and seg != self._path:
                seg.unlink(missing_ok=True)
                del self._last[seg]

    def bytes_on_disk(self) -> int:
        return sum(s.stat().st_size for s in self.segments())

    def _open_segment(self, number: int) -> None:
        self.close()
        self._path = self.folder / f"{number:020d}{SUFFIX}"
        self._fd = os.open(self._path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self._size = os.fstat(self._fd).st_size
        if self.sync:         # the new name itself must survive a power cut
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
