"""A figure's trend over the measured phase (harness/trend.py), as result.json keeps it (v16): on a threshold whose
figure can accumulate, and in metrics.trends for figures without a line (the database's and the WAL's bytes)."""
from __future__ import annotations

from typing import Optional

from harness.results.base import Model


class TrendResult(Model):
    method: str                          # how the slope and its interval were found
    window_s: float
    windows: int
    slope_per_h: float                   # the figure's change per hour of the phase, in its own unit
    ci95_per_h: tuple[float, float]      # the slope's 95% interval (autocorrelation allowed for)
    horizon_s: Optional[float] = None    # where it is carried to: the criterion's hour (None: reported only)
    # v19: why horizon_s is shorter than the hour, where it is: a figure that follows the database's size in a cell
    # smaller than the criterion's scale (Phases.size_horizon)
    horizon_of: Optional[str] = None
    at_horizon: Optional[float] = None   # the fitted line's value there
    would_fail: bool = False             # the interval excludes 0 and the line crosses the limit by the horizon

    def says(self, unit: str = "") -> str:
        lo, hi = self.ci95_per_h
        at = (f", {self.at_horizon:,.4g}{unit} at {self.horizon_s / 60:g} min"
              + (f" ({self.horizon_of})" if self.horizon_of else "")
              if self.at_horizon is not None and self.horizon_s else "")
        return f"trend {self.slope_per_h:+,.4g}{unit}/h [{lo:+,.4g}, {hi:+,.4g}]{at}"
