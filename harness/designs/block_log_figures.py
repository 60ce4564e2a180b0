"""What a block log records as it runs, and its figures over a measured window (BlockLogEngine.figures): the
apply lag, how busy the applier was and how long it took to drain, the log's bytes and their trend."""
from __future__ import annotations

from dataclasses import dataclass
from statistics import fmean

from harness.results.design import BlockLogFigures


@dataclass
class Pending:
    number: int
    rows: int
    ack_ns: int                 # time.monotonic_ns() when its record was durable
    where: tuple[int, int]      # (segment, offset) in the log
    payload: bytes | None       # its record, held in memory; None: read back from the log
    lag_blocks: int             # blocks acknowledged before it and not yet applied when it was acknowledged
    due_ns: int | None = None   # when it fell due (the writer's schedule), where the runner said


@dataclass(frozen=True)
class Applied:
    """One block's apply."""
    number: int
    rows: int
    ack_ns: int
    applied_ns: int             # its transaction's commit end
    lag_blocks: int             # how far the engine trailed the log's head when it was acknowledged
    due_ns: int | None = None   # when it fell due: queryable from then at applied_ns


@dataclass(frozen=True)
class Transaction:
    blocks: int
    start_ns: int
    end_ns: int
    phases: dict                # the adapter's block_phases() for the group


def trend(points: list[tuple[float, float]]) -> float | None:
    """The least-squares slope of (seconds, y) times the span: what y gained over the phase."""
    if len(points) < 2:
        return None
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    mx, my = fmean(xs), fmean(ys)
    var = sum((x - mx) ** 2 for x in xs)
    if not var:
        return 0.0
    slope = sum((x - mx) * (y - my) for x, y in points) / var
    return round(slope * (max(xs) - min(xs)), 3)


def busy_share(txs: list[Transaction], start_ns: int, end_ns: int) -> float | None:
    """The applier's utilisation: the share of [start_ns, end_ns] it spent inside apply transactions."""
    if end_ns <= start_ns:
        return None
    busy = sum(max(0, min(t.end_ns, end_ns) - max(t.start_ns, start_ns)) for t in txs)
    return round(busy / (end_ns - start_ns), 4)


def window_figures(design, start_ns: int, end_ns: int,
                   drain_s: float | None) -> tuple[BlockLogFigures, dict[str, list[float]]]:
    """(the figures, {metric: its values in ms}) of the blocks acknowledged in [start_ns, end_ns]. The runner makes
    each series a histogram, and its summary the figure of the same name: one summary rule for every latency."""
    measured = [a for a in design.applied if start_ns <= a.ack_ns <= end_ns]
    window_s = max(1e-9, (end_ns - start_ns) / 1e9)
    applied_rows = sum(a.rows for a in measured if a.applied_ns <= end_ns)
    lag_ms = [(a.applied_ns - a.ack_ns) / 1e6 for a in measured]
    # when a reader can see the block, from its due time: its apply's commit (the acknowledgement is the log's)
    queryable_ms = [(a.applied_ns - a.due_ns) / 1e6 for a in measured if a.due_ns is not None]
    lag_blocks = [float(a.lag_blocks) for a in measured]
    first_apply = min((a.applied_ns for a in measured), default=end_ns + 1)
    last_apply = max((a.applied_ns for a in measured), default=0)
    txs = [t for t in design.transactions if t.end_ns >= first_apply and t.start_ns <= last_apply]
    phase_names = sorted({k for t in txs for k in t.phases})
    acks = [a for a in design.acks if start_ns <= a[0] <= end_ns]
    seg = design.log.segment_bytes
    figures = BlockLogFigures(
        group_blocks=design.group_blocks, lag_bound_blocks=design.lag_bound_blocks, synced=design.sync,
        acknowledged_blocks=len(measured), applied_rows=applied_rows,
        applied_rows_per_s=round(applied_rows / window_s, 1),
        lag_at_start_blocks=measured[0].lag_blocks if measured else None,
        lag_growth_blocks=trend([((a.ack_ns - start_ns) / 1e9, a.lag_blocks) for a in measured]),
        transactions=len(txs), blocks_per_transaction=round(fmean(t.blocks for t in txs), 2) if txs else None,
        apply_phases_ms={k: round(fmean(t.phases.get(k, 0.0) for t in txs), 3) for k in phase_names},
        ack_phases_ms={"write": round(fmean(a[1] for a in acks), 3), "sync": round(fmean(a[2] for a in acks), 3)}
        if acks else {},
        apply_utilisation=busy_share(design.transactions, start_ns, end_ns),
        replay_blocks=design.replay["blocks"], replay_s=design.replay["seconds"],
        drain_s=round(drain_s, 3) if drain_s is not None else None, log_bytes_written=design.log.bytes_written,
        segment_bytes=seg, log_bytes_end=acks[-1][3] if acks else None, log_bytes_peak=design.log.peak_bytes,
        log_growth_segments=trend([((a[0] - start_ns) / 1e9, a[3] / seg) for a in acks]),
        log_rotations=design.log.rotations)
    return figures, {"apply_lag_ms": lag_ms, "apply_lag_blocks": lag_blocks, "queryable_ms": queryable_ms,
                     "apply_ms": [(t.end_ns - t.start_ns) / 1e6 for t in txs]}


def trend_points(design, start_ns: int, end_ns: int, window_s: float) -> dict[str, list[tuple[float, float]]]:
    """Its figures over [start_ns, end_ns] as (seconds since start_ns, value), for their trends and design.csv: the
    lag at each acknowledgement (blocks and ms), the applier's busy share per window, each apply and its phases."""
    measured = [a for a in design.applied if start_ns <= a.ack_ns <= end_ns]
    w_ns = int(window_s * 1e9)
    busy = [((i + 0.5) * window_s, busy_share(design.transactions, start_ns + i * w_ns, start_ns + (i + 1) * w_ns))
            for i in range((end_ns - start_ns) // w_ns)]
    # each apply transaction's phases at its end (statements, commit, checkpoint): where a rising busy share goes
    txs = [t for t in design.transactions if start_ns <= t.end_ns <= end_ns]
    phases = {f"apply_{k}_ms": [((t.end_ns - start_ns) / 1e9, t.phases[k]) for t in txs if k in t.phases]
              for k in sorted({k for t in txs for k in t.phases})}
    return {"apply_lag_blocks": [((a.ack_ns - start_ns) / 1e9, float(a.lag_blocks)) for a in measured],
            "apply_lag_ms": [((a.ack_ns - start_ns) / 1e9, (a.applied_ns - a.ack_ns) / 1e6) for a in measured],
            "apply_utilisation": [(t, v) for t, v in busy if v is not None],
            "apply_ms": [((t.end_ns - start_ns) / 1e9, (t.end_ns - t.start_ns) / 1e6) for t in txs], **phases}
