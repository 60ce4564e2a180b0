"""k6-like thresholds: `p99(commit_ms) < 500`, `rate(rows) > 5000`, `max(wal_bytes) < 100MB`,
`p99(commit_ms) over 60s < 500`, `rate(reads) >= 95%` (a rate as a percentage of the offered one). Parsed when a scenario is validated; evaluated after a run, each
stored with its measured value."""
from __future__ import annotations

import operator
import re
from dataclasses import dataclass
from typing import Callable

from harness.units import parse_size_bytes

# metric name -> (kind, unit). Latencies are in ms, sizes in bytes, counters are totals.
METRICS: dict[str, str] = {
    "commit_ms": "latency",    # commit end - intended start (coordinated-omission correct)
    "service_ms": "latency",   # commit end - actual start
    "lag_ms": "latency",       # how far the writer started behind schedule (head lag)
    "read_ms": "latency",      # reader query latency from its intended start
    "rows": "counter",
    "blocks": "counter",
    "reads": "counter",
    "wal_bytes": "gauge",
    "db_bytes": "gauge",
    "mem_bytes": "gauge",
    "rss_bytes": "gauge",
    "bloat_ratio": "gauge",
    # the measured phase's I/O (result metrics.io): plain numbers
    "resident_share": "figure",          # the engine's files in the page cache, at the phase's start and end
    "index_resident_share": "figure",    # per table and index (io.index_residency), at the end: min is the worst
    "read_iops": "figure",               # device reads per second
    "write_amplification": "figure",     # device bytes written per logical byte written
    # a crash run's (harness/crash/): per restart, and over the run
    "recovery_ms": "latency",            # restart: open + the first successful read
    "lost_acked_blocks": "counter",      # acknowledged blocks missing after the restarts
    # a block log's (harness/designs/block_log.py): commit_ms is then its acknowledgement
    "apply_lag_ms": "latency",           # a block's apply commit end - its acknowledgement
    "queryable_ms": "latency",           # a block's apply commit end - its due time: when a reader can see it
    "apply_lag_blocks": "latency",       # blocks acknowledged and not yet applied, at each acknowledgement (a count)
    "applied_rows": "counter",           # rows of the measured phase's blocks applied to the engine
    "apply_lag_growth_blocks": "figure",  # the lag's least-squares trend over the measured phase, in blocks
    "apply_utilisation": "figure",       # the share of the measured phase the applier spent applying
    "apply_drain_s": "figure",           # after the clock, until every acknowledged block was applied
    "log_growth_segments": "figure",     # the log's bytes' least-squares trend over the measured phase, in segments
}
# a design's figures (results/design.py) that thresholds read, by the field that holds each
DESIGN_FIGURES = {"apply_lag_growth_blocks": "lag_growth_blocks", "apply_utilisation": "apply_utilisation",
                  "apply_drain_s": "drain_s", "log_growth_segments": "log_growth_segments"}
CRASH_METRICS = ("recovery_ms", "lost_acked_blocks")
WAL_METRICS = ("wal_bytes",)     # unknown for an engine whose capabilities.wal is false
_AGGS_BY_KIND = {
    "latency": "pNN (p50, p99, p99.9), max, min, mean, count",
    "counter": "rate (per second of the measured phase, or with % as a percentage of the offered rate), count",
    "gauge": "max, min, mean, last",
    "figure": "max, min, mean, last",
}
_OPS: dict[str, Callable[[float, float], bool]] = {
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq,
}
_EXPR_RE = re.compile(
    r"^\s*(?P<agg>p\d{1,2}(?:\.\d+)?|max|min|mean|count|rate|last)\s*\(\s*(?P<metric>[a-z_]+)\s*\)"
    r"(?:\s+over\s+(?P<window>\d+)\s*s)?"
    r"\s*(?P<op><=|>=|==|<|>)\s*(?P<value>\d+(?:\.\d+)?)\s*(?P<unit>[a-zA-Z]*|%)\s*$"
)
GRAMMAR = "AGG(METRIC) [over Ns] OP NUMBER[UNIT], e.g. 'p99(commit_ms) < 500' or 'max(wal_bytes) < 100MB'"


# A rate as a share of the offered one at or above this met the offer in full: what it lacks is the block due as the
# window closed, still being applied, not a shortfall (one block of a 60-block screen is 1.7%: 12-06's capacity steps
# applied 98.33%); a backlog of more blocks is the lag's own line (p99(apply_lag_blocks) < 5).
MET_IN_FULL_PCT = 98.0


@dataclass(frozen=True)
class Threshold:
    expr: str
    agg: str            # "p99", "max", "rate", ...
    metric: str
    op: str
    limit: float        # in the metric's own unit (ms, bytes, per second; percent of the offered rate)
    window_s: int | None = None
    of_offered: bool = False   # rate(...) N%: the measured rate over the offered one, in percent

    @property
    def source_agg(self) -> str:
        """What the metric source is asked: "rate%" for a rate as a percentage of the offered one."""
        return "rate%" if self.of_offered else self.agg

    @property
    def percentile(self) -> float | None:
        return float(self.agg[1:]) if self.agg.startswith("p") else None

    def passes(self, value: float) -> bool:
        return _OPS[self.op](value, self.limit)

    def met_in_full(self, value: float) -> bool:
        """A rate as a share of the offered one that met the offer: its distance to the line is the offer's over the
        line (100% against 95%), the same for every candidate, so it is no margin and no close call."""
        return self.of_offered and value >= MET_IN_FULL_PCT

    def room(self, value: float) -> float | None:
        """How far inside the line a figure is, as a share of the line (negative: past it); None: no distance
        (an equality, or a line at zero)."""
        if self.op == "==" or not self.limit:
            return None
        return (1 - value / self.limit) if self.op in ("<", "<=") else (value / self.limit - 1)


def parse_threshold(expr: str) -> Threshold:
    """Parse one expression; raise ValueError with what is allowed."""
    m = _EXPR_RE.match(expr)
    if not m:
        raise ValueError(f"malformed threshold {expr!r}; expected {GRAMMAR}")
    agg, metric, unit = m["agg"], m["metric"], m["unit"]
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r} in {expr!r}; allowed: {', '.join(METRICS)}")
    kind = METRICS[metric]
    allowed = {"latency": agg.startswith("p") or agg in ("max", "min", "mean", "count"),
               "counter": agg in ("rate", "count"),
               "gauge": agg in ("max", "min", "mean", "last"),
               "figure": agg in ("max", "min", "mean", "last")}[kind]
    if not allowed:
        raise ValueError(f"{agg}() does not apply to {metric} in {expr!r}; allowed: {_AGGS_BY_KIND[kind]}")
    if agg.startswith("p") and not 0 < float(agg[1:]) < 100:
        raise ValueError(f"percentile {agg} out of range in {expr!r}; use p1..p99.999")
    of_offered = unit == "%"
    if of_offered and agg != "rate":
        raise ValueError(f"% applies to rate() only (a percentage of the offered rate), in {expr!r}")
    window = int(m["window"]) if m["window"] else None
    if window is not None and metric not in ("commit_ms", "service_ms"):
        raise ValueError(f"'over {window}s' applies to commit_ms and service_ms only, not {metric}, in {expr!r}")
    if window is not None and not (agg.startswith("p") or agg == "max"):
        raise ValueError(f"'over {window}s' takes a percentile or max, not {agg}(), in {expr!r}")
    if window is not None and window <= 0:
        raise ValueError(f"window must be positive in {expr!r}")
    limit = float(m["value"]) if of_offered else _to_metric_unit(float(m["value"]), unit, kind, expr, agg)
    return Threshold(expr=expr.strip(), agg=agg, metric=metric, op=m["op"], limit=limit, window_s=window,
                     of_offered=of_offered)


def _to_metric_unit(value: float, unit: str, kind: str, expr: str, agg: str) -> float:
    if not unit or agg == "count":
        if unit and agg == "count":
            raise ValueError(f"count() takes a plain number in {expr!r}")
        return value
    if kind == "latency":
        factors = {"ms": 1.0, "s": 1000.0, "us": 0.001}
        if unit not in factors:
            raise ValueError(f"unit {unit!r} is not a time in {expr!r}; use ms, s or us")
        return value * factors[unit]
    if kind == "gauge":
        try:
            return float(parse_size_bytes(f"{value}{unit}"))
        except ValueError:
            raise ValueError(f"unit {unit!r} is not a size in {expr!r}; use B, KB, MB, GB") from None
    raise ValueError(f"{kind} metrics take a plain number, not {unit!r}, in {expr!r}")


class NotEvaluable(Exception):
    """The run cannot judge this threshold (say, a measured phase shorter than its window)."""


# (agg, metric, window_s) -> measured value, or None when the run did not produce that metric; raises
# NotEvaluable with the reason when the run's data cannot answer it.
MetricSource = Callable[[str, str, "int | None"], "float | None"]
# (agg, metric) -> a whole-phase percentile's one-sided 95% bounds (lo, hi), a side None where unbounded; None: no
# bounds for it (not a percentile, or a metric without its values).
BoundsSource = Callable[[str, str], "tuple[float | None, float | None] | None"]


def judge_on_bounds(t: Threshold, bounds: tuple[float | None, float | None]) -> str:
    """passed when every value the bounds allow passes, failed when none does, else undecided."""
    lo, hi = bounds
    worst, best = (hi, lo) if t.op in ("<", "<=") else (lo, hi)    # "==" has no side: judged on both ends
    if worst is not None and t.passes(worst) and (t.op != "==" or (best is not None and t.passes(best))):
        return "passed"
    if best is not None and not t.passes(best) and t.op != "==":
        return "failed"
    return "undecided"


def scaled_thresholds(criteria: list[str], ratio: float) -> tuple[str, ...]:
    """A rows step's criteria: an absolute rate of rows keeps its share of the offered rate (the scenario's
    5000 of 6000 rows/s asks 83% of any block size), so the knee is the p99's, not the rate's arithmetic."""
    out = []
    for expr in criteria:
        t = parse_threshold(expr)
        if t.metric == "rows" and t.agg == "rate" and not t.of_offered and not t.window_s:
            expr = f"rate(rows) {t.op} {t.limit * ratio:.6g}"
        out.append(expr)
    return tuple(out)


def evaluate(thresholds: list[Threshold], source: MetricSource, bounds: BoundsSource | None = None) -> list[dict]:
    """Each threshold with its measured value; one the run cannot answer fails with the reason, never passes.
    A whole-phase percentile with bounds is judged on them too (`judged`)."""
    out = []
    for t in thresholds:
        try:
            value, error = source(t.source_agg, t.metric, t.window_s), None
        except NotEvaluable as e:
            value, error = None, f"not evaluable: {e}"
        if value is None and error is None:
            error = f"the run produced no {t.metric} values"
        passed = value is not None and t.passes(value)
        b = bounds(t.agg, t.metric) if bounds and value is not None and t.percentile and not t.window_s else None
        out.append({"expr": t.expr, "value": value, "passed": passed,
                    "judged": judge_on_bounds(t, b) if b else ("passed" if passed else "failed"),
                    **({"bounds": b} if b else {}), **({"error": error} if error else {})})
    return out


# ---- on a ceiling's knee (harness/walks/ceiling.py): ceiling.thresholds ----------------------------------

KNEE_METRICS = ("knee_read_qps", "knee_write_p99_ms", "knee_read_p99_ms")
_KNEE_RE = re.compile(r"^\s*(?P<metric>[a-z_0-9]+)\s*(?P<op><=|>=|<|>)\s*(?P<value>\d+(?:\.\d+)?)\s*$")


def parse_knee_threshold(expr: str) -> tuple[str, str, float]:
    m = _KNEE_RE.match(expr)
    if not m or m["metric"] not in KNEE_METRICS:
        raise ValueError(f"ceiling threshold {expr!r}: expected METRIC OP NUMBER with METRIC one of "
                         f"{', '.join(KNEE_METRICS)}, e.g. 'knee_read_qps >= 1000'")
    return m["metric"], m["op"], float(m["value"])


def judge_knee(thresholds: list[tuple[str, str, float]], knee: dict | None) -> list[dict]:
    out = []
    for metric, op, limit in thresholds:
        value = None if knee is None else (knee[metric] if metric in knee else None)
        out.append({"expr": f"{metric} {op} {limit:g}", "value": value,
                    "passed": value is not None and _OPS[op](value, limit)})
    return out
