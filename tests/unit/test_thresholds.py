from fractions import Fraction
from math import comb

import pytest

from harness.runner.metrics import new_histogram, percentile_bounds_ms, summary_ms
from harness.scenario.thresholds import evaluate, parse_threshold
from harness.stats import quantile_bound_ranks


@pytest.mark.parametrize("expr,agg,metric,op,limit,window", [
    ("p99(commit_ms) < 500", "p99", "commit_ms", "<", 500, None),
    ("max(commit_ms) < 2s", "max", "commit_ms", "<", 2000, None),
    ("rate(rows) > 5000", "rate", "rows", ">", 5000, None),
    ("max(wal_bytes) < 100MB", "max", "wal_bytes", "<", 100 * 2**20, None),
    ("p99.9(service_ms)<=1500", "p99.9", "service_ms", "<=", 1500, None),
    ("p99(commit_ms) over 60s < 500", "p99", "commit_ms", "<", 500, 60),
])
def test_parse(expr, agg, metric, op, limit, window):
    t = parse_threshold(expr)
    assert (t.agg, t.metric, t.op, t.limit, t.window_s) == (agg, metric, op, limit, window)


@pytest.mark.parametrize("expr,why", [
    ("p99(commit_ms) << 500", "malformed"),
    ("p99 commit_ms < 500", "malformed"),
    ("rate(commit_ms) > 3", "does not apply"),
    ("p99(rows) < 3", "does not apply"),
    ("max(wal_bytes) < 100ms", "not a size"),
    ("p99(commit_ms) < 5MB", "not a time"),
    ("max(wal_bytes) over 10s < 1MB", "commit_ms and service_ms only"),
    ("p0(commit_ms) < 1", "out of range"),
])
def test_parse_errors(expr, why):
    with pytest.raises(ValueError, match=why):
        parse_threshold(expr)


def test_evaluate_records_values_and_missing_metric_fails():
    values = {("p99", "commit_ms"): 120.0, ("rate", "rows"): 4000.0}
    out = evaluate([parse_threshold("p99(commit_ms) < 500"), parse_threshold("rate(rows) > 5000"),
                    parse_threshold("p99(read_ms) < 10")],
                   lambda agg, metric, w: values.get((agg, metric)))
    assert [(o["value"], o["passed"]) for o in out] == [(120.0, True), (4000.0, False), (None, False)]
    assert "no read_ms" in out[2]["error"]


def test_a_rate_as_a_percentage_of_the_offered_rate():
    t = parse_threshold("rate(reads) >= 95%")
    assert t.of_offered and t.limit == 95 and t.source_agg == "rate%"
    with pytest.raises(ValueError, match="% applies to rate"):
        parse_threshold("p99(read_ms) < 95%")
    [r] = evaluate([t], lambda agg, metric, w: 96.0 if agg == "rate%" else 1.0)
    assert r["passed"] and r["value"] == 96.0


# ---- a percentile's bounds (issue 56): order statistics, judged on both ends --------------------------------

def _binomial_cdf_exact(n: int, p: Fraction, k: int) -> Fraction:
    return sum((comb(n, i) * p ** i * (1 - p) ** (n - i) for i in range(k + 1)), Fraction(0))


@pytest.mark.parametrize("n,pct", [(20, 50), (20, 99), (100, 50), (100, 95), (268, 99), (300, 99), (1000, 99),
                                   (5, 50)])
def test_the_bound_ranks_are_the_tightest_one_sided_95_percent_order_statistics(n, pct):
    """Checked against exact rational binomial sums, not the code's own log-space ones: x_(lo) lies above
    the true percentile with probability <= 5%, x_(hi) below it with <= 5% (each side judged on its own: a
    pass on hi, a failure on lo), and no rank tighter would."""
    lo, hi = quantile_bound_ranks(n, pct)
    p, tail = Fraction(pct) / 100, Fraction(1, 20)
    cdf = lambda k: _binomial_cdf_exact(n, p, k)         # noqa: E731
    if lo is None:
        assert cdf(0) > tail
    else:
        assert cdf(lo - 1) <= tail and (lo == n or cdf(lo) > tail)
    if hi is None:
        assert cdf(n - 1) < 1 - tail
    else:
        assert cdf(hi - 1) >= 1 - tail and (hi == 1 or cdf(hi - 2) < 1 - tail)


def test_the_bound_ranks_match_the_published_table_for_a_median():
    # the distribution-free two-sided 90% interval of a median (one-sided 95% each side): x_(6)..x_(15) of 20,
    # x_(42)..x_(59) of 100 (Conover's table)
    assert quantile_bound_ranks(20, 50) == (6, 15) and quantile_bound_ranks(100, 50) == (42, 59)
    assert quantile_bound_ranks(20, 99) == (19, None)       # 20 blocks cannot bound a p99 from above


def test_300_blocks_bound_a_p99_from_above_by_their_maximum_and_298_cannot():
    """The ratio profile measures 300 blocks: a p99 passes decided there only with no block over its line."""
    assert quantile_bound_ranks(300, 99)[1] == 300 and quantile_bound_ranks(298, 99)[1] is None


def test_a_histograms_bounds_are_its_values_at_those_ranks():
    h = new_histogram()
    for ms in range(1, 101):
        h.record_value(ms * 1000)
    lo, hi = percentile_bounds_ms(h, 50)
    assert round(lo) == 42 and round(hi) == 59                 # the 42nd and 59th of 1..100 ms
    s = summary_ms(h)
    assert s["p50_bounds"] == (lo, hi) and s["p50_bounds"][0] <= s["p50"] <= s["p50_bounds"][1]
    assert round(s["p99_bounds"][0]) == 97 and s["p99_bounds"][1] is None     # 100 values: from below only


@pytest.mark.parametrize("expr,bounds,judged", [
    ("p99(commit_ms) < 500", (300.0, 450.0), "passed"),
    ("p99(commit_ms) < 500", (300.0, None), "undecided"),       # a p99 of 20 blocks: no upper bound
    ("p99(commit_ms) < 500", (520.0, None), "failed"),
    ("p99(commit_ms) < 500", (420.0, 610.0), "undecided"),
    ("p50(read_ms) > 10", (12.0, 30.0), "passed"),
    ("p50(read_ms) > 10", (2.0, 8.0), "failed"),
])
def test_a_percentile_threshold_is_judged_on_its_bounds(expr, bounds, judged):
    t = parse_threshold(expr)
    [r] = evaluate([t], lambda agg, metric, w: (bounds[0] + (bounds[1] or bounds[0])) / 2,
                   lambda agg, metric: bounds)
    assert r["judged"] == judged and r["bounds"] == bounds


def test_a_threshold_without_bounds_is_judged_on_its_value():
    [r, w] = evaluate([parse_threshold("rate(rows) > 5000"), parse_threshold("p99(commit_ms) over 60s < 500")],
                      lambda agg, metric, w: 6000.0 if metric == "rows" else 700.0, lambda agg, metric: (1.0, 2.0))
    assert (r["judged"], "bounds" in r) == ("passed", False)
    assert (w["judged"], "bounds" in w) == ("failed", False)      # a window's worst: no bounds of its own
