"""What a life is doing, in a small shared file the driver reads: after a SIGKILL the page cache still
holds the last write, so where the kill landed is read, not guessed. One writer (the life; under a block log also
its applier thread, which says when it applies or checkpoints), one reader. The phase's block can then go back
(the applier's group, behind the log's head), so the newest block the life started on is a field of its own,
written only by the life's own thread: a record appended and synced, its acknowledgement not yet sent, is a
block the driver sent, not one the restart made up."""
from __future__ import annotations

import mmap
import os
import struct
import time
from pathlib import Path
from typing import NamedTuple

# apply: a block log's applier; rotate: its writer opening the next segment (log_file.py)
PHASES = ("start", "open", "verify", "idle", "commit", "checkpoint", "done", "apply", "rotate")
_FMT = "<Iqd"          # phase, block, phase start (CLOCK_MONOTONIC s, shared by every process)
_HEAD = "<q"           # the newest block the life started on, after the phase
SIZE = struct.calcsize(_FMT)
FILE = "crash-status.bin"


class Where(NamedTuple):
    phase: str
    block: int
    in_phase_s: float
    newest_block: int


class Status:
    def __init__(self, path: Path, create: bool = False) -> None:
        if create:
            Path(path).write_bytes(struct.pack(_FMT, 0, -1, 0.0) + struct.pack(_HEAD, -1))
        fd = os.open(path, os.O_RDWR)
        try:
            self._m = mmap.mmap(fd, SIZE + struct.calcsize(_HEAD))
        finally:
            os.close(fd)

    def set(self, phase: str, block: int = -1) -> None:
        self._m[:SIZE] = struct.pack(_FMT, PHASES.index(phase), block, _now())

    def begin(self, block: int) -> None:
        """The life's own thread starts committing block: the newest it started on, then the phase."""
        self._m[SIZE:] = struct.pack(_HEAD, block)
        self.set("commit", block)

    def get(self) -> Where:
        p, block, since = struct.unpack(_FMT, self._m[:SIZE])
        (newest,) = struct.unpack(_HEAD, self._m[SIZE:])
        return Where(PHASES[p] if p < len(PHASES) else "start", block, _now() - since, newest)


def _now() -> float:
    return time.clock_gettime(time.CLOCK_MONOTONIC)
