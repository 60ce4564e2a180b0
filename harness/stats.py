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


# Two-sided Student's t at 95% by degrees of freedom (pyperf's significance test uses the same table); past
# 30 the normal's 1.96 is within 2%.
_T95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
        2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
        2.045, 2.042)


def welch_t(a: list[float], b: list[float]) -> tuple[float, float] | None:
    """Welch's t statistic and its degrees of freedom (Welch-Satterthwaite); None below two values a side."""
    if len(a) < 2 or len(b) < 2:
        return None
    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    if va + vb == 0:
        return (0.0 if statistics.mean(a) == statistics.mean(b) else float("inf")), float(len(a) + len(b) - 2)
    t = (statistics.mean(a) - statistics.mean(b)) / (va + vb) ** 0.5
    df = (va + vb) ** 2 / ((va ** 2 / (len(a) - 1) if va else 0) + (vb ** 2 / (len(b) - 1) if vb else 0))
    return t, df


def significant(a: list[float], b: list[float]) -> bool | None:
    """Do two samples' means differ at 95% (two-sided Welch's t-test)? None: too few values to say."""
    tdf = welch_t(a, b)
    if tdf is None:
        return None
    t, df = tdf
    crit = _T95[max(1, int(df)) - 1] if df < len(_T95) + 1 else 1.96
    return abs(t) > crit
