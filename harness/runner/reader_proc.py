"""Readers as processes of their own (readers.py): `python -m harness.runner.reader_proc FD`, one per reader,
started by the runner and so inside its memory limit (an embedded engine's readers are the application's).

Over a socket pair, the runner sends the spec (the engine's reader_factory, the mix, the schedule), then
"go" with the schedule's origin, every new parameter sample, and "stop"; the reader sends "ready", then
batches of (kind, due ns, end ns, rows) as int64 arrays a few times a second, and "done" with its RSS at
start and end. The runner records the batches (readers.ReadSink): the bookkeeping a reader process keeps is
one array between flushes."""
from __future__ import annotations

import os
import resource
import socket
import subprocess
import sys
import threading
import time
from array import array
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Callable

from harness.platform import cgroup
from harness.reads.picker import reader_rng
from harness.runner.read_loop import ReadSink, Report, query_loop, schedule
from harness.scenario.spec import Readers

POLL_EVERY_S = 0.001     # a reader behind schedule looks for messages this often, not once per query
READY_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 30.0
PROJECT_ROOT = Path(__file__).resolve().parents[2]


# ---- the reader process ----------------------------------------------------------------------------

def main(fd: int) -> None:
    conn = Connection(fd)
    spec = conn.recv()
    try:
        reader = spec["factory"]()
    except Exception as e:
        conn.send(("error", f"{type(e).__name__}: {e}"))
        raise
    rss_start = cgroup.process_rss_bytes()
    conn.send(("ready", os.getpid()))
    state = {"sample": None, "stop": False}
    errors: list[str] = []

    def handle(msg) -> None:
        if msg[0] == "sample":
            state["sample"] = msg[1]
        elif msg[0] == "stop":
            state["stop"] = True

    def send(out: array, answers: array) -> None:
        nonlocal errors
        if out or answers or errors:
            conn.send(("batch", out.tobytes(), answers.tobytes(), len(errors), errors[0] if errors else None))
            errors = []

    report = Report(send)
    last_poll = 0.0

    def wait_msg(timeout_s: float) -> bool:
        nonlocal last_poll
        now = time.monotonic()
        if not timeout_s and now - last_poll < POLL_EVERY_S:
            return False
        last_poll = now
        report.flush_if_due(now)
        deadline = now + timeout_s
        while not state["stop"] and conn.poll(max(0.0, deadline - time.monotonic())):
            handle(conn.recv())
        return state["stop"]

    while True:                          # the spec's schedule starts at "go"
        msg = conn.recv()
        if msg[0] == "go":
            due_ns = msg[1]
            break
        handle(msg)
    t_go, cpu_go = time.monotonic(), _cpu_s()
    try:
        if not state["stop"]:
            query_loop(reader, spec["mix"], spec["engine"], spec["variant"], reader_rng(spec["seed"], spec["index"]),
                       spec["period_ns"], due_ns, wait_msg, lambda: state["sample"], report.add,
                       lambda e: errors.append(f"{type(e).__name__}: {e}"), report.answer, spec["dc"])
    finally:
        report.flush(time.monotonic())
        reader.close()
        conn.send(("done", rss_start, cgroup.process_rss_bytes(), _cpu_s() - cpu_go, time.monotonic() - t_go))
        conn.close()


def _cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


# ---- the runner's side -----------------------------------------------------------------------------

class ReaderProcesses:
    """Starts cfg.threads reader processes, waits until each has its connection, starts their schedules
    together, forwards new parameter samples, and records their batches into `sink` on a thread."""

    def __init__(self, factory, cfg: Readers, engine_name: str, variant: str, seed: int,
                 sample: Callable[[], list | None], sink: ReadSink, dc: tuple[int, int] | None = None) -> None:
        self.factory, self.cfg, self.engine_name, self.variant, self.seed = factory, cfg, engine_name, variant, seed
        self.sample, self.sink, self.dc = sample, sink, dc
        self.procs: list[subprocess.Popen] = []
        self.conns: list[Connection] = []
        self.rss: list[tuple[int, int]] = []      # per reader process: RSS at start, at end (bytes)
        self.cpu: list[tuple[float, float]] = []   # per reader process: CPU s and wall s of its schedule
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        for i in range(self.cfg.threads):
            ours, theirs = socket.socketpair()
            p = subprocess.Popen([sys.executable, "-m", "harness.runner.reader_proc", str(theirs.fileno())],
                                 pass_fds=[theirs.fileno()], cwd=PROJECT_ROOT)
            theirs.close()
            conn = Connection(ours.detach())
            period_ns, offset_ns = schedule(self.cfg, i)
            conn.send({"factory": self.factory, "mix": self.cfg.mix, "engine": self.engine_name,
                       "variant": self.variant, "seed": self.seed, "index": i, "period_ns": period_ns,
                       "offset_ns": offset_ns, "dc": self.dc})
            self.procs.append(p)
            self.conns.append(conn)
        for conn, p in zip(self.conns, self.procs):
            if not conn.poll(READY_TIMEOUT_S):
                raise RuntimeError(f"reader process {p.pid} did not open its connection in {READY_TIMEOUT_S:.0f} s")
            msg = conn.recv()
            if msg[0] != "ready":
                raise RuntimeError(f"a reader process could not open its connection: {msg[1]}")
        self._sent = self.sample()
        t0 = time.monotonic_ns() + 1_000_000       # CLOCK_MONOTONIC is the machine's: one origin for all
        for i, conn in enumerate(self.conns):
            if self._sent is not None:
                conn.send(("sample", self._sent))
            conn.send(("go", t0 + schedule(self.cfg, i)[1]))
        self._thread = threading.Thread(target=self._collect, name="reader-collector", daemon=True)
        self._thread.start()

    def _collect(self) -> None:
        live = list(self.conns)
        deadline = None
        while live:
            if self._stopping.is_set() and deadline is None:
                deadline = time.monotonic() + STOP_TIMEOUT_S
                for c in live:
                    _send(c, ("stop",))
            if deadline and time.monotonic() > deadline:
                self.sink.error(f"{len(live)} reader process(es) did not stop in {STOP_TIMEOUT_S:.0f} s")
                break
            for c in wait(live, timeout=0.05):
                try:
                    msg = c.recv()
                except EOFError:
                    live.remove(c)
                    self.sink.error("a reader process ended without reporting")
                    continue
                if msg[0] == "batch":
                    self._record(msg)
                elif msg[0] == "done":
                    self.rss.append((msg[1], msg[2]))
                    self.cpu.append((msg[3], msg[4]))
                    live.remove(c)
            s = self.sample()
            if s is not self._sent and not self._stopping.is_set():
                self._sent = s
                for c in live:
                    _send(c, ("sample", s))

    def _record(self, msg) -> None:
        rec, answers = array("q"), array("q")
        rec.frombytes(msg[1])
        answers.frombytes(msg[2])
        self.sink.batch(rec, answers)
        if msg[3]:
            self.sink.error(msg[4], msg[3])

    def stop(self) -> None:
        self._stopping.set()
        if self._thread:
            self._thread.join(STOP_TIMEOUT_S + 5)
        else:                 # start() failed: nothing was scheduled
            for p in self.procs:
                p.kill()
        for p in self.procs:
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        for c in self.conns:
            c.close()


def _send(conn: Connection, msg) -> None:
    """To a reader that may have died: its end shows as EOF on the next receive, reported there."""
    try:
        conn.send(msg)
    except OSError:
        pass


def _orphaned(fd: int) -> int:
    """main, but a runner gone (OOM-killed with the cell, say) ends the reader in one line, not four
    tracebacks: the cell's own status says what happened to it."""
    try:
        main(fd)
    except (ConnectionError, EOFError) as e:
        print(f"[reader {os.getpid()}] the runner's end closed ({type(e).__name__}): stopping", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(_orphaned(int(sys.argv[1])))
