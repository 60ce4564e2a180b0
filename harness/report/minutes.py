"""A cell minute by minute, read back from its own files: what the reader of an hour asks of each minute — the
acknowledgement's, the queryable's and the reads' p99, the apply lag, the applier's busy share, the database's
size. Minute 1 starts at the first measured block's due time; every figure is that minute's own (a p99 over the
minute's blocks or reads, never a mean of per-second p99s)."""
from __future__ import annotations

from dataclasses import dataclass

from harness.report.blocks import Block, _f
from harness.report.collect import CellData
from harness.results.hlog import interval_histograms, new_histogram
from harness.trend import aggregate
from harness.units import format_bytes

MINUTE_S = 60.0


@dataclass
class Minute:
    minute: int                          # 1-based, of the measured phase
    blocks: int
    ack_p99_ms: float | None             # the commit, or under a block log its acknowledgement, from the due time
    queryable_p99_ms: float | None       # when a reader sees the block, from its due time (a design's apply)
    lag_p99_blocks: float | None
    busy_share: float | None             # the applier's, mean of its windows centred in this minute
    reads_per_s: float | None
    read_p99_ms: float | None            # from each read's intended start (read.hlog)
    db_bytes: int | None                 # the database at the minute's last sample


def p99(values: list[float]) -> float | None:
    """The nearest-rank p99, as a threshold's window reads it (trend.aggregate)."""
    return aggregate("p99", values) if values else None


def minutes(cell: CellData) -> list[Minute]:
    """The measured phase minute by minute; [] for a cell that measured no block."""
    blocks = cell.blocks()
    if not blocks:
        return []
    t0 = float(blocks[0]["due_s"])
    design = cell.design_points()
    by: dict[int, dict[str, list]] = {}

    def put(t_s: float, key: str, value) -> None:
        if value is not None and t_s >= 0:
            by.setdefault(int(t_s // MINUTE_S), {}).setdefault(key, []).append(value)

    for b in blocks:
        put(float(b["due_s"]) - t0, "ack", float(b["commit_ms"]))
    for t_s, ms in _queryable(blocks, design):
        put(t_s, "queryable", ms)
    for r in design:                     # a design's points are timed from the measured phase's start
        if r["metric"] == "apply_lag_blocks":
            put(float(r["t_s"]), "lag", float(r["value"]))
        elif r["metric"] == "apply_utilisation":
            put(float(r["t_s"]), "busy", float(r["value"]))
    reads: dict[int, list] = {}          # minute -> [its reads' histogram, the seconds its intervals span]
    for start_s, end_s, h in interval_histograms(cell.run_dir / "read.hlog"):
        if start_s >= t0:
            got = reads.setdefault(int((start_s - t0) // MINUTE_S), [new_histogram(), 0.0])
            got[0].add(h)
            got[1] += end_s - start_s
    for m, got in reads.items():
        put(m * MINUTE_S, "reads", got)
    for r in cell.timeseries():
        if r.get("phase") == "measure":
            put(float(r["t_s"]) - t0, "db", r.get("db_bytes"))
    n_blocks = int((float(blocks[-1]["due_s"]) - t0) // MINUTE_S) + 1
    return [_minute(m, by.get(m, {})) for m in range(n_blocks)]


def _queryable(blocks: list[dict], design: list[dict]) -> list[tuple[float, float]]:
    """Each block's apply end from its due time: its acknowledgement plus the index's lag behind it. design.csv's
    lags are one per measured block, in block order; where the counts differ none is paired (no guessing)."""
    lags = [float(r["value"]) for r in design if r["metric"] == "apply_lag_ms"]
    if len(lags) != len(blocks):
        return []
    t0 = float(blocks[0]["due_s"])
    return [(float(b["due_s"]) - t0, float(b["commit_ms"]) + lag) for b, lag in zip(blocks, lags)]


def _minute(m: int, got: dict[str, list]) -> Minute:
    [(merged, read_s)] = got.get("reads", [(None, 0.0)])
    n_reads = merged.get_total_count() if merged is not None else 0
    busy = got.get("busy")
    dbs = got.get("db")
    return Minute(minute=m + 1, blocks=len(got.get("ack", [])), ack_p99_ms=p99(got.get("ack", [])),
                  queryable_p99_ms=p99(got.get("queryable", [])), lag_p99_blocks=p99(got.get("lag", [])),
                  busy_share=aggregate("mean", busy) if busy else None,
                  reads_per_s=n_reads / read_s if read_s > 0 else None,
                  read_p99_ms=merged.get_value_at_percentile(99.0) / 1000 if n_reads else None,
                  db_bytes=int(dbs[-1]) if dbs else None)


def minutes_table(cell: CellData, rows: list[Minute] | None = None) -> Block | None:
    """The minutes as a table, the columns the cell has (an engine alone has no queryable, lag or busy share).
    rows: the cell's minutes where the caller has read them already (an hour's read.hlog is read once)."""
    rows = minutes(cell) if rows is None else rows
    if not rows:
        return None
    cols = [(k, h, fmt) for k, h, fmt in COLUMNS if any(getattr(r, k) is not None for r in rows)]
    return Block("table", headers=["minute", "blocks"] + [h for _, h, _ in cols],
                 rows=[[str(r.minute), str(r.blocks)] + [fmt(getattr(r, k)) for k, _, fmt in cols] for r in rows])


COLUMNS = (("ack_p99_ms", "ack p99 (ms)", _f), ("queryable_p99_ms", "queryable p99 (ms)", _f),
           ("lag_p99_blocks", "apply lag p99 (blocks)", lambda v: _f(v, 0)),
           ("busy_share", "applier busy", lambda v: "-" if v is None else f"{v:.1%}"),
           ("reads_per_s", "reads/s", lambda v: _f(v, 0)), ("read_p99_ms", "read p99 (ms)", _f),
           ("db_bytes", "database", lambda v: "-" if v is None else format_bytes(v)))
