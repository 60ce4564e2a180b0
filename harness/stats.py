"""Repeat statistics shared by bench-overhead and the report: a median and its spread, flagged noisy
as pyperf does when the spread reaches 10%; a percentile's distribution-free confidence bounds."""
from __future__ import annotations

import math
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


def t95(df: int) -> float:
    """Student's two-sided 95% critical value at df degrees of freedom (the normal's past the table)."""
    return _T95[max(1, df) - 1] if df <= len(_T95) else 1.96


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
    return abs(t) > t95(int(df))


# Above this many values the binomial is summed over its normal band only (±12 sd covers it all in doubles).
_EXACT_SUM_MAX = 200_000


def _binomial_cdf(n: int, p: float):
    """k -> P(Binomial(n, p) <= k), summed in log space so (1-p)^n underflowing cannot zero a tail."""
    if p <= 0 or p >= 1:
        return lambda k: 1.0 if (p <= 0 or k >= n) else 0.0
    lp, lq, lgn = math.log(p), math.log1p(-p), math.lgamma(n + 1)
    mean, sd = n * p, math.sqrt(n * p * (1 - p))
    first = 0 if n <= _EXACT_SUM_MAX else max(0, int(mean - 12 * sd))
    pmf = [math.exp(lgn - math.lgamma(k + 1) - math.lgamma(n - k + 1) + k * lp + (n - k) * lq)
           for k in range(first, min(n, int(mean + 12 * sd) + 1 if n > _EXACT_SUM_MAX else n) + 1)]
    cum, total = [], 0.0
    for v in pmf:
        total += v
        cum.append(total)
    return lambda k: 0.0 if k < first else (1.0 if k - first >= len(cum) else min(1.0, cum[k - first]))


def quantile_bound_ranks(n: int, pct: float, confidence: float = 0.95) -> tuple[int | None, int | None]:
    """The 1-based ranks (lo, hi) among n sorted values whose values bound the pct-th percentile of the
    distribution they were drawn from, each side on its own at `confidence` (one-sided: a pass is judged on
    the upper bound alone, a failure on the lower, so each side may miss 5%, not 2.5%); no assumption on the
    distribution (order statistics: the count of values below the true percentile is Binomial(n, pct/100)).
    None where n values cannot give that side: an upper bound of a p99 needs n >= 299 (0.99^299 < 5%), and
    at 300 blocks it is the maximum, so a p99 passes decided only with no block over its line."""
    if n <= 0:
        return None, None
    tail, cdf = 1 - confidence, _binomial_cdf(n, pct / 100)
    # lo: the largest rank r with P(B <= r-1) <= tail, so the true percentile lies below x_(r) that rarely
    lo = next((r for r in range(n, 0, -1) if cdf(r - 1) <= tail), None)
    # hi: the smallest rank r with P(B <= r-1) >= 1 - tail, so it lies at or above x_(r) that rarely
    hi = next((r for r in range(1, n + 1) if cdf(r - 1) >= 1 - tail), None)
    return lo, hi
