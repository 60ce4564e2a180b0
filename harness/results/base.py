"""The base of result.json's models: immutable, no unknown field; a latency summary in ms."""
from __future__ import annotations

from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict


# A percentile's distribution-free bounds (lo, hi) in its unit, each side a one-sided 95% bound (v15; before, a
# two-sided 95% interval); a side is None where the values cannot bound it (p99 over 20 blocks has no upper bound).
Bounds = tuple[Optional[float], Optional[float]]
# A percentile threshold judged on its bounds: passed (all of them on the right side of the line), failed
# (all on the wrong side), undecided (the line lies between them); any other threshold on its value.
Judged = Literal["passed", "failed", "undecided"]


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LatencySummary(Model):
    count: int = 0
    p50: Optional[float] = None
    p95: Optional[float] = None
    p99: Optional[float] = None
    p999: Optional[float] = None
    max: Optional[float] = None
    mean: Optional[float] = None
    stdev: Optional[float] = None
    p50_bounds: Optional[Bounds] = None     # 95%, from order statistics (harness/stats.py quantile_bound_ranks)
    p99_bounds: Optional[Bounds] = None
