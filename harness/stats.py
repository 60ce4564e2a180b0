"""Repeat statistics shared by bench-overhead and the report: a median and its spread, flagged noisy
as pyperf does when the spread reaches 10%."""
from __future__ import annotations

import statistics

NOISY_SPREAD = 0.10


def spread(values: list[float]) -> float | None:
    """(max - min) / median: the whole range the repeats covered, as a share of their middle."""
    vals = [v for v in values if v is not None]
    if len(vals) < 2:
        return None
    mid = statistics.median(vals)
    return (max(vals) - min(vals)) / mid if mid else None


def summarize(values: list[float]) -> dict:
    vals = [v for v in values if v is not None]
    s = spread(vals)
    return {"n": len(vals), "median": statistics.median(vals) if vals else None,
            "min": min(vals, default=None), "max": max(vals, default=None),
            "spread": round(s, 4) if s is not None else None,
            "noisy": s is not None and s >= NOISY_SPREAD}
