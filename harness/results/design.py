"""A design's own figures in result.json (metrics.block_log): what the tree's last leaf adds to a run."""
from __future__ import annotations

from typing import Optional

from harness.results.base import LatencySummary, Model


class BlockLogFigures(Model):
    """A block log in front of the engine (harness/designs/block_log.py); the run's commit_latency_ms is then the
    acknowledgement's latency (durable in the log), from each block's due time."""
    group_blocks: int                     # the most blocks one apply transaction took
    lag_bound_blocks: int                 # the bound its apply lag p99 is judged against
    synced: bool                          # each record fdatasync'ed before its acknowledgement
    acknowledged_blocks: int              # in the measured phase
    applied_rows: int                     # their rows applied by the window's end
    applied_rows_per_s: Optional[float] = None      # over the window
    apply_lag_ms: LatencySummary = LatencySummary()         # apply commit end - acknowledgement, per block
    apply_lag_blocks: LatencySummary = LatencySummary()     # blocks the engine trailed the head by at each
                                                            # acknowledgement (a count, not ms)
    lag_growth_blocks: Optional[float] = None        # the lag's least-squares trend over the measured phase
    # v18: what a reader sees, and whether the phase began steady
    queryable_ms: LatencySummary = LatencySummary()  # apply commit end - due time, per block: when a reader sees it
    lag_at_start_blocks: Optional[int] = None        # the backlog the first measured block found (a warm-up's)
    transactions: int = 0                            # apply transactions that held a measured block
    blocks_per_transaction: Optional[float] = None
    apply_ms: LatencySummary = LatencySummary()      # one apply transaction
    apply_phases_ms: dict[str, float] = {}           # its mean split (the adapter's phases)
    ack_phases_ms: dict[str, float] = {}             # the acknowledgement's mean split: write, sync (v11: encode_write)
    replay_blocks: int = 0                           # applied from the log at open (after a crash)
    replay_s: float = 0.0
    drain_s: Optional[float] = None                  # after the clock, until every acknowledged block applied
    log_bytes_written: int = 0
    # v14: the applier judged on keeping up, and the log on staying bounded
    apply_utilisation: Optional[float] = None        # the share of the measured window spent applying
    segment_bytes: Optional[int] = None              # the log's segment size: a segment goes whole
    log_bytes_end: Optional[int] = None              # on disk at the measured window's last acknowledgement
    log_bytes_peak: Optional[int] = None             # the most on disk at any acknowledgement since open
    log_growth_segments: Optional[float] = None      # the log's bytes' least-squares trend over the window, in segments
    log_rotations: int = 0                           # segments opened since open


def queryable_p99_ms(metrics) -> float | None:
    """When a reader can see a block, p99 from its due time (result metrics): an engine in place at its commit;
    behind a block log at its apply. A block log's result before v18 has no such figure: None, never its ack's."""
    bl = metrics.block_log
    if bl is None:
        return metrics.commit_latency_ms.p99
    return bl.queryable_ms.p99


def block_log_line(b: BlockLogFigures) -> str:
    """One line: the acknowledgement's split, the apply transactions and theirs, the lag, the replay."""
    ack = ", ".join(f"{k} {v:,.1f}" for k, v in b.ack_phases_ms.items())
    split = ", ".join(f"{k} {v:,.0f}" for k, v in sorted(b.apply_phases_ms.items(), key=lambda kv: -kv[1]) if v >= 0.5)
    lag = b.apply_lag_blocks
    return (f"acknowledged when logged{' and synced' if b.synced else ''} (mean ms: {ack or '-'}); "
            f"{b.transactions} apply transactions of {b.blocks_per_transaction or 0:g} blocks on average, "
            f"{_ms(b.apply_ms.p50)} ms p50 ({split or '-'}); {b.applied_rows_per_s or 0:,.0f} rows/s applied; "
            f"lag p50 {_n(lag.p50)} / p99 {_n(lag.p99)} / max {_n(lag.max)} blocks ({_ms(b.apply_lag_ms.p99)} ms "
            f"p99), growth {_n(b.lag_growth_blocks)} blocks over the phase; applier busy {_pct(b.apply_utilisation)}, "
            f"drained in {_n(b.drain_s)} s; log {_mib(b.log_bytes_end)} MiB at the end, {_mib(b.log_bytes_peak)} MiB "
            f"peak, growth {_n(b.log_growth_segments)} segments; replayed {b.replay_blocks} blocks at open "
            f"in {b.replay_s:.3f} s")


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v:,.0f}"


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v:.0%}"


def _mib(v: int | None) -> str:
    return "-" if v is None else f"{v / (1 << 20):,.1f}"


def _n(v: float | None) -> str:
    return "-" if v is None else f"{v:g}"


def behind_at_clock(result) -> float | None:
    """The blocks a block log's applier trailed by at the measured phase's first acknowledgement, where past its
    bound; None where it kept up (or no block log)."""
    bl = result.metrics.block_log
    if bl is None:
        return None
    at_start = bl.lag_at_start_blocks
    return at_start if at_start is not None and at_start > bl.lag_bound_blocks else None
