"""A run's figures over a window of its measured phase, from its own per-block and per-second files: the 5x
hour's first 600 s beside a 1x stand-in's 600 s (issue 78), or the hour's last 600 s beside its first. Each
figure carries its trend over the window (harness/trend.py: least squares over 30 s windows, Newey-West).

blocks.csv gives a block's latencies, rows and phases; design.csv a block log's lag at each acknowledgement and
its applier's busy share per 30 s; timeseries.csv each second's device writes, database bytes and the memory
cgroup's charge. What no file holds per block (the applier's own phase split, the page cache's residency, taken
at the phase's two ends) is left to the whole run's result.json: a window says so rather than guess it."""
from __future__ import annotations

import csv
import gzip
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from harness.errors import ConfigError
from harness.results import RunResult, load_result
from harness.trend import aggregate, fit, windowed

TREND_WINDOW_S = 30.0


@dataclass(frozen=True)
class Window:
    start_s: float
    end_s: float | None           # None: to the phase's end

    def holds(self, t_s: float) -> bool:
        return t_s >= self.start_s and (self.end_s is None or t_s < self.end_s)

    @property
    def label(self) -> str:
        return f"{self.start_s:g}-{'end' if self.end_s is None else format(self.end_s, 'g')} s"


def parse_window(text: str) -> Window:
    """"0:600" (seconds of the measured phase), "3000:" (to its end)."""
    try:
        lo, hi = text.split(":")
        w = Window(float(lo or 0), float(hi) if hi else None)
    except ValueError:
        raise ConfigError(f"--window {text!r}: expected START:END in seconds of the measured phase, e.g. 0:600 "
                          "or 3000: (to the end)") from None
    if w.start_s < 0 or (w.end_s is not None and w.end_s <= w.start_s):
        raise ConfigError(f"--window {text!r}: END must be after START, both seconds of the measured phase (>= 0)")
    return w


@dataclass(frozen=True)
class Series:
    """One figure's samples in the window, (s since the window's start, value), and how a threshold reads them."""
    name: str
    unit: str
    agg: str                       # p99, p50, max, mean
    points: list[tuple[float, float]]

    @property
    def value(self) -> float | None:
        return aggregate(self.agg, [v for _, v in self.points]) if self.points else None


def _csv(path: Path) -> list[dict]:
    """A run's file, or its gzipped copy where the run was published (report/publish_run.py)."""
    try:
        with open(path, newline="") as f:
            return list(csv.DictReader(f))
    except FileNotFoundError:
        pass
    try:
        with gzip.open(path.with_name(path.name + ".gz"), "rt", newline="") as f:
            return list(csv.DictReader(f))
    except FileNotFoundError:
        return []


def _result(run_dir: Path) -> RunResult | None:
    gz = run_dir / "result.json.gz"
    if not (run_dir / "result.json").exists() and gz.exists():
        return RunResult.model_validate_json(gzip.decompress(gz.read_bytes()))
    return load_result(run_dir / "result.json")


def _num(v: str | None) -> float | None:
    try:
        return float(v) if v not in (None, "") else None
    except ValueError:
        return None


def series(run_dir: Path, window: Window) -> tuple[list[Series], float]:
    """(every figure over the window, the window's length in s, clipped to the phase)."""
    blocks = _csv(run_dir / "blocks.csv")
    if not blocks:
        raise ConfigError(f"{run_dir / 'blocks.csv'}: missing or empty (nor gzipped), so no window of it can be read")
    t0 = float(blocks[0]["due_s"])        # the measured phase starts with its first block's due time
    mine = [(float(b["due_s"]) - t0, b) for b in blocks if window.holds(float(b["due_s"]) - t0)]
    if not mine:
        raise ConfigError(f"{run_dir}: no measured block is due in {window.label}")
    phase_end = mine[-1][0] + _cadence_s(blocks)
    length = (phase_end if window.end_s is None else min(window.end_s, phase_end)) - window.start_s
    rel = lambda t: t - window.start_s    # noqa: E731
    out = [Series(f"commit {p}", "ms", p, [(rel(t), float(b["commit_ms"])) for t, b in mine])
           for p in ("p50", "p99", "max")]
    out.append(Series("service p50", "ms", "p50", [(rel(t), float(b["service_ms"])) for t, b in mine]))
    out += _phase_series(mine, rel)
    out += _design_series(run_dir, window)
    out += _second_series(run_dir, window, t0)
    rows = sum(int(b["rows"]) for _, b in mine)
    out.append(Series("committed rows/s", "", "mean", [(rel(t), int(b["rows"]) / _cadence_s(blocks))
                                                      for t, b in mine]))
    out += _write_amplification(run_dir, window, t0, rows)
    return out, length


def _cadence_s(blocks: list[dict]) -> float:
    dues = [float(b["due_s"]) for b in blocks[:50]]
    return (dues[-1] - dues[0]) / (len(dues) - 1) if len(dues) > 1 else 0.0


def _phase_series(mine, rel) -> list[Series]:
    cols = [c for c in mine[0][1] if c.startswith("phase_") and c.endswith("_ms")]
    out = []
    for c in cols:
        pts = [(rel(t), v) for t, b in mine if (v := _num(b[c])) is not None]
        if any(v for _, v in pts):
            out.append(Series(f"block {c[len('phase_'):-len('_ms')]}, mean", "ms", "mean", pts))
    return out


DESIGN = (("apply_lag_blocks", "apply lag p99", "blocks", "p99"),
          ("apply_lag_ms", "index behind the ack, p99", "ms", "p99"),
          ("apply_utilisation", "applier busy", "%", "mean"))


def _design_series(run_dir: Path, window: Window) -> list[Series]:
    rows = _csv(run_dir / "design.csv")
    out = []
    for metric, name, unit, agg in DESIGN:
        pts = [(float(r["t_s"]) - window.start_s, float(r["value"])) for r in rows
               if r["metric"] == metric and window.holds(float(r["t_s"]))]
        if pts:
            out.append(Series(name, unit, agg, pts))
    return out


def _seconds(run_dir: Path, window: Window, t0: float) -> list[dict]:
    return [r for r in _csv(run_dir / "timeseries.csv")
            if r.get("phase") == "measure" and window.holds(float(r["t_s"]) - t0)]


SECOND = (("mem_bytes", "memory charged / database", "%", "mean"),
          ("read_iops", "device reads/s", "", "mean"),
          ("wal_bytes", "WAL max", "B", "max"))


def _second_series(run_dir: Path, window: Window, t0: float) -> list[Series]:
    secs = _seconds(run_dir, window, t0)
    rel: Callable[[dict], float] = lambda r: float(r["t_s"]) - t0 - window.start_s     # noqa: E731
    out = []
    for col, name, unit, agg in SECOND:
        if col == "mem_bytes":        # the cgroup's charge over the database's bytes: how much of it memory holds
            pts = [(rel(r), m / d) for r in secs if (m := _num(r.get(col))) and (d := _num(r.get("db_bytes")))]
        else:
            pts = [(rel(r), v) for r in secs if (v := _num(r.get(col))) is not None]
        if pts:
            out.append(Series(name, unit, agg, pts))
    return out


def _write_amplification(run_dir: Path, window: Window, t0: float, rows: int) -> list[Series]:
    """Device bytes written over the window per logical byte its rows wrote, at the run's own logical bytes per
    row (result.json: io.logical_bytes_written over the rows the phase committed)."""
    r = _result(run_dir)
    io = r.metrics.io if r else None
    if not io or not io.logical_bytes_written or not r.metrics.rows or not rows:
        return []
    per_row = io.logical_bytes_written / r.metrics.rows
    secs = [(float(s["t_s"]) - t0 - window.start_s, v) for s in _seconds(run_dir, window, t0)
            if (v := _num(s.get("write_bytes_per_s"))) is not None]
    if not secs:
        return []
    wa = sum(v for _, v in secs) / (rows * per_row)
    # per-second points whose mean is the window's amplification: a trend of it reads as one
    scale = len(secs) / (rows * per_row)
    return [Series("write amplification", "x", "mean", [(t, v * scale) for t, v in secs])] if wa else []


def trend_per_h(s: Series, length_s: float) -> tuple[float, bool] | None:
    """(the slope per hour, whether its 95% interval excludes 0) over 30 s windows of the window."""
    f = fit(windowed(s.points, length_s, s.agg, TREND_WINDOW_S))
    return (f.slope_per_s * 3600, f.significant) if f else None
