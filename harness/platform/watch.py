"""Is the machine quiet? The CPU that processes outside a cell's own spent while it ran (issue 76: a cell measured
beside other load measures that load too). A cell's own processes are the process tree of the harness that runs
it (its runner, feed, model, readers and a local server are all its descendants) and, under the docker runtime,
the processes of Docker's containers. Kernel threads (writeback, the journal: the cell's own I/O) are not counted,
nor interrupt time; a process that starts and exits between two snapshots is missed."""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

CLK_TCK = os.sysconf("SC_CLK_TCK")
KTHREADD = 2
METHOD = ("CPU of user processes outside the cell's process tree (and its containers), from /proc/<pid>/stat "
          "at the cell's start and end; kernel threads and interrupts not counted")


def _stat(pid: str) -> tuple[int, float] | None:
    """(ppid, its CPU seconds with its reaped children's) of one process, None if it is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    rest = raw[raw.rfind(")") + 2:].split()
    return int(rest[1]), sum(int(x) for x in rest[11:15]) / CLK_TCK


def process_cpu_s(pid: int) -> float | None:
    """One process's CPU seconds so far (its reaped children's included), None if it is gone or not visible."""
    st = _stat(str(pid))
    return st[1] if st else None


def _in_docker(pid: str) -> bool:
    try:
        return "docker" in Path(f"/proc/{pid}/cgroup").read_text()
    except OSError:
        return False


@dataclass
class Snapshot:
    at_s: float
    cpu_s: dict[str, float] = field(default_factory=dict)      # pid -> CPU seconds, outside the tree only


def snapshot(root: int | None = None, containers_are_own: bool = False) -> Snapshot:
    """Every user process outside root's tree (root: this process) with its CPU seconds so far."""
    root = os.getpid() if root is None else root
    procs = {p: s for p in os.listdir("/proc") if p.isdigit() and (s := _stat(p)) is not None}
    children: dict[int, list[str]] = {}
    for pid, (ppid, _) in procs.items():
        children.setdefault(ppid, []).append(pid)
    own, todo = set(), [str(root), str(KTHREADD)]               # kernel threads hang under kthreadd
    while todo:
        pid = todo.pop()
        own.add(pid)
        todo += children.get(int(pid), [])
    outside = {p: cpu for p, (_, cpu) in procs.items()
               if p not in own and not (containers_are_own and _in_docker(p))}
    return Snapshot(time.monotonic(), outside)


def outside_cores(a: Snapshot, b: Snapshot) -> float:
    """Cores' worth of CPU the processes outside the tree spent between two snapshots."""
    spent = sum(cpu - a.cpu_s.get(pid, 0.0) for pid, cpu in b.cpu_s.items() if cpu >= a.cpu_s.get(pid, 0.0))
    return round(spent / max(1e-9, b.at_s - a.at_s), 3)


def wait_quiet(max_s: float, below_cores: float, window_s: float = 10.0, containers_are_own: bool = False) -> \
        tuple[bool, float]:
    """Wait, up to max_s, for a window in which the processes outside used less than below_cores: (quiet?, the
    last window's cores)."""
    deadline = time.monotonic() + max_s
    cores = float("inf")
    while True:
        a = snapshot(containers_are_own=containers_are_own)
        time.sleep(min(window_s, max(0.1, deadline - time.monotonic())))
        cores = outside_cores(a, snapshot(containers_are_own=containers_are_own))
        if cores < below_cores or time.monotonic() >= deadline:
            return cores < below_cores, cores
