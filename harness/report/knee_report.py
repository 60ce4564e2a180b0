"""A knee search's section of the report (knee.json, harness/walks/knee.py): its answer, every step, the curve."""
from __future__ import annotations

from pathlib import Path

from harness.report import plots
from harness.report.blocks import Block, _f, plots_block
from harness.results import load_knee
from harness.scenario.thresholds import parse_threshold
from harness.units import format_bytes

AXIS_LABELS = {"rows": "rows per block", "mem": "MEM (MiB)", "scale": "database scale (fraction of 1x)"}


def axis_value(axis: str, v: float) -> float:
    """The value as the curve's axis shows it (MEM in MiB)."""
    return v / 2**20 if axis == "mem" else v


def knee_blocks(data) -> list[Block]:
    k = data.meta
    doc = [Block("verdict", k.sentence or "the search has not finished; run the same make knee again to resume it."),
           Block("p", f"{k.engine}, {k.scenario} ({k.profile}), scale {k.scale:g}"
                      + (f", MEM {k.mem}" if k.mem and k.axis != "mem" else "")
                      + f": the knee of {AXIS_LABELS[k.axis]} searched within [{_v(k.axis, k.floor)}, "
                        f"{_v(k.axis, k.ceiling)}] to {k.resolution:.0%}, from {_v(k.axis, k.start)}. A step passes "
                        "when its cell passes: " + "; ".join(k.criteria) + (" (an absolute rate of rows scaled with the step's "
                        "block, so it keeps its share of the offered rate)" if k.axis == "rows" else "") + ". Steps stop early once a criterion "
                        "can no longer pass and check integrity by row counts; the knee is confirmed by a cell of its "
                        "own that checks every row. An errored step is neither a pass nor a fail."
                      + (" A step's load (its tightest upper line's measured value over its limit) guides the "
                         "next step's block where it explains the step's outcome." if k.axis == "rows" else "")
                      + (" A step marked continued started from the database the step before it left (each step "
                         "moves its state in, DROP_STATES=1), its rows more written; a confirmation always starts "
                         "from a fresh build." if any(s.continued_rows for s in k.steps) else "")
                      + (f" Wall time {k.wall_s / 60:.1f} min." if k.wall_s else ""))]
    rows = [[i, _v(k.axis, s.value) + (" (confirm)" if s.confirming else ""), s.status, s.verdict, _f(s.p99_ms, 0),
             _f(s.service_p50_ms, 0), _f(s.rows_per_s, 0), f"{s.load:.2f}x" if s.load else "-",
             format_bytes(s.db_bytes), f"continued (+{s.continued_rows:,} rows)" if s.continued_rows else "fresh",
             s.phases or "-",
             "; ".join(s.failed_on) or "-"] for i, s in enumerate(k.steps, 1)]
    doc += [Block("h2", "Steps"),
            Block("table", headers=["step", AXIS_LABELS[k.axis], "status", "as a step", "p99 ms", "service p50 ms",
                                    "rows/s", "load", "db size at end", "starting state", "where a block's time went",
                                    "failed on"],
                  rows=rows)]
    if (bias := continued_against_fresh(k)) is not None:
        doc.append(Block("p", bias))
    limits = [parse_threshold(t).limit for t in k.criteria if parse_threshold(t).metric == "commit_ms"]
    pts = [(axis_value(k.axis, s.value), s.p99_ms, s.service_p50_ms, s.verdict) for s in k.steps]
    doc.append(plots_block(plots.knee_curve(pts, axis_value(k.axis, k.knee) if k.knee is not None else None,
                                            min(limits, default=None), AXIS_LABELS[k.axis],
                                            f"{k.engine}: p99 and service p50 against {AXIS_LABELS[k.axis]}"),
                           f"knee-{k.axis}", "Commit p99 (from the intended start) and service p50 per step (open "
                           "markers: failed steps, x: errored), the criterion dotted, the knee in green."))
    return doc


def continued_against_fresh(k) -> str | None:
    """Each continued step beside the fresh confirmation at its value: what starting on the older database moved."""
    fresh = {s.value: s for s in k.steps if s.confirming and not s.continued_rows and s.verdict != "error"}
    pairs = [f"{_v(k.axis, c.value)}: p99 {_f(c.p99_ms, 0)} ms continued, {_f(f.p99_ms, 0)} fresh; service p50 "
             f"{_f(c.service_p50_ms, 0)} and {_f(f.service_p50_ms, 0)} ms ({c.verdict}, {f.verdict})"
             for c in k.steps if c.continued_rows and c.verdict != "error" and (f := fresh.get(c.value))]
    return ("A continued step against the fresh confirmation at the same value, on this knee: " + "; ".join(pairs)
            + ".") if pairs else None


def _v(axis: str, v: float) -> str:
    return f"{int(v) >> 20} MiB" if axis == "mem" else f"{v:,.0f}" if axis == "rows" else f"{v:g}"


def verdict_knee_blocks(root: Path) -> list[Block]:
    """A verdict's knee searches (KNEES=1, under its knees/ folder): each failing engine's write knee at a MEM,
    in rows per block and rows/s, with where its blocks' time went; its memory knee."""
    found = [k for p in sorted(root.glob("knees/*/knee.json")) if (k := load_knee(p)) is not None]
    if not found:
        return []
    rows = []
    for k in found:
        at = [s for s in k.steps if k.knee is not None and s.value == k.knee and s.verdict == "pass"]
        rows.append([k.engine, {"rows": "write (rows per block)", "mem": "memory"}.get(k.axis, k.axis),
                     k.mem if k.axis != "mem" else "-", _v(k.axis, k.knee) if k.knee is not None else "none",
                     _f(min((s.rows_per_s or 0 for s in at), default=None), 0) if at else "-",
                     (at[0].phases if at else None) or (k.steps[0].phases if k.steps else None) or "-",
                     k.sentence or "unfinished"])
    return [Block("h2", "How far from passing (knee searches)"),
            Block("table", headers=["engine", "knee of", "MEM", "knee", "rows/s there", "where a block's time went "
                                    "(at the knee, else the first step)", "answer"], rows=rows)]
