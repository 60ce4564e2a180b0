"""A figure's trend over a measured phase, and where it would be at the criterion's hour (issue 76: "sustained
means sustained", as TPC-C measures a steady interval and fio stops when the slope is flat).

A phase's samples (a block's latency, the lag at each acknowledgement, a gauge each second) are cut into 30 s
windows, each window aggregated the way its threshold reads the figure (its p99, max, mean or last), and a
least-squares line is fitted through the windows. The windows' residuals are autocorrelated (a checkpoint cycle
spans several), so the slope's 95% interval uses the Newey-West variance (Bartlett kernel, lags
floor(4 (n/100)^(2/9)), Newey & West 1994's rule), with Student's t on n - 2 degrees of freedom. A trend is
judged only where the interval excludes 0."""
from __future__ import annotations

import math
from dataclasses import dataclass

from harness.stats import t95

WINDOW_S = 30.0
MIN_WINDOWS = 4             # fewer than 4 points leave a slope's interval meaningless (2 degrees of freedom)
# A trend is judged against the hour only from 10 windows (300 s) up: a 60-block screen's 4 windows carried to an
# hour is a 30x extrapolation of 4 points (a smoke lag stepping 0 to 1 in 120 s read as 48 blocks by the hour)
JUDGE_MIN_WINDOWS = 10
METHOD = "least squares over 30 s windows, 95% interval by Newey-West (Bartlett kernel)"


@dataclass(frozen=True)
class Fit:
    slope_per_s: float
    lo_per_s: float            # the slope's two-sided 95% interval
    hi_per_s: float
    intercept: float           # the fitted value at t = 0 (the measured phase's start)
    windows: int
    lags: int

    def at(self, t_s: float) -> float:
        return self.intercept + self.slope_per_s * t_s

    @property
    def significant(self) -> bool:
        return self.lo_per_s > 0 or self.hi_per_s < 0


def aggregate(agg: str, values: list[float]) -> float:
    """One window's figure as a threshold reads it: pNN (nearest rank), max, min, mean or last."""
    if agg.startswith("p"):
        ordered = sorted(values)
        rank = max(1, math.ceil(float(agg[1:]) / 100 * len(ordered)))
        return ordered[rank - 1]
    if agg == "mean":
        return sum(values) / len(values)
    return {"max": max, "min": min, "last": lambda v: v[-1]}[agg](values)


def windowed(points: list[tuple[float, float]], phase_s: float, agg: str,
             window_s: float = WINDOW_S) -> list[tuple[float, float]]:
    """(window middle s, the window's figure) of every complete window of the phase that holds a sample."""
    out = []
    for i in range(int(phase_s // window_s)):
        lo, hi = i * window_s, (i + 1) * window_s
        vals = [v for t, v in points if lo <= t < hi]
        if vals:
            out.append((lo + window_s / 2, aggregate(agg, vals)))
    return out


def fit(xy: list[tuple[float, float]]) -> Fit | None:
    """The least-squares line through (t, y) with the slope's Newey-West 95% interval; None below MIN_WINDOWS."""
    n = len(xy)
    if n < MIN_WINDOWS:
        return None
    mx, my = sum(x for x, _ in xy) / n, sum(y for _, y in xy) / n
    d = [x - mx for x, _ in xy]
    sxx = sum(v * v for v in d)
    if not sxx:
        return None
    slope = sum(di * (y - my) for di, (_, y) in zip(d, xy)) / sxx
    intercept = my - slope * mx
    u = [di * (y - intercept - slope * x) for di, (x, y) in zip(d, xy)]
    lags = max(1, int(4 * (n / 100) ** (2 / 9)))
    s = sum(v * v for v in u)
    for lag in range(1, min(lags, n - 1) + 1):
        s += 2 * (1 - lag / (lags + 1)) * sum(u[i] * u[i - lag] for i in range(lag, n))
    se = math.sqrt(max(0.0, s)) / sxx
    t = t95(n - 2)
    return Fit(slope, slope - t * se, slope + t * se, intercept, n, lags)
