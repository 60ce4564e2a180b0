"""Counters and recorders shared by the writer, the readers and the sampler of one run."""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from harness.engine_api import EngineCounters
from harness.platform import cgroup
from harness.runner.metrics import BlockLog, KindStats, Recorder
from harness.runner.phases import CpuProbe, PhaseLog


@dataclass
class RunState:
    t0_ns: int = field(default_factory=time.monotonic_ns)   # the run's clock (timeseries t_s, blocks.csv times)
    phase: str = "load"               # load | warmup | measure | verify
    commit: Recorder = field(default_factory=Recorder)     # commit end - due time
    service: Recorder = field(default_factory=Recorder)    # commit end - actual start
    lag: Recorder = field(default_factory=Recorder)        # actual start - due time
    read: Recorder = field(default_factory=Recorder)       # reader: end - intended start
    read_kinds: dict[str, KindStats] = field(default_factory=dict)   # per entry of the mix (reads/queries.py)
    reads_empty: int = 0              # measured reads that found nothing where the data says they must
    blocks: int = 0                   # measured blocks committed
    rows: int = 0                     # measured rows written
    reads: int = 0                    # measured reads completed
    reads_late: int = 0               # due in the window, not started when the readers stopped (read_loop.LATE)
    reads_offered_per_s: float = 0.0  # the readers' schedule (readers.rate_per_s)
    read_errors: int = 0
    read_error: str | None = None
    next_due_ns: int = 0              # due time of the block the writer will start next
    manual_checkpoints: int = 0
    checkpoint_ms: list[float] = field(default_factory=list)
    generator_wait_s: float = 0.0     # writer time spent waiting for the block generator (harness cost)
    timed_start_ns: int | None = None  # warmup start: the origin of the writer's schedule
    measure_start_ns: int | None = None
    # the measured phase's planned start (the warm-up's end): the window starts there, not when the writer (or a
    # read-only run's sleep) got round to it, so a query due between the two is measured, not lost to both phases
    measure_from_ns: int | None = None
    measure_end_ns: int | None = None  # when the writer stopped (the last measured block's commit)
    window_end_ns: int | None = None   # the measured window's end: planned, or the early abort
    rows_in_window: int = 0           # rows of measured blocks committed before window_end_ns
    rss_at_measure_start: int | None = None   # the runner's RSS: its share of an embedded engine's limit
    rss_at_measure_end: int | None = None
    feed_cpu: object | None = None    # () -> the feed's CPU seconds so far, or None (runner/feed_client.BlockFeed)
    feed_cpu_s_at: list = field(default_factory=lambda: [None, None])   # at the measured phase's start and end
    counters_at_measure_start: EngineCounters | None = None   # engine.counters(), see EngineBase
    counters_at_measure_end: EngineCounters | None = None
    io_watch: object | None = None    # runner/io_watch.IoWatch: device and cell I/O counters at both ends
    logical_bytes_written: int = 0    # values' bytes of the rows the measured blocks wrote (inserts, rewrites)
    logical_bytes_seen: int = 0       # the feed's running total as of the last block applied
    block_log: BlockLog = field(default_factory=BlockLog)
    phase_log: PhaseLog = field(default_factory=PhaseLog)   # each measured block's phases and engine CPU
    # the engine's processes' CPU, read around each block; until the runner sets it, one that sees nothing
    cpu_probe: CpuProbe = field(default_factory=lambda: CpuProbe(None, server=True))
    readers: dict | None = None       # results.ReaderShare: how the readers ran (readers.ReaderPool.stop)
    answer_checks: dict = field(default_factory=dict)   # mix entry -> reads.dc_check.KindCheck, after the clock
    gauges: dict = field(default_factory=dict)             # per gauge: max, min, sum, n, last (measured phase)
    design_figures: object | None = None     # results.design.BlockLogFigures: a block log's, after the drain
    design_hists: dict = field(default_factory=dict)       # its thresholds' histograms (designs/figures.py)
    design_points: dict = field(default_factory=dict)      # its figures over time, for their trends (runner/trends.py)
    gauge_points: dict = field(default_factory=dict)       # per gauge: (run clock s, value), each measured tick
    # the readers' figures (read, read_kinds, reads*) change under it: a batch lands wholly before the measured
    # phase's reset or wholly after it (a batch split by it once counted a read in `reads` and not in its kind)
    reads_lock: threading.Lock = field(default_factory=threading.Lock)

    def elapsed_s(self, now_ns: int | None = None) -> float:
        return ((now_ns or time.monotonic_ns()) - self.t0_ns) / 1e9

    def timed_s(self, now_ns: int | None = None) -> float:
        """Seconds into warmup + measure: 0 before they start, their full length once they have ended."""
        if self.timed_start_ns is None:
            return 0.0
        end = self.measure_end_ns or now_ns or time.monotonic_ns()
        return (end - self.timed_start_ns) / 1e9

    def start_measure(self, now_ns: int) -> None:
        self.phase = "measure"
        self.measure_start_ns = now_ns
        self.rss_at_measure_start = cgroup.process_rss_bytes()
        self.feed_cpu_s_at = [self.feed_cpu() if self.feed_cpu else None, None]
        if self.io_watch is not None:
            self.io_watch.counters_start = self.io_watch.counters()
        self.logical_bytes_written = 0
        for r in (self.commit, self.service, self.lag):
            r.reset()
        self.blocks = self.rows = self.read_errors = self.rows_in_window = 0
        with self.reads_lock:
            self.read.reset()
            self.reads = self.reads_empty = self.reads_late = 0
            for name in self.read_kinds:
                self.read_kinds[name] = KindStats()
        self.gauges.clear()
        self.gauge_points.clear()

    def end_measure(self) -> None:
        self.measure_end_ns = time.monotonic_ns()
        self.rss_at_measure_end = cgroup.process_rss_bytes()
        self.feed_cpu_s_at[1] = self.feed_cpu() if self.feed_cpu else None
        if self.io_watch is not None:
            self.io_watch.counters_end = self.io_watch.counters()

    def window_s(self) -> float:
        """The measured window: from its planned start (measure_from_ns) to the planned end (or the early
        abort). Rates are over it, so a writer that falls behind is not credited with its overrun."""
        if self.measure_start_ns is None or self.window_end_ns is None:
            return self.measured_s()
        return max(1e-9, (self.window_end_ns - self.measure_start_ns) / 1e9)

    def measured_s(self) -> float:
        if self.measure_start_ns is None:
            return 0.0
        end = self.measure_end_ns or time.monotonic_ns()
        return max(1e-9, (end - self.measure_start_ns) / 1e9)

    def observe_gauge(self, name: str, value: float | None, at_s: float | None = None) -> None:
        if value is None:
            return
        if at_s is not None:
            self.gauge_points.setdefault(name, []).append((at_s, value))
        g = self.gauges.setdefault(name, {"max": value, "min": value, "sum": 0.0, "n": 0, "last": value})
        g["sum"] += value
        g["n"] += 1
        g["max"], g["min"], g["last"] = max(g["max"], value), min(g["min"], value), value

    def peak(self, name: str) -> float | None:
        g = self.gauges.get(name)
        return g["max"] if g else None

    def peaks(self) -> dict:
        return {k: g["max"] for k, g in self.gauges.items()}
