"""The max-writes knee against the database's size: the degradation curve's knee column (issue 85), from the
max-writes points each system has published (max_writes-<system>/writes.json). A point's size is its knee's
smallest database over its steps (every step starts from the same state and writes a few minutes of blocks into
it). The line joins the points at one data-to-memory ratio, MEM = scale x one MEM at 1x (the reference's 8 GB at
5x over 1x's 1284m); a point at another ratio (a literal 8g at 5x) is listed beside it, never on it. With three
points or more on the line, 10x is projected through them as the curve's figures are (success/curve.py), said
projected; with fewer, none is."""
from __future__ import annotations

import json
from pathlib import Path

import matplotlib.pyplot as plt

from harness.report.success.curve import MIN_POINTS, Measured, Projected, draw, project
from harness.report.success.merge import host_short, sitting_of, store_says
from harness.report.success.publish_writes import WRITES_FILE, point_name
from harness.report.success.table import SYSTEMS
from harness.units import parse_size_bytes

PNG = "max_writes_by_size.png"
PROJECTED_SCALE = 10.0


def _size_gib(d: Path, row: dict) -> float | None:
    """The point's database size from its published knee's steps (None where none recorded one)."""
    knee = d / "knees" / point_name(row) / "knee.json"
    sizes = [s["db_bytes"] for s in json.loads(knee.read_text())["steps"] if s.get("db_bytes")] \
        if knee.is_file() else []
    return min(sizes) / 2**30 if sizes else None


def _by_sitting(on: list[tuple[Measured, dict]]) -> dict[str, list[tuple[Measured, dict]]]:
    """The points of each sitting, smallest database first: a line never joins two sittings (the host, its disk
    among it, can change between them, and a knee moves with it), nor the disk's points and the store's."""
    out: dict[str, list[tuple[Measured, dict]]] = {}
    for p, r in sorted(on, key=lambda x: (x[0].sitting, x[0].size_gib)):
        out.setdefault(sitting_of(r) + store_says(r), []).append((p, r))
    return out


def _mib_per_scale(row: dict) -> int:
    return round(parse_size_bytes(row["mem"]) / row["scale"] / 2**20)


def points(d: Path) -> tuple[list[tuple[Measured, dict]], list[dict]]:
    """(the points on the line with their rows, the rows at another ratio or with no size), from a
    max_writes-<system> folder."""
    rows = [r for r in json.loads((d / WRITES_FILE).read_text())["rows"] if r.get("rows_per_s") is not None]
    ratios = [_mib_per_scale(r) for r in rows]
    # the ratio most points share; on a tie, the smallest scale's (the 1x MEM the others are multiples of)
    line = max(dict.fromkeys(ratios), key=lambda m: ratios.count(m), default=None)
    on, apart = [], []
    for r, ratio in zip(rows, ratios):
        size = _size_gib(d, r)
        if ratio == line and size:
            on.append((Measured(r["scale"], size, r["rows_per_s"], f"{d.name}/knees/{point_name(r)}", r["sitting"]),
                       r))
        else:
            apart.append(r)
    return on, apart


def section(folder: Path) -> list[str]:
    """The README's lines (and the PNG beside it): per system the points, the projection where three points
    allow one, and the points at another ratio; nothing where no system has published max writes."""
    found = {s: points(folder / f"max_writes-{s}") for s in SYSTEMS
             if (folder / f"max_writes-{s}" / WRITES_FILE).is_file()}
    if not any(on for on, _ in found.values()):
        return []
    lines = ["", "## Max writes against the database's size", "",
             "The degradation curve's knee column: each system's most rows/s that held every line of its scenario, "
             "against the database's size, at one data-to-memory ratio (MEM = scale x its 1x MEM). A line joins one "
             "sitting's points (the host can change between sittings, on one day too). Solid: measured; a projected point is hollow and grey, "
             f"never measured here (one needs {MIN_POINTS} points of one sitting).", "",
             "| system | scale | state GiB | MEM | most rows/s that held | what it is |", "|---|---|---|---|---|---|"]
    fig, ax = plt.subplots(figsize=(7, 3.6))
    for system, (on, apart) in found.items():
        for mine in _by_sitting(on).values():
            measured = [p for p, _ in mine]
            proj = [project(measured, PROJECTED_SCALE)] if len(mine) >= MIN_POINTS else []
            lines += [f"| {SYSTEMS[system]} | {p.scale:g}x | {p.size_gib:,.1f} | {r['mem']} | {p.value:,.0f} | "
                      f"measured {p.sitting}{store_says(r)}: [{point_name(r)}]({p.run}/report.md) |" for p, r in mine]
            lines += [_projected_row(SYSTEMS[system], q) for q in proj]
            # a figure moves with its host and its sitting: a line joins one sitting's points, its legend names them
            (first, row) = mine[0]
            draw(ax, measured, proj, f"{SYSTEMS[system]}, {first.sitting}{store_says(row)} ({host_short(row)})")
        lines += [f"| {SYSTEMS[system]} | {r['scale']:g}x | - | {r['mem']} | {r['rows_per_s']:,.0f} | measured "
                  f"{r['sitting']} at another ratio: not on the line |" for r in apart]
    values = [p.value for on, _ in found.values() for p, _ in on]
    if max(values) > 10 * min(values):      # the systems an order of magnitude apart: each line readable
        ax.set_yscale("log")
    ax.set_xlabel("database (GiB)")
    ax.set_ylabel("most rows/s that held")
    # below the axes: one entry a sitting, and five of them covered the points and the y label (12-07)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.18), fontsize=8)
    fig.savefig(folder / PNG, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return lines + ["", f"![max writes against the database's size]({PNG})"]


def _projected_row(system: str, q: Projected) -> str:
    return (f"| {system} | {q.scale:g}x | {q.size_gib:,.1f} | - | projected {q.value:,.0f} | projected, not measured: "
            f"95% interval {q.lo:,.0f}-{q.hi:,.0f}, {q.fit.model} model |")
