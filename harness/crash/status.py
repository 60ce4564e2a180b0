"""What a life is doing, in a small shared file the driver reads: after a SIGKILL the page cache still
holds the last write, so where the kill landed is read, not guessed. One writer (the life; under a block log also
its applier thread, which says when it applies or checkpoints), one reader."""
from __future__ import annotations

import mmap
import os
import struct
import time
from pathlib import Path

# apply: a block log's applier; rotate: its writer opening the next segment (log_file.py)
PHASES = ("start", "open", "verify", "idle", "commit", "checkpoint", "done", "apply", "rotate")
_FMT = "<Iqd"          # phase, block, phase start (CLOCK_MONOTONIC s, shared by every process)
SIZE = struct.calcsize(_FMT)
FILE = "crash-status.bin"


class Status:
    def __init__(self, path: Path, create: bool = False) -> None:
        if create:
            Path(path).write_bytes(struct.pack(_FMT, 0, -1, 0.0))
        fd = os.open(path, os.O_RDWR)
        try:
            self._m = mmap.mmap(fd, SIZE)
        finally:
            os.close(fd)

    def set(self, phase: str, block: int = -1) -> None:
        self._m[:SIZE] = struct.pack(_FMT, PHASES.index(phase), block, _now())

    def get(self) -> tuple[str, int, float]:
        """(phase, block, seconds in it)."""
        p, block, since = struct.unpack(_FMT, self._m[:SIZE])
        return PHASES[p] if p < len(PHASES) else "start", block, _now() - since


def _now() -> float:
    return time.clock_gettime(time.CLOCK_MONOTONIC)
