"""A published degradation curve's earlier sittings. A curve is one sitting's: its sizes measured one after another
on one machine. A later sitting's curve published into the same folder keeps the earlier one beside it, under
sittings/<day>-<boot or host>/, because the spread between sittings says how far a curve holds: the host can
change between sittings, on one day too (12-07: the 1x knee moved 2.6x between two). The same sitting's curve
published again replaces its own."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

from harness.results import load_curve
from harness.results.curve import CurveFile

CURVE_FILE = "curve.json"
SITTINGS = "sittings"


def sitting_id(c: CurveFile) -> str:
    """Its first point's day, and the machine's boot where the points kept it, else its host (a curve published
    before points kept the boot: two such curves of one day and one host are taken for one sitting)."""
    day = min((p.sitting for p in c.points), default=c.updated_utc[:10])
    boot = next((p.boot_id for p in c.points if p.boot_id), None)
    if boot:
        return f"{day}-{boot[:8]}"
    host = next((p.host for p in c.points if p.host), None)
    said = f"{host.cpu_model or 'cpu'} {host.kernel or ''}" if host else "host"
    return f"{day}-{re.sub(r'[^A-Za-z0-9.]+', '-', said).strip('-').lower()}"


def make_room(dest: Path, new: CurveFile) -> None:
    """Before `new` is published into dest: the curve there moved under sittings/ when it is another sitting's,
    removed when it is this one's (measured again, or more sizes of it), so no stale point stays beside it."""
    old = load_curve(dest / CURVE_FILE) if (dest / CURVE_FILE).is_file() else None
    if old is None:
        return
    keep = sitting_id(old) != sitting_id(new)
    target = dest / SITTINGS / sitting_id(old)
    if keep:
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
    for p in dest.iterdir():
        if p.name == SITTINGS:
            continue
        if keep:
            shutil.move(str(p), str(target / p.name))
        elif p.is_dir():
            shutil.rmtree(p)
        else:
            p.unlink()


def earlier(dest: Path) -> list[tuple[str, CurveFile]]:
    """The earlier sittings' curves kept in dest, oldest first."""
    found = [(d.name, load_curve(d / CURVE_FILE)) for d in sorted((dest / SITTINGS).glob("*"))
             if (d / CURVE_FILE).is_file()]
    return sorted([(name, c) for name, c in found if c is not None], key=lambda nc: nc[1].updated_utc)


def range_says(c: CurveFile) -> str | None:
    """Its per-block service time from the smallest measured size to the largest, at the offered rate: the
    degradation row's figure."""
    pts = [p for p in c.points if p.status in ("passed", "failed") and p.service_p50_ms is not None]
    if not pts:
        return None
    lo, hi = min(pts, key=lambda p: p.size_gib), max(pts, key=lambda p: p.size_gib)
    what = "apply p50" if hi.busy is not None else "service p50"       # behind a block log, its applier's block
    load = f" at {hi.rows_per_s:,.0f} rows/s" if hi.rows_per_s is not None else ""
    return (f"{what} {lo.service_p50_ms:,.0f} ms at {lo.size_gib:,.1f} GiB → {hi.service_p50_ms:,.0f} ms at "
            f"{hi.size_gib:,.1f} GiB{load}")


def section(current: CurveFile, kept: list[tuple[str, CurveFile]]) -> list[str]:
    """The README's table of every sitting's points, this one first: where two sittings measured one size, the
    difference between them is the spread a figure must beat to count the next day."""
    if not kept:
        return []
    lines = ["", "## Each sitting", "", "A line per size and sitting; the spread between sittings at one size is "
             "what a figure must beat to hold the next day.", "",
             "| sitting | host | scale | state GiB | MEM | service p50 ms | ack p99 ms | rows/s |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    every = [(f"{sitting_id(current)} (this one)", current),
             *((f"[{name}]({SITTINGS}/{name}/README.md)", c) for name, c in kept)]
    for said, c in every:
        for p in sorted(c.points, key=lambda p: p.size_gib):
            host = f"{p.host.cpu_model or '?'}, fsync p50 {n(p.host.fsync_p50_us)} µs" if p.host else "-"
            lines.append(f"| {said} | {host} | {p.scale:g}x | {p.size_gib:,.2f} | {p.mem} | {n(p.service_p50_ms)} | "
                         f"{n(p.ack_p99_ms)} | {n(p.rows_per_s)} |")
    return lines


def n(v: float | None) -> str:
    return "-" if v is None else f"{v:,.0f}"
