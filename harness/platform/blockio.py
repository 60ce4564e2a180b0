"""Block-device I/O counters, read at the measured phase's two ends: the data's device as a whole
(/proc/diskstats: everything that reached the disk, the kernel's writeback and journal included) and the
share the cell's own processes issued (their block-I/O cgroup, else /proc/<pid>/io). Reading either is a
few file reads, cheap enough to take beside the engine's counters at the phase boundary."""
from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path

from harness.platform.cgroup import controller_dir_of

SECTOR_BYTES = 512          # /proc/diskstats counts 512-byte sectors whatever the device's own


@dataclass(frozen=True)
class IoSnapshot:
    read_bytes: int
    write_bytes: int
    read_ops: int | None = None      # None where the source counts bytes only (/proc/<pid>/io)
    write_ops: int | None = None

    def since(self, before: "IoSnapshot") -> dict:
        def d(a, b):
            return None if a is None or b is None else a - b
        return {k: d(v, getattr(before, k)) for k, v in asdict(self).items()}


def device_of(path: Path) -> str | None:
    """The block device (as /proc/diskstats names it) holding `path`; None on tmpfs, fuse and the like."""
    try:
        st = os.stat(path)
    except OSError:            # not visible from here (a server's data in its own container)
        return None
    major, minor = os.major(st.st_dev), os.minor(st.st_dev)
    if major == 0:             # an anonymous device: no disk under it
        return None
    link = Path(f"/sys/dev/block/{major}:{minor}")
    try:
        return link.resolve().name
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


IO_FILES = ("blkio.throttle.io_service_bytes_recursive", "io.stat")     # v1, v2


def counts_io(d: Path) -> bool:
    return any((d / f).exists() for f in IO_FILES)


def blkio_dir_of(pid: int | str) -> Path | None:
    """The block-I/O cgroup of process `pid` when it is one of its own (not the machine's root)."""
    return controller_dir_of(pid, "blkio", IO_FILES)


def cgroup_snapshot(d: Path) -> IoSnapshot | None:
    """v1: the throttle layer's counts (kept whatever the I/O scheduler); v2: io.stat."""
    try:
        if (d / "io.stat").exists():
            tot = {"rbytes": 0, "wbytes": 0, "rios": 0, "wios": 0}
            for line in (d / "io.stat").read_text().splitlines():
                for kv in line.split()[1:]:
                    k, _, v = kv.partition("=")
                    if k in tot:
                        tot[k] += int(v)
            return IoSnapshot(tot["rbytes"], tot["wbytes"], tot["rios"], tot["wios"])
        b = _v1_totals(d / "blkio.throttle.io_service_bytes_recursive")
        n = _v1_totals(d / "blkio.throttle.io_serviced_recursive")
        return IoSnapshot(b["Read"], b["Write"], n["Read"], n["Write"])
    except OSError:
        return None


def _v1_totals(p: Path) -> dict:
    tot = {"Read": 0, "Write": 0}
    for line in p.read_text().splitlines():
        f = line.split()
        if len(f) == 3 and f[1] in tot:
            tot[f[1]] += int(f[2])
    return tot


def proc_snapshot(pid: int | str) -> IoSnapshot | None:
    """/proc/<pid>/io: bytes this process made the kernel fetch from or send to storage (no op counts)."""
    try:
        kv = dict(line.split(": ") for line in Path(f"/proc/{pid}/io").read_text().splitlines())
    except (OSError, ValueError):
        return None
    return IoSnapshot(int(kv["read_bytes"]), int(kv["write_bytes"]))


@dataclass
class IoProbe:
    """What one cell reads at both ends of its measured phase: the data's device, and the cell's own share
    from `cgroup_dir` (the processes that hold the data) or, failing that, from this process's /proc."""
    device: str | None
    cgroup_dir: Path | None
    own_pid: int | None          # the /proc fallback: the runner itself, for an embedded engine

    @classmethod
    def for_data(cls, data_dir: Path, cgroup_dir: Path | None, embedded: bool) -> "IoProbe":
        return cls(device_of(data_dir), cgroup_dir, os.getpid() if embedded and cgroup_dir is None else None)

    @property
    def attributed_source(self) -> str | None:
        if self.cgroup_dir is not None:
            return "cgroup io.stat" if (self.cgroup_dir / "io.stat").exists() else "cgroup-v1 blkio"
        return "/proc/<pid>/io" if self.own_pid else None

    def snapshot(self) -> dict:
        return {"device": device_snapshot(self.device) if self.device else None,
                "attributed": cgroup_snapshot(self.cgroup_dir) if self.cgroup_dir is not None
                else proc_snapshot(self.own_pid) if self.own_pid else None}
