"""One reader's loop and what it reports: query k is due at t0 + k * period, so a stalled query delays the
ones queued behind it and that delay is measured; a Report carries what was asked, a few times a second, to
the runner's ReadSink, which records it. A reader thread (readers.py) and a reader process (reader_proc.py)
run the same loop."""
from __future__ import annotations

import random
import threading
import time
from array import array
from pathlib import Path
from typing import Callable

from harness.reads import dc_check
from harness.reads.picker import Picker
from harness.reads.queries import resolve
from harness.runner.metrics import KindStats
from harness.runner.counters import RunState
from harness.scenario.spec import Readers

EMPTY = -1     # rows of a query that found nothing where the data says it must (counted, never timed)
LATE = -2      # rows of a query that fell due but had not started when the readers stopped (kind unknown)
FLUSH_EVERY_S = 0.1      # a reader hands what it asked to the run's recorders this often
FLUSH_RECORDS = 2048     # or once it holds this many queries


def schedule(cfg: Readers, i: int) -> tuple[int, int]:
    """Reader i's period and offset (ns): the readers' schedules interleave instead of firing together.
    Unthrottled readers (rate 0) have period 0: each query is due as the previous one ends."""
    if not cfg.rate_per_s:
        return 0, 0
    period_ns = int(1e9 * cfg.threads / cfg.rate_per_s)
    return period_ns, period_ns * i // cfg.threads


def query_loop(reader, mix, engine_name: str, variant: str, rng: random.Random, period_ns: int, due_ns: int,
               wait: Callable[[float], bool], sample: Callable[[], list | None],
               sink: Callable[[int, int, int, int], None], error: Callable[[Exception], None],
               answer: Callable[..., None] | None = None, dc: tuple[int, int] | None = None) -> None:
    """Query k at due_ns + k * period_ns (period 0: as the previous one ends, so the loop's own time between
    queries counts in the next one's latency) until wait(timeout_s) says stop. sink(kind index, due ns, end ns,
    rows or EMPTY) is called for every query asked, and for a checked DC query (dc: data centres, nodes per
    DC) answer(kind index, block seen, answer, its draw's ints...). Its per-query cost is the harness's read
    overhead (make bench-reads): one clock read a query when unthrottled, nothing built that a query does not
    need."""
    pick = Picker(resolve(mix, engine_name, variant, reader.placeholder), dc)
    queries, run, now = pick.queries, reader.run, time.monotonic_ns
    due = due_ns
    while not wait(max(0.0, (due - now()) / 1e9) if period_ns else 0.0):
        pick.draw.refresh(sample())
        i, params = pick.next(rng)
        q = queries[i]
        try:
            if params is None:           # no sampled entity offers what it needs: nothing to ask
                rows = EMPTY
            elif q.check:                # rows of (the block the snapshot holds, the answer or an item)
                found = reader.rows(q.statements[0].sql, params[0])
                end = now()
                seen, value = dc_check.answer_of(found, q.check)
                sink(i, due, end, 1)
                if answer is not None:
                    answer(i, dc_check.NULL if seen is None else int(seen), dc_check.answer_code(value),
                           *pick.draw.dc_ints)
                due = due + period_ns if period_ns else end
                continue
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
    # Queries that fell due while the last one ran, never started: dropping them would censor exactly the
    # tail of a reader that lags (the writer likewise applies every block that fell due). Each is reported
    # late, at its latency's lower bound, the stop.
    stop = now()
    while period_ns and due <= stop:
        sink(-1, due, stop, LATE)
        due += period_ns


class Report:
    """What a reader asked since it last flushed, as ReadSink.batch's flat (kind, due ns, end ns, rows)
    int64 quadruples: the run's recorders take them a few times a second, never once a query."""

    def __init__(self, flush: Callable[[array, array], None]) -> None:
        self.out, self.answers, self._flush, self._last = array("q"), array("q"), flush, time.monotonic()

    def add(self, i: int, due_ns: int, end_ns: int, rows: int) -> None:
        self.out.extend((i, due_ns, end_ns, rows))

    def answer(self, *record: int) -> None:
        self.answers.extend(record)

    def flush_if_due(self, now: float) -> None:
        if now - self._last >= FLUSH_EVERY_S or len(self.out) >= 4 * FLUSH_RECORDS:
            self.flush(now)

    def flush(self, now: float) -> None:
        out, answers, self.out, self.answers, self._last = self.out, self.answers, array("q"), array("q"), now
        self._flush(out, answers)


class ReadSink:
    """Records what the readers report into the run's recorders. A query belongs to the phase it was due in,
    however late it ends (or its report arrives): one due before the measured window is the warmup's, one
    due after it is not counted. One due in the window but reported before its reset is held until after it."""

    def __init__(self, state: RunState, names: list[str], answers_path: Path | None = None) -> None:
        self.state, self.names = state, names
        self._lock = threading.Lock()
        self._answers_path, self._answers = answers_path, None
        self._held = array("q")     # reported before the measured phase's reset, due after its planned start
        for n in names:
            state.read_kinds.setdefault(n, KindStats())

    def batch(self, records: array, answers: array | None = None) -> None:
        """A reader's Report: each query in the phase it was due in, its latency from that due time (or, if
        it found nothing, counted empty; if it never started, counted late and in the latencies at its lower
        bound), with one histogram update per distinct latency. Checked answers, whatever their phase, go
        to the answers file, checked after the clock (reads/dc_check.py)."""
        if answers:
            with self._lock:
                if self._answers is None:
                    self._answers = open(self._answers_path, "ab")
                answers.tofile(self._answers)
        if not records and not self._held:
            return
        with self.state.reads_lock:
            if self._held and self.state.measure_start_ns is not None:
                records, self._held = self._held + records, array("q")
            self._record(records)

    def _record(self, records: array) -> None:
        st = self.state
        lo, hi = st.measure_start_ns, st.window_end_ns
        planned = st.measure_from_ns if lo is None else None    # the warm-up's figures are reset at that start
        by_kind: dict[int, tuple[list[int], list[int]]] = {}     # kind -> (latencies us, [rows, empties])
        late: list[int] = []
        for k in range(0, len(records), 4):
            due = records[k + 1]
            if planned is not None and due >= planned:     # the measured phase's, reported before its reset
                self._held.extend(records[k:k + 4])
                continue
            if lo is not None and (due < lo or (hi is not None and due >= hi)):
                continue
            rows = records[k + 3]
            if rows == LATE:
                late.append((records[k + 2] - due) // 1000)
                continue
            us, acc = by_kind.setdefault(records[k], ([], [0, 0]))
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
        st.reads_empty += empties
        st.reads += len(every)
        st.reads_late += len(late)
        st.read.record_many_us(every + late)

    def close(self) -> None:
        if self._answers is not None:
            self._answers.close()
            self._answers = None

    def error(self, message: str, count: int = 1) -> None:
        self.state.read_errors += count
        self.state.read_error = self.state.read_error or message
