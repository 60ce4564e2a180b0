"""Open-loop readers: each has its own connection and a fixed schedule (query k due at t0 + k/rate), so a
stalled query delays the ones queued behind it and that delay is measured. Each query is an entry of the
scenario's mix (reads/queries.py), its parameters drawn from live entities.

Where the engine allows several processes on one database, every reader is a process of its own
(reader_proc.py), so readers and the writer share no GIL; where it does not (readers_in_process_only),
they are threads of the runner. Both run query_loop(); what a query took reaches the run's recorders
through ReadSink, in the runner."""
from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Callable

from harness.reads.picker import reader_rng
from harness.reads.queries import resolve
from harness.runner.read_loop import ReadSink, Report, query_loop, schedule
from harness.runner.counters import RunState
from harness.scenario.spec import Readers


def kind_names(cfg: Readers, engine_name: str, variant: str) -> list[str]:
    return [q.name for q in resolve(cfg.mix, engine_name, variant, "?")]


class ReaderPool:
    def __init__(self, engine, cfg: Readers, sample: Callable[[], list[dict] | None], state: RunState, seed: int,
                 engine_name: str, variant: str, in_process: bool, dc: tuple[int, int] | None = None,
                 answers_path: Path | None = None) -> None:
        # sample(): the feed's latest sample of live entities as read parameters (reads/params.py); dc: the
        # DC model's data centres and nodes per DC, whose ids checked queries draw; their answers go to
        # answers_path (reads/dc_check.py)
        self.engine, self.cfg, self.sample, self.state, self.seed = engine, cfg, sample, state, seed
        self.engine_name, self.variant, self.in_process = engine_name, variant, in_process
        self.dc, self.answers_path = dc, answers_path
        self.sink: ReadSink | None = None
        self._stop = threading.Event()
        self.threads: list[threading.Thread] = []
        self.processes = None     # reader_proc.ReaderProcesses

    @property
    def mode(self) -> str:
        return "threads" if self.in_process else "processes"

    def start(self) -> None:
        self.state.reads_offered_per_s = self.cfg.rate_per_s if self.cfg.threads else 0.0
        sink = self.sink = ReadSink(self.state, kind_names(self.cfg, self.engine_name, self.variant),
                                    self.answers_path) if self.cfg.threads else None
        if self.cfg.threads and self.in_process:
            for i in range(self.cfg.threads):
                self._spawn(f"reader-{i}", self._loop, i, sink)
        elif self.cfg.threads:
            from harness.runner.reader_proc import ReaderProcesses
            self.processes = ReaderProcesses(self.engine.reader_factory(), self.cfg, self.engine_name,
                                             self.variant, self.seed, self.sample, sink, self.dc)
            self.processes.start()
        if self.cfg.long_read:
            self._spawn("long-reader", self._long_loop)

    def _spawn(self, name: str, target, *args) -> None:
        t = threading.Thread(target=self._guard, args=(target, *args), name=name, daemon=True)
        self.threads.append(t)
        t.start()

    def _guard(self, target, *args) -> None:
        try:
            target(*args)
        except Exception as e:   # a reader that cannot even connect is an error of the run, recorded
            self.state.read_errors += 1
            self.state.read_error = self.state.read_error or f"{type(e).__name__}: {e}"

    def stop(self) -> None:
        self._stop.set()
        if self.processes:
            self.processes.stop()
        for t in self.threads:
            t.join(timeout=30)
        if self.sink is not None:
            self.sink.close()
        if self.cfg.threads:
            rss = self.processes.rss if self.processes else []
            cpu = self.processes.cpu if self.processes else []
            self.state.readers = {"mode": self.mode, "count": self.cfg.threads,
                                  "rss_bytes_start_max": max((a for a, _ in rss), default=None),
                                  "rss_bytes_end_max": max((b for _, b in rss), default=None),
                                  "cpu_s": round(sum(c for c, _ in cpu), 3) if cpu else None,
                                  "wall_s": round(max(w for _, w in cpu), 3) if cpu else None,
                                  "cores": len(os.sched_getaffinity(0))}

    def _loop(self, i: int, sink: ReadSink) -> None:
        reader = self.engine.reader()
        period_ns, offset_ns = schedule(self.cfg, i)
        report = Report(sink.batch)

        def wait(timeout_s: float) -> bool:
            report.flush_if_due(time.monotonic())
            return self._stop.wait(timeout_s) if timeout_s else self._stop.is_set()
        try:
            query_loop(reader, self.cfg.mix, self.engine_name, self.variant, reader_rng(self.seed, i), period_ns,
                       time.monotonic_ns() + offset_ns, wait, self.sample, report.add,
                       lambda e: sink.error(f"{type(e).__name__}: {e}"), report.answer, self.dc)
        finally:
            report.flush(time.monotonic())
            reader.close()

    def _long_loop(self) -> None:
        lr = self.cfg.long_read
        reader = self.engine.reader()
        try:
            while not self._stop.wait(lr.every_s):
                reader.hold_snapshot(min(lr.hold_s, 3600.0))
        finally:
            reader.close()
