import pytest

from harness.scenario.thresholds import evaluate, parse_threshold


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
