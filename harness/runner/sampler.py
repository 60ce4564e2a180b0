"""The 1 s sampler: one timeseries.csv row per second, interval histograms into commit.hlog (and
read.hlog), a progress line, and progress.json so a killed run still leaves its numbers behind."""
from __future__ import annotations

import gc
import sys
import threading
import time
from pathlib import Path

from harness.engine_api import Capabilities, observed_storage
from harness.runner.metrics import IntervalLog, quick_summary_ms
from harness.results import write_json
from harness.runner.counters import RunState
from harness.platform import cgroup
from harness.platform.blockio import device_snapshot
from harness.units import format_bytes

COLUMNS = ("t_s", "phase", "blocks", "rows", "rows_per_s", "commit_p50_ms", "commit_p99_ms", "commit_max_ms",
           "service_p99_ms", "head_lag_ms", "reads_per_s", "read_p99_ms", "db_bytes", "wal_bytes",
           "checkpoints", "mem_bytes", "rss_bytes", "read_iops", "write_bytes_per_s")


class Sampler(threading.Thread):
    def __init__(self, state: RunState, engine, caps: Capabilities, run_dir: Path, label: str, duration_s: float,
                 interval_s: float = 1.0, mem_dir: Path | None = None) -> None:
        super().__init__(name="sampler", daemon=True)
        self.state, self.engine, self.caps, self.run_dir, self.label = state, engine, caps, run_dir, label
        self.duration_s, self.interval_s = duration_s, interval_s
        self._stop_evt = threading.Event()
        self.mem_dir = mem_dir       # the cgroup that holds the database (None: not visible here)
        self.ts = open(run_dir / "timeseries.csv", "w", buffering=1)
        self.ts.write(",".join(COLUMNS) + "\n")
        start_epoch = time.time() - state.elapsed_s()
        self.commit_log = IntervalLog(open(run_dir / "commit.hlog", "w"), start_epoch,
                                      "commit latency (us) from the intended start time; arkbench")
        self.read_log: IntervalLog | None = None
        self._last_t = state.elapsed_s()
        self._last_blocks = self._last_rows = self._last_reads = 0
        self._last_device = None     # the data device's counters at the previous tick
        self._tty = sys.stderr.isatty()
        self._last_print = 0.0
        self.storage_error: str | None = None

    def stop(self) -> None:
        self._stop_evt.set()
        if self.is_alive():
            self.join(timeout=10)
        self.sample()          # the final partial interval
        self.ts.close()
        self.commit_log.f.close()
        if self.read_log:
            self.read_log.f.close()

    def run(self) -> None:
        next_t = time.monotonic() + self.interval_s
        while not self._stop_evt.wait(max(0.0, next_t - time.monotonic())):
            next_t += self.interval_s
            self.sample()

    def sample(self) -> None:
        st = self.state
        now = st.elapsed_s()
        dt = max(1e-9, now - self._last_t)
        (commit_h, commit_v), (_, service_v) = st.commit.swap_interval(), st.service.swap_interval()
        read_h, read_v = st.read.swap_interval()
        self.commit_log.write(commit_h, self._last_t, now)
        if read_h.get_total_count():
            if self.read_log is None:
                self.read_log = IntervalLog(open(self.run_dir / "read.hlog", "w"), time.time() - now,
                                            "read latency (us) from the intended start time; arkbench")
            self.read_log.write(read_h, self._last_t, now)
        try:
            s = observed_storage(self.engine, self.caps)
            db, wal = s.db_bytes, s.wal_bytes
            ckpt = None if s.checkpoints is None else s.checkpoints + st.manual_checkpoints
        except Exception as e:  # the sampler must never take the run down; say what failed
            self.storage_error = f"{type(e).__name__}: {e}"
            db = wal = ckpt = None
        mem, rss = cgroup.usage_bytes(self.mem_dir), cgroup.process_rss_bytes()
        read_iops, write_bps = self._device_rates(dt)
        blocks, rows, reads = st.blocks, st.rows, st.reads
        if blocks < self._last_blocks:      # the phase changed and counters restarted
            self._last_blocks = self._last_rows = self._last_reads = 0
        lag_ms = max(0.0, (time.monotonic_ns() - st.next_due_ns) / 1e6) if st.next_due_ns else 0.0
        c, sv, rd = quick_summary_ms(commit_v), quick_summary_ms(service_v), quick_summary_ms(read_v)
        row = {"t_s": round(now, 3), "phase": st.phase, "blocks": blocks, "rows": rows,
               "rows_per_s": round((rows - self._last_rows) / dt, 1),
               "commit_p50_ms": c["p50"], "commit_p99_ms": c["p99"], "commit_max_ms": c["max"],
               "service_p99_ms": sv["p99"], "head_lag_ms": round(lag_ms, 3),
               "reads_per_s": round((reads - self._last_reads) / dt, 1), "read_p99_ms": rd["p99"],
               "db_bytes": db, "wal_bytes": wal, "checkpoints": ckpt, "mem_bytes": mem, "rss_bytes": rss,
               "read_iops": read_iops, "write_bytes_per_s": write_bps}
        self.ts.write(",".join("" if row[k] is None else str(row[k]) for k in COLUMNS) + "\n")
        if st.phase == "measure":
            if st.io_watch is not None and st.io_watch.maps_start is None:
                st.io_watch.take_start_residency()     # on this thread: mincore is off the writer's path
            for k in ("db_bytes", "wal_bytes", "checkpoints", "mem_bytes", "rss_bytes"):
                st.observe_gauge(k, row[k], now)
        self._last_t, self._last_blocks, self._last_rows, self._last_reads = now, blocks, rows, reads
        # The collector is off during the timed phase; what the hlog encoder leaves in cycles (a ctypes
        # array type per encode) is freed here: only the youngest generation, a few microseconds.
        gc.collect(0)
        self._write_progress(now, db, wal, ckpt)
        self._print(now, c["p99"], wal, lag_ms)

    def _device_rates(self, dt: float) -> tuple[float | None, float | None]:
        """The data device's reads per second and bytes written per second since the last tick."""
        probe = self.state.io_watch.probe if self.state.io_watch is not None else None
        now = device_snapshot(probe.device) if probe and probe.device else None
        last, self._last_device = self._last_device, now
        if now is None or last is None:
            return None, None
        return round((now.read_ops - last.read_ops) / dt, 1), round((now.write_bytes - last.write_bytes) / dt)

    def _write_progress(self, now: float, db, wal, ckpt) -> None:
        st = self.state
        # counters only: latency summaries of a killed run come from commit.hlog
        snap = {"t_s": round(now, 3), "phase": st.phase, "blocks": st.blocks, "rows": st.rows,
                "measured_s": round(st.measured_s(), 3), "db_bytes": db, "wal_bytes": wal,
                "checkpoints": ckpt, "peaks": st.peaks()}
        write_json(self.run_dir / "progress.json", snap, indent=None)

    def _print(self, now: float, p99, wal, lag_ms: float) -> None:
        if not self._tty and now - self._last_print < 5:
            return
        self._last_print = now
        p99s = f"{p99:.1f}ms" if p99 is not None else "-"
        if self.state.phase == "load":
            return            # the load phase prints its own progress
        # seconds into warmup + measure, against their planned length (the load before them is not counted)
        blocks = f"  blocks {self.state.blocks}" if self.state.phase == "measure" else ""    # the measured ones
        print(f"[{self.label}] {self.state.phase:7s} {self.state.timed_s():6.1f}s/{self.duration_s:.0f}s{blocks}"
              f"  p99 {p99s}  wal {format_bytes(wal)}  lag {lag_ms:.0f}ms", file=sys.stderr, flush=True)
