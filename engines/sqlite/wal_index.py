"""The WAL observed without touching the database: frames in use from the wal-index (-shm) header, checkpoints
from the WAL header's sequence number. Read by the 1 s sampler and the harness's autocheckpoint."""
from __future__ import annotations

import os
import struct
import threading
from pathlib import Path

_SHM_MXFRAME = struct.Struct("=I")   # wal-index header: u32 mxFrame at offset 16, native byte order
_WAL_HEADER = struct.Struct(">IIII")  # magic, version, page size, checkpoint sequence


class WalIndex:
    """The -shm file is opened once and held until close(): SQLite's locks on it are POSIX locks, which any
    close() of any descriptor of that file in this process drops. Reading it through a fresh descriptor each
    second released the engine's own locks; another process opening the database then truncated the wal-index
    under the engine's mapping (SIGBUS)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._shm_fd: int | None = None
        self._seen = self.checkpoint_seq() or 0      # a WAL created from now on starts at 0
        self._count = 0

    def bytes_in_use(self) -> int:
        """Frames in the WAL now (mxFrame), not the file size: SQLite reuses the WAL file from its start after a
        checkpoint, so the file only shows the high-water mark."""
        hdr = self._header()
        if hdr is None:
            return 0
        page = struct.unpack_from("=H", hdr, 14)[0]
        page = 65536 if page == 1 else page
        (mx_frame,) = _SHM_MXFRAME.unpack_from(hdr, 16)
        return 32 + mx_frame * (page + 24) if mx_frame else 0

    def frames(self) -> int:
        """Frames in the WAL after the last commit: what SQLite's WAL hook compares with the threshold."""
        hdr = self._header()
        return _SHM_MXFRAME.unpack_from(hdr, 16)[0] if hdr is not None else 0

    def _header(self) -> bytes | None:
        with self._lock:
            if self._shm_fd is None:
                try:
                    self._shm_fd = os.open(f"{self.path}-shm", os.O_RDONLY)
                except OSError:
                    return None
            hdr = os.pread(self._shm_fd, 48, 0)
        return hdr if len(hdr) >= 48 else None

    def checkpoint_seq(self) -> int | None:
        try:
            with open(f"{self.path}-wal", "rb") as f:
                hdr = f.read(16)
        except OSError:
            return None
        if len(hdr) < 16:
            return None
        magic, _, _, seq = _WAL_HEADER.unpack(hdr)
        return seq if magic in (0x377F0682, 0x377F0683) else None

    def checkpoints(self) -> int:
        """Each WAL restart after a completed checkpoint bumps the header's checkpoint sequence number."""
        with self._lock:
            seq = self.checkpoint_seq()
            if seq is not None and seq > self._seen:
                self._count += seq - self._seen
                self._seen = seq
            return self._count

    def close(self) -> None:
        """Only once the engine's connection is closed: closing it drops this process's locks on the -shm."""
        with self._lock:
            fd, self._shm_fd = self._shm_fd, None
        if fd is not None:
            os.close(fd)
