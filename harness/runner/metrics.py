"""Latency recording: HdrHistogram in microseconds (3 significant digits), a cumulative histogram per
phase plus an interval histogram the 1 s sampler swaps out and logs to an .hlog file."""
from __future__ import annotations

import ctypes
import sys
import threading
from array import array
from collections import Counter
from typing import IO

from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogWriter

from harness.results.hlog import HIGHEST_US, interval_histograms, new_histogram
from harness.stats import quantile_bound_ranks

PERCENTILES = (50.0, 95.0, 99.0, 99.9)


def _clamp(value_us: int) -> int:
    return 1 if value_us < 1 else HIGHEST_US if value_us > HIGHEST_US else value_us


def _record_counts(h: HdrHistogram, counts: Counter) -> None:
    """One record_value per distinct value: each is pure Python, holding the GIL an embedded writer needs."""
    for v, n in counts.items():
        h.record_value(v, n)


def percentile_rank(pct: float, n: int) -> int:
    """The 1-based rank of the pNN value among n sorted values: HdrHistogram's own rule (round half up, at
    least 1), so every exact computation (windows, early abort, the time series) agrees with the summary."""
    return max(1, min(n, int(pct * n / 100 + 0.5)))


def reset_histogram(h: HdrHistogram) -> None:
    """HdrHistogram.reset() in microseconds: the library zeroes its counts one by one in Python (1.6 ms of
    GIL per histogram, four times a second in the sampler); the fields are the ones reset() clears."""
    ctypes.memset(h.counts, 0, ctypes.sizeof(h.counts))
    h.total_count, h.min_value, h.max_value = 0, sys.maxsize, 0
    h.start_time_stamp_msec, h.end_time_stamp_msec = sys.maxsize, 0


def summary_ms(h: HdrHistogram) -> dict:
    n = h.get_total_count()
    if not n:
        return {"count": 0, "p50": None, "p95": None, "p99": None, "p999": None, "max": None, "mean": None}
    pv = h.get_percentile_to_value_dict(list(PERCENTILES))
    return {"count": n, "p50": pv[50.0] / 1000, "p95": pv[95.0] / 1000, "p99": pv[99.0] / 1000,
            "p999": pv[99.9] / 1000, "max": h.get_max_value() / 1000, "mean": round(h.get_mean_value() / 1000, 3),
            "stdev": round(h.get_stddev() / 1000, 3),
            "p50_bounds": percentile_bounds_ms(h, 50.0), "p99_bounds": percentile_bounds_ms(h, 99.0)}


def percentile_bounds_ms(h: HdrHistogram, pct: float) -> tuple[float | None, float | None]:
    """The pNN's one-sided 95% bounds in ms: the values at the order-statistic ranks (HdrHistogram's, to its 3
    significant digits); a side None where the count cannot bound it."""
    n = h.get_total_count()
    ranks = quantile_bound_ranks(n, pct) if n else (None, None)
    # value_at_percentile(100 r / n) is the r-th value: its target count rounds r n / n back to r
    return tuple(None if r is None else h.get_value_at_percentile(100.0 * r / n) / 1000 for r in ranks)


def quick_summary_ms(values_us: list[int]) -> dict:
    """p50/p99/max of one sampler interval from its raw values: exact, and microseconds of work, where
    HdrHistogram's pure-Python percentile and mean walks cost milliseconds while holding the GIL the
    writer needs."""
    if not values_us:
        return {"count": 0, "p50": None, "p99": None, "max": None}
    v = sorted(values_us)
    n = len(v)
    return {"count": n, "p50": v[percentile_rank(50, n) - 1] / 1000, "p99": v[percentile_rank(99, n) - 1] / 1000,
            "max": v[-1] / 1000}


class KindStats:
    """One query kind's reads in the measured phase: latency from the intended start of those that returned
    what the data says they must, and apart from them the empty ones (counted, never timed as successes)."""

    def __init__(self) -> None:
        self.hist = new_histogram()
        self.rows = self.empty = 0
        self._lock = threading.Lock()

    def record_many(self, values_us: list[int], rows: int, empty: int) -> None:
        """A batch of this kind's reads (record_many_us's rule), their rows summed, and its empties."""
        counts = Counter(_clamp(v) for v in values_us)
        with self._lock:
            _record_counts(self.hist, counts)
            self.rows += rows
            self.empty += empty

    def summary(self, window_s: float) -> dict:
        n = self.hist.get_total_count()
        s = summary_ms(self.hist)
        return {"count": n, "qps": round(n / window_s, 1) if window_s else None,
                **{k: s[k] for k in ("p50", "p95", "p99", "max")},
                "mean_rows": round(self.rows / n, 2) if n else None, "empty": self.empty}


class Recorder:
    """Thread-safe recorder: the writer (or a reader thread) records, the sampler swaps the interval.
    Summaries of the cumulative histogram are computed once, after the run, never on the timed path."""

    def __init__(self) -> None:
        self.total = new_histogram()
        self.interval = new_histogram()
        # Interval histograms are double-buffered, never reallocated: an HdrHistogram is a reference cycle
        # (histogram <-> encoder, ~190 KB of counts), and the collector is off during the timed phase,
        # so each one swapped out and dropped there would stay allocated until the run ends.
        self._spare = new_histogram()
        self.interval_values: list[int] = []
        self.clamped = 0
        self._lock = threading.Lock()

    def record_us(self, value_us: int) -> None:
        v = _clamp(value_us)
        with self._lock:
            self.total.record_value(v)
            self.interval.record_value(v)
            self.interval_values.append(v)
            self.clamped += value_us > HIGHEST_US

    def record_many_us(self, values_us: list[int]) -> None:
        """A batch (a reader's report), as record_us would record each value."""
        vs = [_clamp(v) for v in values_us]
        counts = Counter(vs)
        with self._lock:
            _record_counts(self.total, counts)
            _record_counts(self.interval, counts)
            self.interval_values.extend(vs)
            self.clamped += counts.get(HIGHEST_US, 0) - values_us.count(HIGHEST_US)   # those above it

    def swap_interval(self) -> tuple[HdrHistogram, list[int]]:
        """The interval so far, and a fresh one in its place. The returned histogram stays valid until
        the next swap (one caller, the sampler, which is done with it by then)."""
        fresh = self._spare
        reset_histogram(fresh)
        with self._lock:
            h, self.interval = self.interval, fresh
            values, self.interval_values = self.interval_values, []
        self._spare = h
        return h, values

    def reset(self) -> None:
        """Start a new phase (warmup -> measure): the cumulative histogram starts over."""
        with self._lock:
            reset_histogram(self.total)
            self.clamped = 0


class IntervalLog:
    """HdrHistogram interval log (the .hlog format HdrHistogram's tools read), times relative to start."""

    def __init__(self, f: IO[str], start_epoch_s: float, comment: str) -> None:
        self.f = f
        self.w = HistogramLogWriter(f)
        self.w.output_comment(comment)
        self.w.output_log_format_version()
        self.w.output_base_time(start_epoch_s * 1000)
        self.w.output_legend()

    def write(self, h: HdrHistogram, start_s: float, end_s: float) -> None:
        if h.get_total_count():
            # timestamps are offsets from the run start; values in us, max reported in ms
            self.w.output_interval_histogram(h, start_s, end_s, max_value_unit_ratio=1000.0)
            self.f.flush()


def summary_from_hlog(path) -> dict | None:
    """Rebuild a latency summary from an interval log (for a run killed before it could summarise)."""
    total = new_histogram()
    for _, _, h in interval_histograms(path):
        total.add(h)
    return summary_ms(total) if total.get_total_count() else None


class BlockLog:
    """One record per measured block, compact, for windowed thresholds and plots (blocks.csv)."""

    def __init__(self) -> None:
        self.due_s = array("d")
        self.start_s = array("d")
        self.end_s = array("d")
        self.rows = array("l")
        self.kinds: list[str] = []

    def add(self, due_s: float, start_s: float, end_s: float, rows: int, kind: str) -> None:
        self.due_s.append(due_s)
        self.start_s.append(start_s)
        self.end_s.append(end_s)
        self.rows.append(rows)
        self.kinds.append(kind)

    def __len__(self) -> int:
        return len(self.end_s)

    def service_ms(self) -> list[float]:
        return [(e - s) * 1000 for s, e in zip(self.start_s, self.end_s)]

    def write_csv(self, f: IO[str], extra=None) -> None:
        """extra: more columns per block (runner/phases.PhaseLog: CSV_COLUMNS and csv_fields(i))."""
        more = "," + ",".join(extra.CSV_COLUMNS) if extra is not None else ""
        f.write(f"block_index,kind,due_s,start_s,end_s,commit_ms,service_ms,rows{more}\n")
        for i in range(len(self)):
            d, s, e = self.due_s[i], self.start_s[i], self.end_s[i]
            tail = "," + extra.csv_fields(i) if extra is not None else ""
            f.write(f"{i},{self.kinds[i]},{d:.6f},{s:.6f},{e:.6f},{(e - d) * 1000:.3f},{(e - s) * 1000:.3f},"
                    f"{self.rows[i]}{tail}\n")

    def worst_window_percentile_ms(self, percentile: float, window_s: float, metric: str,
                                   phase_start_s: float) -> float | None:
        """The highest pNN of commit (or service) latency over every complete sliding window of `window_s`
        (windows end at a block's end, and start no earlier than the phase); None when the phase is
        shorter than one window. Exact (sorted values per window), computed after the run."""
        import bisect
        n = len(self)
        base = self.due_s if metric == "commit_ms" else self.start_s
        vals = [(self.end_s[i] - base[i]) * 1000 for i in range(n)]
        window: list[float] = []
        worst, lo = None, 0
        for hi in range(n):
            bisect.insort(window, vals[hi])
            while self.end_s[hi] - self.end_s[lo] > window_s:
                window.pop(bisect.bisect_left(window, vals[lo]))
                lo += 1
            if self.end_s[hi] - phase_start_s >= window_s:
                v = window[percentile_rank(percentile, len(window)) - 1]
                worst = v if worst is None else max(worst, v)
        return worst
