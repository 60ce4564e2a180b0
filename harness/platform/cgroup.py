"""Memory cgroups, v1 or v2, whichever the machine has: create one with a hard limit and no swap, put a
child in it before it runs anything, read usage and OOM kills, remove it afterwards."""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
UNLIMITED = 1 << 62


def version() -> str | None:
    if (ROOT / "cgroup.controllers").exists():
        return "v2"
    if (ROOT / "memory" / "memory.limit_in_bytes").exists():
        return "v1"
    return None


# The local runtime's memory cgroup for a server engine's server (the runner stays outside it): the
# engine's server launcher calls join_server_cgroup() in the server process before it execs.
SERVER_CGROUP_ENV = "ARKBENCH_SERVER_CGROUP"


def join_server_cgroup() -> None:
    """A preexec_fn for a server engine's server process: join the run's memory cgroup, if it has one."""
    path = os.environ.get(SERVER_CGROUP_ENV)
    if path:
        (Path(path) / "cgroup.procs").write_text(str(os.getpid()))


def own_memory_dir() -> Path | None:
    """The memory cgroup this process is in (inside a container: the container's own)."""
    return memory_dir_of("self")


def memory_dir_of(pid: int | str) -> Path | None:
    """The memory cgroup of process `pid` ("self" for this one)."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, rel = line.split(":", 2)
        if rel == "/":   # the root cgroup's usage is the whole machine's, not ours
            continue
        if "memory" in controllers.split(","):
            for base in (ROOT / "memory" / rel.lstrip("/"), ROOT / "memory"):
                if (base / "memory.usage_in_bytes").exists():
                    return base
        if controllers == "" and (ROOT / "cgroup.controllers").exists():
            for base in (ROOT / rel.lstrip("/"), ROOT):
                if (base / "memory.current").exists():
                    return base
    return None


def run_memory_dir() -> Path | None:
    """The cgroup whose usage is this run's own: only when a runtime made one for it (MEM in the local
    runtime, the container under docker). Otherwise the process shares a cgroup with whatever else
    the machine or session runs, and its usage says nothing about the run."""
    if os.environ.get("ARKBENCH_MEM_ENFORCEMENT", "none") == "none":
        return None
    return own_memory_dir()


def process_rss_bytes() -> int | None:
    """This process's resident set (VmRSS): for an embedded engine, the harness and the engine's heap."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _read_int(p: Path) -> int | None:
    try:
        text = p.read_text().strip()
    except OSError:
        return None
    return None if text == "max" else int(text)


def usage_bytes(d: Path | None) -> int | None:
    if d is None:
        return None
    return _read_int(d / "memory.usage_in_bytes") if (d / "memory.usage_in_bytes").exists() \
        else _read_int(d / "memory.current")


def limit_bytes(d: Path | None) -> int | None:
    """The effective hard limit of cgroup `d`, None when unlimited."""
    if d is None:
        return None
    v = _read_int(d / "memory.limit_in_bytes") if (d / "memory.limit_in_bytes").exists() \
        else _read_int(d / "memory.max")
    return None if v is None or v >= UNLIMITED else v


def oom_kills(d: Path) -> int:
    """OOM kills inside cgroup `d` (v2 memory.events; v1 memory.oom_control on newer kernels)."""
    for name in ("memory.events", "memory.oom_control"):
        try:
            for line in (d / name).read_text().splitlines():
                k, _, v = line.partition(" ")
                if k == "oom_kill":
                    return int(v)
        except OSError:
            continue
    return 0


def failcnt(d: Path) -> int:
    return _read_int(d / "memory.failcnt") or 0


class MemoryCgroup:
    """A fresh memory cgroup with a hard limit and no swap. Raises PermissionError/OSError when it cannot
    be made or the limit does not read back, so the caller can refuse rather than run unlimited."""

    def __init__(self, name: str, limit: int) -> None:
        self.version = version()
        if self.version is None:
            raise OSError("no memory cgroup controller is mounted under /sys/fs/cgroup")
        if self.version == "v1":
            self.path = ROOT / "memory" / "arkbench" / name
            self.path.mkdir(parents=True, exist_ok=False)
            (self.path / "memory.limit_in_bytes").write_text(str(limit))
            if (self.path / "memory.memsw.limit_in_bytes").exists():
                (self.path / "memory.memsw.limit_in_bytes").write_text(str(limit))
            (self.path / "memory.swappiness").write_text("0")
        else:
            parent = ROOT / "arkbench"
            parent.mkdir(exist_ok=True)
            (parent / "cgroup.subtree_control").write_text("+memory")
            self.path = parent / name
            self.path.mkdir(exist_ok=False)
            (self.path / "memory.max").write_text(str(limit))
            if (self.path / "memory.swap.max").exists():
                (self.path / "memory.swap.max").write_text("0")
        got = limit_bytes(self.path)
        if got is None or abs(got - limit) > 4096 * 2:
            self.remove()
            raise OSError(f"the cgroup limit did not take: asked {limit}, reads {got}")
        self.limit = got

    @property
    def enforcement(self) -> str:
        return f"cgroup-{self.version}"

    def add_self(self) -> None:
        """Called in the child between fork and exec, so nothing runs outside the limit."""
        (self.path / "cgroup.procs").write_text(str(os.getpid()))

    def oom_killed(self) -> bool:
        return oom_kills(self.path) > 0

    def kill_all(self) -> None:
        """SIGKILL whatever is left in the cgroup (a database server orphaned when its runner died)."""
        try:
            pids = [int(x) for x in (self.path / "cgroup.procs").read_text().split()]
        except OSError:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def remove(self, timeout_s: float = 10.0) -> None:
        self.kill_all()
        deadline = time.monotonic() + timeout_s
        while self.path.exists():
            try:
                self.path.rmdir()
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
