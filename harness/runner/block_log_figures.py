"""A block log's figures over the measured window (results/design.py), and the histograms its thresholds
read (apply_lag_ms; apply_lag_blocks, a count recorded as if it were ms)."""
from __future__ import annotations

from statistics import fmean

from harness.results.design import BlockLogFigures
from harness.results.models import LatencySummary
from harness.runner.metrics import new_histogram, summary_ms


def _hist(values_ms: list[float]):
    h = new_histogram()
    for v in values_ms:
        h.record_value(max(0, round(v * 1000)))
    return h


def lag_growth(points: list[tuple[float, float]]) -> float | None:
    """The least-squares slope of (seconds, blocks) times the span: the blocks the lag gained over the phase."""
    if len(points) < 2:
        return None
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    mx, my = fmean(xs), fmean(ys)
    var = sum((x - mx) ** 2 for x in xs)
    if not var:
        return 0.0
    slope = sum((x - mx) * (y - my) for x, y in points) / var
    return round(slope * (max(xs) - min(xs)), 3)


def block_log_figures(design, plan, start_ns: int, end_ns: int, drain_s: float | None) -> tuple[BlockLogFigures, dict]:
    """(the figures, {metric: histogram}) of the blocks acknowledged in [start_ns, end_ns]."""
    measured = [a for a in design.applied if start_ns <= a.ack_ns <= end_ns]
    window_s = max(1e-9, (end_ns - start_ns) / 1e9)
    applied_rows = sum(a.rows for a in measured if a.applied_ns <= end_ns)
    lag_ms = [(a.applied_ns - a.ack_ns) / 1e6 for a in measured]
    lag_blocks = [float(a.lag_blocks) for a in measured]
    txs = [t for t in design.transactions if t.end_ns >= min((a.applied_ns for a in measured), default=end_ns + 1)
           and t.start_ns <= max((a.applied_ns for a in measured), default=0)]
    hists = {"apply_lag_ms": _hist(lag_ms), "apply_lag_blocks": _hist(lag_blocks)}
    phase_names = sorted({k for t in txs for k in t.phases})
    acks = [a[1:] for a in design.ack_phases if start_ns <= a[0] <= end_ns]
    figures = BlockLogFigures(
        group_blocks=plan.block_log.group_blocks, lag_bound_blocks=plan.block_log.lag_bound_blocks,
        synced=plan.block_log.sync, acknowledged_blocks=len(measured), applied_rows=applied_rows,
        applied_rows_per_s=round(applied_rows / window_s, 1),
        apply_lag_ms=LatencySummary(**summary_ms(hists["apply_lag_ms"])) if measured else LatencySummary(),
        apply_lag_blocks=LatencySummary(**summary_ms(hists["apply_lag_blocks"])) if measured else LatencySummary(),
        lag_growth_blocks=lag_growth([((a.ack_ns - start_ns) / 1e9, a.lag_blocks) for a in measured]),
        transactions=len(txs), blocks_per_transaction=round(fmean(t.blocks for t in txs), 2) if txs else None,
        apply_ms=LatencySummary(**summary_ms(_hist([(t.end_ns - t.start_ns) / 1e6 for t in txs]))) if txs
        else LatencySummary(),
        apply_phases_ms={k: round(fmean(t.phases.get(k, 0.0) for t in txs), 3) for k in phase_names},
        ack_phases_ms={"write": round(fmean(a[0] for a in acks), 3), "sync": round(fmean(a[1] for a in acks), 3)}
        if acks else {},
        replay_blocks=design.replay["blocks"], replay_s=design.replay["seconds"],
        drain_s=round(drain_s, 3) if drain_s is not None else None, log_bytes_written=design.log.bytes_written)
    return figures, hists
