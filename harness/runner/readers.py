"""Open-loop readers: each has its own connection and a fixed schedule (query k due at t0 + k/rate), so a
stalled query delays the ones queued behind it and that delay is measured. Each query is an entry of the
scenario's mix (reads/queries.py), its parameters drawn from live entities.

Where the engine allows several processes on one database, every reader is a process of its own
(reader_proc.py), so readers and the writer share no GIL; where it does not (readers_in_process_only),
they are threads of the runner. Both run query_loop(); what a query took reaches the run's recorders
through ReadSink, in the runner."""
from __future__ import annotations

import bisect
import itertools
import random
import threading
import time
from array import array
from typing import Callable

from harness.reads.params import Draw
from harness.reads.queries import resolve
from harness.runner.metrics import KindStats
from harness.runner.state import RunState
from harness.scenario.model import Readers

EMPTY = -1     # rows of a query that found nothing where the data says it must (counted, never timed)
FLUSH_EVERY_S = 0.1      # a reader hands what it asked to the run's recorders this often
FLUSH_RECORDS = 2048     # or once it holds this many queries


def schedule(cfg: Readers, i: int) -> tuple[int, int]:
    """Reader i's period and offset (ns): the readers' schedules interleave instead of firing together.
    Unthrottled readers (rate 0) have period 0: each query is due as the previous one ends."""
    if not cfg.rate_per_s:
        return 0, 0
    period_ns = int(1e9 * cfg.threads / cfg.rate_per_s)
    return period_ns, period_ns * i // cfg.threads


def kind_names(cfg: Readers, engine_name: str, variant: str) -> list[str]:
    return [q.name for q in resolve(cfg.mix, engine_name, variant, "?")]


class Picker:
    """The mix's weighted choice of the next query and its parameters (reads/params.py Draw): what every
    reader asks, and bench-reads' loop in the same order from the same seed."""

    def __init__(self, queries) -> None:
        self.queries, self.draw = queries, Draw(queries)
        self.cum = list(itertools.accumulate(q.weight for q in queries))

    def next(self, rng: random.Random) -> tuple[int, list[tuple] | None]:
        """(query index, its statements' parameters, or None when no sampled entity offers them)."""
        i = min(bisect.bisect_right(self.cum, rng.random() * self.cum[-1]), len(self.queries) - 1)
        return i, self.draw.params(i, rng)


def query_loop(reader, mix, engine_name: str, variant: str, rng: random.Random, period_ns: int, due_ns: int,
               wait: Callable[[float], bool], sample: Callable[[], list | None],
               sink: Callable[[int, int, int, int], None], error: Callable[[Exception], None]) -> None:
    """Query k at due_ns + k * period_ns (period 0: as the previous one ends, so the loop's own time between
    queries counts in the next one's latency) until wait(timeout_s) says stop. sink(kind index, due ns, end ns,
    rows or EMPTY) is called for every query asked. Its per-query cost is the harness's read overhead
    (make bench-reads): one clock read a query when unthrottled, nothing built that a query does not need."""
    pick = Picker(resolve(mix, engine_name, variant, reader.placeholder))
    queries, run, now = pick.queries, reader.run, time.monotonic_ns
    due = due_ns
    while not wait(max(0.0, (due - now()) / 1e9) if period_ns else 0.0):
        pick.draw.refresh(sample())
        i, params = pick.next(rng)
        q = queries[i]
        try:
            if params is None:           # no sampled entity offers what it needs: nothing to ask
                rows = EMPTY
            else:
                rows = 0
                for s, p in zip(q.statements, params):
                    rows += run(s.sql, p)
                if not rows and q.expect_rows:
                    rows = EMPTY
            end = now()
            sink(i, due, end, rows)
        except Exception as e:
            end = now()
            error(e)
        due = due + period_ns if period_ns else end


class Report:
    """What a reader asked since it last flushed, as ReadSink.batch's flat (kind, due ns, end ns, rows)
    int64 quadruples: the run's recorders take them a few times a second, never once a query."""

    def __init__(self, flush: Callable[[array], None]) -> None:
        self.out, self._flush, self._last = array("q"), flush, time.monotonic()

    def add(self, i: int, due_ns: int, end_ns: int, rows: int) -> None:
        self.out.extend((i, due_ns, end_ns, rows))

    def flush_if_due(self, now: float) -> None:
        if now - self._last >= FLUSH_EVERY_S or len(self.out) >= 4 * FLUSH_RECORDS:
            self.flush(now)

    def flush(self, now: float) -> None:
        out, self.out, self._last = self.out, array("q"), now
        self._flush(out)


class ReadSink:
    """Records what the readers report into the run's recorders. A query belongs to the phase it was due in,
    however late it ends (or its report arrives): one due before the measured window is the warmup's, one
    due after it is not counted."""

    def __init__(self, state: RunState, names: list[str]) -> None:
        self.state, self.names = state, names
        self._lock = threading.Lock()
        for n in names:
            state.read_kinds.setdefault(n, KindStats())

    def batch(self, records: array) -> None:
        """A reader's Report: each query in the phase it was due in, its latency from that due time (or, if
        it found nothing, counted empty), with one histogram update per distinct latency."""
        if not records:
            return
        st = self.state
        lo, hi = st.measure_start_ns, st.window_end_ns
        by_kind: dict[int, tuple[list[int], list[int]]] = {}     # kind -> (latencies us, [rows, empties])
        for k in range(0, len(records), 4):
            due = records[k + 1]
            if lo is not None and (due < lo or (hi is not None and due >= hi)):
                continue
            us, acc = by_kind.setdefault(records[k], ([], [0, 0]))
            rows = records[k + 3]
            if rows == EMPTY:
                acc[1] += 1
            else:
                us.append((records[k + 2] - due) // 1000)
                acc[0] += rows
        every: list[int] = []
        empties = 0
        for i, (us, (rows, empty)) in by_kind.items():
            st.read_kinds[self.names[i]].record_many(us, rows, empty)
            every += us
            empties += empty
        with self._lock:           # reader threads report concurrently; += is no atomic update
            st.reads_empty += empties
            st.reads += len(every)
        st.read.record_many_us(every)

    def error(self, message: str, count: int = 1) -> None:
        self.state.read_errors += count
        self.state.read_error = self.state.read_error or message


class ReaderPool:
    def __init__(self, engine, cfg: Readers, sample: Callable[[], list[dict] | None], state: RunState, seed: int,
                 engine_name: str, variant: str, in_process: bool) -> None:
        # sample(): the feed's latest sample of live entities as read parameters (reads/params.py)
        self.engine, self.cfg, self.sample, self.state, self.seed = engine, cfg, sample, state, seed
        self.engine_name, self.variant, self.in_process = engine_name, variant, in_process
        self._stop = threading.Event()
        self.threads: list[threading.Thread] = []
        self.processes = None     # reader_proc.ReaderProcesses

    @property
    def mode(self) -> str:
        return "threads" if self.in_process else "processes"

    def start(self) -> None:
        self.state.reads_offered_per_s = self.cfg.rate_per_s if self.cfg.threads else 0.0
        sink = ReadSink(self.state, kind_names(self.cfg, self.engine_name, self.variant)) if self.cfg.threads else None
        if self.cfg.threads and self.in_process:
            for i in range(self.cfg.threads):
                self._spawn(f"reader-{i}", self._loop, i, sink)
        elif self.cfg.threads:
            from harness.runner.reader_proc import ReaderProcesses
            self.processes = ReaderProcesses(self.engine.reader_factory(), self.cfg, self.engine_name,
                                             self.variant, self.seed, self.sample, sink)
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
        if self.cfg.threads:
            rss = self.processes.rss if self.processes else []
            self.state.readers = {"mode": self.mode, "count": self.cfg.threads,
                                  "rss_bytes_start_max": max((a for a, _ in rss), default=None),
                                  "rss_bytes_end_max": max((b for _, b in rss), default=None)}

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
                       lambda e: sink.error(f"{type(e).__name__}: {e}"))
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


def reader_rng(seed: int, i: int) -> random.Random:
    return random.Random(seed * 7919 + i)
