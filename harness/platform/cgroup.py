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
SERVER_BLKIO_ENV = "ARKBENCH_SERVER_BLKIO_CGROUP"     # v1 only: its block-I/O twin (v2 has one tree)


def join_server_cgroup() -> None:
    """A preexec_fn for a server engine's server process: join the run's memory cgroup (and its block-I/O
    twin), if it has one."""
    for env in (SERVER_CGROUP_ENV, SERVER_BLKIO_ENV):
        path = os.environ.get(env)
        if path:
            (Path(path) / "cgroup.procs").write_text(str(os.getpid()))


def own_memory_dir() -> Path | None:
    """The memory cgroup this process is in (inside a container: the container's own)."""
    return memory_dir_of("self")


def memory_dir_of(pid: int | str) -> Path | None:
    """The memory cgroup of process `pid` ("self" for this one)."""
    return controller_dir_of(pid, "memory", ("memory.usage_in_bytes", "memory.current"))


def controller_dir_of(pid: int | str, v1_name: str, files: tuple[str, ...]) -> Path | None:
    """Process `pid`'s cgroup of one controller (v1: its own hierarchy `v1_name`; v2: the one tree), found by
    one of `files` in it; None in the root cgroup, whose counters are the whole machine's, not the process's.
    Inside a container the hierarchy's root is the container's own cgroup, hence the fallback to it."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, rel = line.split(":", 2)
        if rel == "/":
            continue
        if v1_name in controllers.split(","):
            bases = (ROOT / v1_name / rel.lstrip("/"), ROOT / v1_name)
        elif controllers == "" and (ROOT / "cgroup.controllers").exists():
            bases = (ROOT / rel.lstrip("/"), ROOT)
        else:
            continue
        for base in bases:
            if any((base / f).exists() for f in files):
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
    be made or the limit does not read back, so the caller can refuse rather than run unlimited. Its
    processes also get a block-I/O cgroup of their own (`io_path`, None where none can be made), so the
    cell's device reads and writes are counted apart from the machine's."""

    def __init__(self, name: str, limit: int) -> None:
        self.version = version()
        self.io_path: Path | None = None
        if self.version is None:
            raise OSError("no memory cgroup controller is mounted under /sys/fs/cgroup")
        if self.version == "v1":
            if (ROOT / "blkio").is_dir():
                try:
                    self.io_path = ROOT / "blkio" / "arkbench" / name
                    self.io_path.mkdir(parents=True, exist_ok=False)
                except OSError:
                    self.io_path = None
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
            try:
                (parent / "cgroup.subtree_control").write_text("+io")
            except OSError:
                pass
            self.path = parent / name
            self.path.mkdir(exist_ok=False)
            self.io_path = self.path if (self.path / "io.stat").exists() else None
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

    @property
    def io_twin(self) -> Path | None:
        """The block-I/O cgroup when it is a separate tree (v1), for a server to join beside the memory one."""
        return self.io_path if self.io_path not in (None, self.path) else None

    def add_self(self) -> None:
        """Called in the child between fork and exec, so nothing runs outside the limit."""
        for d in filter(None, (self.path, self.io_twin)):
            (d / "cgroup.procs").write_text(str(os.getpid()))

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
        for d in filter(None, (self.path, self.io_twin)):
            while d.exists():
                try:
                    d.rmdir()
                except OSError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)
