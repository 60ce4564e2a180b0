"""The reference's warm start ("pre-load DB into OS cache: vmtouch -t"): every file of a cell's database read
once by a process inside the cell's memory limit, so the kernel keeps of it what fits and charges it to the
limit, and its residency measured before and after with mincore(2).

Run it in the process that holds the data (an embedded engine's runner), or as
`python -m harness.state.preload DIR OUT.json` started inside the data's cgroup or container."""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from harness.platform.pagecache import files, resident_bytes

READ_CHUNK_BYTES = 1 << 20          # one buffer, reused: the reader's own memory stays flat
PRELOAD_FILE = "preload.json"       # in the run folder: the preload of a server's data, made in its own cgroup


def read_all(root: Path) -> int:
    """vmtouch -t: read every byte once; returns the bytes read."""
    buf = bytearray(READ_CHUNK_BYTES)
    view, total = memoryview(buf), 0
    for p in files(root):
        with open(p, "rb", buffering=0) as f:
            os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_SEQUENTIAL)
            while n := f.readinto(view):
                total += n
    return total


def preload(root: Path) -> dict:
    """The record a result's load section keeps: seconds, bytes read, resident bytes before and after."""
    before = resident_bytes(root)
    t0 = time.perf_counter()
    n = read_all(root)
    secs = time.perf_counter() - t0
    return {"preload_s": round(secs, 3), "preload_bytes": n, "resident_bytes_before_preload": before,
            "resident_bytes_after_preload": resident_bytes(root)}


def main(argv: list[str]) -> int:
    record = preload(Path(argv[1]))
    Path(argv[2]).write_text(json.dumps(record, indent=2))
    return 0


def preload_if_asked(plan) -> None:
    """In the server's container, before the server starts: load.preload's read of the cloned database,
    inside the container's limit, recorded in the run folder for the runner."""
    if plan.state and plan.load.preload:
        (Path(plan.run_dir) / PRELOAD_FILE).write_text(json.dumps(preload(Path(plan.data_dir)), indent=2))


def preload_record(run_dir: Path) -> dict:
    try:
        return json.loads((run_dir / PRELOAD_FILE).read_text())
    except (OSError, ValueError) as e:
        raise RuntimeError(f"load.preload: the server's container left no {PRELOAD_FILE} ({e})") from None


if __name__ == "__main__":
    sys.exit(main(sys.argv))
