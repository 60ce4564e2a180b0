"""A degradation curve's section of the report (curve.json, harness/walks/curve.py): each figure against the
database's size, measured points on one line, the 10x projection a marker of its own with its interval, and a
table where a projected row says projected in its own cell."""
from __future__ import annotations

import matplotlib.pyplot as plt

from harness.report import plots
from harness.report.blocks import Block, _f, plots_block
from harness.report.success.curve import Measured, Projected, curve_rows, draw, project

FIGURES = {"service_p50_ms": "per-block service time p50 (behind a block log: its apply)", "ack_p99_ms": "acknowledgement p99 (from the due time)",
           "queryable_p99_ms": "queryable p99 (from the due time)"}
# without a block log a block's service is its commit, and a committed row is queryable at once: queryable p99 is
# the acknowledgement's copy, not a figure of its own
UNLOGGED = {"service_p50_ms": "per-block service time p50 (its commit)", "ack_p99_ms": FIGURES["ack_p99_ms"]}


def figures(points: list) -> dict[str, str]:
    """The figures a curve's points carry, named for their layout (an applier's busy share says a block log)."""
    return FIGURES if any(p.busy is not None for p in points) else UNLOGGED


def measured(points: list, figure: str, under: str = "") -> list[Measured]:
    """A curve's points that measured `figure` (a cell that passed or failed; an oom or error has no figure)."""
    return [Measured(p.scale, p.size_gib, getattr(p, figure), f"{under}{p.cell}", p.sitting) for p in points
            if getattr(p, figure) is not None and p.status in ("passed", "failed")]


def basis(c) -> str:
    """How each point's MEM was set, in words (c: a CurveFile)."""
    if c.mem_1x:
        return f"MEM = scale x {c.mem_1x} (the reference data's ratio, whatever this layout's size)"
    return f"MEM = the state's size / {c.ratio:g}"


def curve_blocks(c) -> list[Block]:
    """c: a CurveFile (results/curve.py)."""
    doc = [Block("p", f"{c.engine}, {c.scenario} ({c.profile}): each scale's starting state built, {basis(c)} (one "
                      f"data-to-memory ratio at every point), the scenario's cell in full, never stopped early. Made by "
                      f"`{c.command}`."
                      + (f" Every point judged on {', '.join(c.criteria)} (an absolute rate of rows scaled to this "
                         f"block size)." if c.criteria else "")
                      + (f" Wall time {c.wall_s / 60:.1f} min." if c.wall_s else "")
                      + ("" if c.complete else " Not finished: run the same command again to resume it."))]
    if (said := harness_caveat(c.points)) is not None:
        doc.append(Block("caveat", said[0].upper() + said[1:] + "."))
    # a layout without a block log has no queryable p99 (the ack's copy) and no applier: no column for either
    logged = "queryable_p99_ms" in figures(c.points)
    rows = [[f"{p.scale:g}x", f"{p.size_gib:,.1f}", p.mem, p.status, _f(p.service_p50_ms, 0), _f(p.ack_p99_ms, 0),
             *([_f(p.queryable_p99_ms, 0)] if logged else []), _f(p.rows_per_s, 0),
             *(["-" if p.busy is None else f"{p.busy:.0%}"] if logged else []), f"measured {p.sitting}: {p.cell}"]
            for p in c.points]
    doc += [Block("h2", "Measured at each scale"),
            Block("table", headers=["scale", "state GiB", "MEM", "status", "service p50 ms", "ack p99 ms",
                                    *(["queryable p99 ms"] if logged else []), "rows/s",
                                    *(["applier busy"] if logged else []), "what it is"], rows=rows)]
    for name, what in figures(c.points).items():
        pts = measured(c.points, name)
        if not pts:
            continue
        proj = [_projected(q, pts) for q in c.projections if q.figure == name]
        doc += [Block("h3", f"{what} against the database's size"),
                Block("table", headers=["scale", "state GiB", what, "what it is"], rows=curve_rows(pts, proj, "ms"))]
        doc.append(plots_block(plots._svg(chart(pts, proj, what)), f"curve-{name}",
                               f"{what} per scale (solid: measured); the 10x point projected (hollow, grey, its 95% "
                               "prediction interval), never measured here."))
        doc += [Block("p", q.says) for q in c.projections if q.figure == name]
    return doc


def _projected(q, pts: list[Measured]) -> Projected:
    """A stored projection drawn again: the same points through the same fit give the same line and interval."""
    return project(pts, q.scale)


def chart(pts: list[Measured], proj: list[Projected], what: str):
    """One figure against the state's size: the report's SVG and the published PNG are this."""
    fig, ax = plt.subplots(figsize=(7, 3.6))
    draw(ax, pts, proj, what)
    ax.set_xlabel("starting state (GiB)")
    ax.set_ylabel("ms")
    ax.legend(loc="best", fontsize=8)
    return fig


def harness_caveat(points: list) -> str | None:
    """Where the harness's own share of MEM differs across the points (a fixed ~100 MiB inside a small MEM), the
    database got less than the ratio says at the small ones: said beside the curve, with the figures."""
    shares = [(p.scale, p.harness_share) for p in points if p.harness_share]
    if len(shares) < 2 or max(s for _, s in shares) < 2 * min(s for _, s in shares):
        return None
    (lo_at, lo), (hi_at, hi) = min(shares, key=lambda x: x[1]), max(shares, key=lambda x: x[1])
    return (f"the harness's own bytes inside MEM (the embedded engine's process) are {hi:.0%} of MEM at {hi_at:g}x "
            f"and {lo:.0%} at {lo_at:g}x: at the small scales the database got less of MEM than the ratio says, "
            "so their figures are pessimistic and a slope falling with size is partly that")
