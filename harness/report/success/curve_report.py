"""A degradation curve's section of the report (curve.json, harness/walks/curve.py): each figure against the
database's size, measured points on one line, the 10x projection a marker of its own with its interval, and a
table where a projected row says projected in its own cell."""
from __future__ import annotations

import matplotlib.pyplot as plt

from harness.report import plots
from harness.report.blocks import Block, _f, plots_block
from harness.report.success.curve import Measured, Projected, curve_rows, draw, fit

FIGURES = {"service_p50_ms": "per-block service time p50", "ack_p99_ms": "acknowledgement p99 (from the due time)",
           "queryable_p99_ms": "queryable p99 (from the due time)"}


def curve_blocks(c) -> list[Block]:
    """c: a CurveFile (results/curve.py)."""
    doc = [Block("p", f"{c.engine}, {c.scenario} ({c.profile}): each scale's starting state built, MEM its size / "
                      f"{c.ratio:g} (one data-to-memory ratio at every point), the scenario's cell in full, never "
                      f"stopped early. Made by `{c.command}`."
                      + (f" Wall time {c.wall_s / 60:.1f} min." if c.wall_s else "")
                      + ("" if c.complete else " Not finished: run the same command again to resume it."))]
    rows = [[f"{p.scale:g}x", f"{p.size_gib:,.1f}", p.mem, p.status, _f(p.service_p50_ms, 0), _f(p.ack_p99_ms, 0),
             _f(p.queryable_p99_ms, 0), _f(p.rows_per_s, 0), f"measured {p.sitting}: {p.cell}"] for p in c.points]
    doc += [Block("h2", "Measured at each scale"),
            Block("table", headers=["scale", "state GiB", "MEM", "status", "service p50 ms", "ack p99 ms",
                                    "queryable p99 ms", "rows/s", "what it is"], rows=rows)]
    for name, what in FIGURES.items():
        pts = [Measured(p.scale, p.size_gib, getattr(p, name), p.cell, p.sitting) for p in c.points
               if getattr(p, name) is not None and p.status in ("passed", "failed")]
        if not pts:
            continue
        proj = [_projected(q, pts) for q in c.projections if q.figure == name]
        doc += [Block("h3", f"{what} against the database's size"),
                Block("table", headers=["scale", "state GiB", what, "what it is"], rows=curve_rows(pts, proj, "ms"))]
        doc.append(plots_block(_chart(pts, proj, what), f"curve-{name}",
                               f"{what} per scale (solid: measured); the 10x point projected (hollow, grey, its 95% "
                               "prediction interval), never measured here."))
        doc += [Block("p", q.says) for q in c.projections if q.figure == name]
    return doc


def _projected(q, pts: list[Measured]) -> Projected:
    """A stored projection again as the curve module's type (its fit recomputed from the same points)."""
    chosen, other = fit(pts, q.model), fit(pts, "linear" if q.model == "log" else "log")
    return Projected(q.scale, q.size_gib, q.value, q.lo, q.hi, chosen, other)


def _chart(pts: list[Measured], proj: list[Projected], what: str) -> str:
    fig, ax = plt.subplots(figsize=(7, 3.6))
    draw(ax, pts, proj, what)
    ax.set_xlabel("starting state (GiB)")
    ax.set_ylabel("ms")
    ax.legend(loc="upper left", fontsize=8)
    return plots._svg(fig)
