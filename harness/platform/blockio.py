"""Block-device I/O counters, read at the measured phase's two ends: the data's device as a whole
(/proc/diskstats: everything that reached the disk, the kernel's writeback and journal included) and the
share the cell's own processes caused (/proc/<pid>/io of every process in the data's cgroup, else of the
runner). The cgroup's own block-I/O counters are not used: cgroup v1's blkio stays at 0 on this project's
kernels even for O_DIRECT writes, and charges background writeback to the root. Reading either is a few
file reads, cheap enough to take beside the engine's counters at the phase boundary."""
from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path

SECTOR_BYTES = 512          # /proc/diskstats counts 512-byte sectors whatever the device's own


@dataclass(frozen=True)
class IoSnapshot:
    read_bytes: int
    write_bytes: int
    read_ops: int | None = None      # None where the source counts bytes only (/proc/<pid>/io)
    write_ops: int | None = None

    def since(self, before: "IoSnapshot | None") -> dict:
        """Each counter's increase; from nothing (a process born in between) its whole count."""
        def d(a, b):
            return None if a is None else a - (b or 0)
        return {k: d(v, getattr(before, k) if before else 0) for k, v in asdict(self).items()}


def device_of(path: Path) -> str | None:
    """The block device (as /proc/diskstats names it) holding `path`; None on tmpfs, fuse and the like."""
    try:
        st = os.stat(path)
    except OSError:            # not visible from here (a server's data in its own container)
        return None
    major, minor = os.major(st.st_dev), os.minor(st.st_dev)
    if major == 0:             # an anonymous device: no disk under it
        return None
    try:
        return Path(f"/sys/dev/block/{major}:{minor}").resolve().name
    except OSError:
        return None


def device_snapshot(name: str) -> IoSnapshot | None:
    try:
        lines = Path("/proc/diskstats").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        f = line.split()
        if len(f) >= 10 and f[2] == name:
            return IoSnapshot(read_bytes=int(f[5]) * SECTOR_BYTES, write_bytes=int(f[9]) * SECTOR_BYTES,
                              read_ops=int(f[3]), write_ops=int(f[7]))
    return None


def proc_snapshot(pid: int | str) -> IoSnapshot | None:
    """/proc/<pid>/io: bytes this process made the kernel fetch from storage, and bytes it dirtied for
    storage (counted when written to the page cache, whoever writes them back later)."""
    try:
        kv = dict(line.split(": ") for line in Path(f"/proc/{pid}/io").read_text().splitlines())
    except (OSError, ValueError):
        return None
    return IoSnapshot(int(kv["read_bytes"]), int(kv["write_bytes"]))


def cgroup_pids(d: Path) -> list[int]:
    try:
        return [int(x) for x in (d / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


@dataclass
class IoProbe:
    """What one cell reads at both ends of its measured phase: the data's device, and per process what the
    processes of `cgroup_dir` (those that hold the data) caused, else the runner's own where it holds the
    data (an embedded engine), else nothing (a server out of sight)."""
    device: str | None
    cgroup_dir: Path | None
    runner_holds_data: bool

    @classmethod
    def for_data(cls, data_dir: Path, cgroup_dir: Path | None, runner_holds_data: bool) -> "IoProbe":
        return cls(device_of(data_dir), cgroup_dir, runner_holds_data)

    @property
    def attributed_source(self) -> str:
        return ("/proc/<pid>/io of the data's cgroup's processes" if self.cgroup_dir is not None
                else "/proc/<pid>/io of the runner")

    def snapshot(self) -> dict:
        pids = (cgroup_pids(self.cgroup_dir) if self.cgroup_dir is not None
                else [os.getpid()] if self.runner_holds_data else [])
        procs = {pid: s for pid in pids if (s := proc_snapshot(pid)) is not None}
        return {"device": device_snapshot(self.device) if self.device else None, "processes": procs}


def processes_delta(start: dict, end: dict) -> IoSnapshot | None:
    """The processes' I/O between two snapshots: each process alive at the end, from its count at the start
    (or from zero if it started in between); a process that ended in between is not counted."""
    if not end:
        return None
    tot = {"read_bytes": 0, "write_bytes": 0}
    for pid, s in end.items():
        for k, v in s.since(start.get(pid)).items():
            if k in tot:
                tot[k] += v
    return IoSnapshot(**tot)
