"""The benches that check the harness against the engine alone: each pairs a harness side (the harness as a
run uses it) with a loop side (the engine's raw driver in a hand-written loop), per engine, and prints one
line per engine, then its file. overhead.py (writes: `make bench-overhead`), reads.py (reads: `make bench-reads`) and
build.py (a bulk-built state against the same rows loaded row by row: `make bench-build`) share this shape:

    BenchFile   the JSON file, written after each engine, so a failure later loses nothing
    paired      a ratio's repeats, the two sides alternated so that drift on a shared machine falls on both
    ratio_line  the printed line's start: the median ratio, its spread and NOISY (as pyperf flags it)
    data_root   where the databases go (tmpfs when it has room), removed after when the bench chose it"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Callable, Iterator

from harness import environment
from harness.errors import ConfigError
from harness.stats import summarize

TARGET_RATIO = 0.9            # harness ÷ raw, for the overhead and reads benches
# The databases go to tmpfs by default: the question is the harness's CPU cost, and at the engine's fastest
# a fixed per-operation cost weighs most (docs/overhead.md).
TMPFS = Path("/dev/shm")
TMPFS_MIN_FREE_BYTES = 8 << 30      # p99_5x quick: postgres's database and WAL, the cached spool


def log(bench: str, msg: str) -> None:
    print(f"[{bench}] {msg}", file=sys.stderr, flush=True)


def check_repeats(repeats: int) -> None:
    if repeats < 1:
        raise ConfigError(f"REPEATS: must be >= 1, got {repeats}")


def default_data_root() -> Path:
    """tmpfs when there is one with room, else ./data (as the runs' own default)."""
    try:
        st = os.statvfs(TMPFS)
    except OSError:
        return Path("data")
    roomy = st.f_bavail * st.f_frsize >= TMPFS_MIN_FREE_BYTES
    return TMPFS / "arkbench-bench" if roomy and environment.filesystem(TMPFS)["fstype"] == "tmpfs" else Path("data")


@contextlib.contextmanager
def data_root(asked: Path | None) -> Iterator[Path]:
    """The databases' root: the one asked, or the default, which is removed after (and nothing else)."""
    root = asked or default_data_root()
    try:
        yield root
    finally:
        if asked is None:
            shutil.rmtree(root, ignore_errors=True)


class BenchFile:
    """results/<prefix>-<time>.json: a version, what was asked, the machine, and one entry per engine."""

    def __init__(self, prefix: str, version: int, results_root: Path, **head) -> None:
        results_root.mkdir(parents=True, exist_ok=True)
        self.path = results_root / f"{prefix}-{time.strftime('%Y%m%d-%H%M%S')}.json"
        self.out = {"version": version, **head, "environment": environment.bench_environment(), "engines": {}}
        self.lines: list[str] = []

    def add(self, engine: str, record: dict, line: str) -> None:
        self.out["engines"][engine] = record
        self.lines.append(line)
        self.path.write_text(json.dumps(self.out, indent=2))

    def finish(self, passed: Callable[[dict], bool]) -> int:
        """The lines and the file, last; 0 when every engine's record passes."""
        for line in self.lines:
            print(line)
        print(self.path)
        return 0 if all(passed(e) for e in self.out["engines"].values()) else 1


def paired(bench: str, engine: str, repeats: int, side: Callable[[str, int], dict], rate: str) -> tuple[list[dict], dict]:
    """`repeats` tries of side("harness", r) against side("loop", r), their order alternated; each try keeps
    both sides and ratio = harness[rate] ÷ loop[rate]. Returns (tries, the ratio's summary)."""
    tries = []
    for r in range(repeats):
        sides = {}
        for name in (("harness", "loop") if r % 2 == 0 else ("loop", "harness")):
            log(bench, f"{engine} {r + 1}/{repeats}: {name}")
            sides[name] = side(name, r)
        h, lp = sides["harness"][rate], sides["loop"][rate]
        tries.append({**sides, "ratio": round(h / lp, 3) if h and lp else None})
    return tries, summarize([t["ratio"] for t in tries])


def ratio_record(stats: dict, tries: list[dict], **extra) -> dict:
    return {"ratio": round(stats["median"], 3) if stats["median"] else None, "ratio_stats": stats, **extra,
            "repeats": tries}


def ratio_line(engine: str, stats: dict) -> str:
    if not stats["median"]:
        return f"{engine} ratio n/a"
    return (f"{engine} ratio {stats['median']:.3f} (n={stats['n']}, min {stats['min']:.3f}, max {stats['max']:.3f}"
            f"{', NOISY' if stats['noisy'] else ''})")


def reaches_target(record: dict) -> bool:
    return record["ratio"] is not None and record["ratio"] >= TARGET_RATIO


def median_of(tries: list[dict], side: str, key: str) -> float | None:
    return summarize([t[side][key] for t in tries])["median"]
