"""A crash run's lives as processes: each life started in the run's memory cgroup with its events on a pipe,
and the process tree (a server's postmaster and backends are the life's) found, stopped and waited for."""
from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from harness.scenario.plan import RunPlan

EVENT_TIMEOUT_S = 900.0     # a life silent this long (an open, a digest at scale) has hung


class LifeFailed(RuntimeError):
    pass


def log(plan: RunPlan, msg: str) -> None:
    print(f"[{plan.scenario}/{plan.engine}] {msg}", file=sys.stderr, flush=True)


class Life:
    """One process lifetime of the engine: its events on a pipe, read by a thread into a queue."""

    def __init__(self, plan: RunPlan, n: int, fresh: bool, env: dict, cg) -> None:
        r, w = os.pipe()
        self.log_path = Path(plan.run_dir) / f"life-{n}.log"
        with open(self.log_path, "wb") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "harness.crash.life", str(Path(plan.run_dir) / "plan.yaml"), str(w),
                 "fresh" if fresh else "restart"], stdin=subprocess.PIPE, stdout=err, stderr=err, pass_fds=(w,),
                env=env, text=True, preexec_fn=cg.add_self if cg else None)
        os.close(w)
        self.events: queue.Queue = queue.Queue()
        self._r = os.fdopen(r)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self._r:
            self.events.put(json.loads(line))
        self.events.put(None)         # EOF: the life is gone

    def next(self, timeout_s: float = EVENT_TIMEOUT_S) -> dict | None:
        try:
            return self.events.get(timeout=timeout_s)
        except queue.Empty:
            raise LifeFailed(f"no word from the engine's process for {timeout_s:.0f} s") from None

    def expect(self, kind: str) -> dict:
        ev = self.next()
        if ev is None or ev["event"] != kind:
            self.proc.wait(timeout=60)
            raise LifeFailed(f"the engine's process ended (exit {self.proc.returncode}) before '{kind}'; "
                             f"{self.log_path.name}: {self.tail()}")
        return ev

    def send(self, cmd: dict) -> None:
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()

    def tail(self, n: int = 6) -> str:
        try:
            return " | ".join(self.log_path.read_text(errors="replace").strip().splitlines()[-n:])
        except OSError:
            return "(no log)"


def _stat(pid: int) -> list[str] | None:
    """/proc/<pid>/stat's fields after the command (state, ppid, ...); None: the process is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def process_tree(root: int) -> list[int]:
    """root and every descendant (a server engine's postmaster and backends are the life's)."""
    children: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            stat = _stat(int(d.name))
            if stat:
                children.setdefault(int(stat[1]), []).append(int(d.name))
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, ()))
    return out


def stop_tree(root: int) -> list[int]:
    """SIGSTOP root and its descendants, again until no new one appears (a backend forked meanwhile). The root
    first, at once: walking /proc takes milliseconds, longer than an embedded engine's commit under load."""
    signal_all([root], signal.SIGSTOP)
    stopped: set[int] = {root}
    while new := [p for p in process_tree(root) if p not in stopped]:
        signal_all(new, signal.SIGSTOP)
        stopped.update(new)
    return sorted(stopped)


def wait_gone(pids: list[int], timeout_s: float = 60.0) -> None:
    """Until every killed process has exited (gone or a zombie): till then it may hold the data's files."""
    deadline = time.monotonic() + timeout_s
    for p in pids:
        while time.monotonic() < deadline and (stat := _stat(p)) and stat[0] != "Z":
            time.sleep(0.01)


def signal_all(pids: list[int], sig: int) -> None:
    for p in pids:
        try:
            os.kill(p, sig)
        except ProcessLookupError:
            pass
