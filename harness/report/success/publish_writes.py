"""A finished `make writes` made readable without the code (`make publish RUN=results/writes-...`): writes.json, each
point's knee (knee.json, its report.md, every step's result.json gzipped) under knees/<scale>x-<MEM>-<day>-<boot>/,
and a README that opens on the reference's write table: per scale and MEM the most rows per block that held, as
rows/s, its p99, and the line the nearest failing step above it missed. Points are measured one or two a sitting: a
folder that already holds points of the same writes (engine, scenario, profile, settings) keeps them, another
sitting's point beside the new one at the same scale and MEM, each with the command, sitting and host that made it
(point_key); another configuration's folder is refused."""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from harness.report.publish import copy_report, finished_walk, require_report, scrubber, write_cells
from harness.report.publish_bias import published_biases, store_note
from harness.report.success.merge import commands_said, cpu_of, hosts_says, sitting_of, store_says
from harness.report.success.merge import merged as merge
from harness.units import parse_size_bytes

WRITES_FILE = "writes.json"


def publish_writes(run: Path, dest_root: Path, name: str | None) -> Path:
    w = finished(run)
    dest = dest_root / (name or f"{w['started_utc'][:10]}-writes-{w['engine']}")
    dest.mkdir(parents=True, exist_ok=True)
    scrub = scrubber(run)
    here = dest / WRITES_FILE
    new = json.loads(scrub((run / WRITES_FILE).read_text()))
    for row in new["rows"]:
        row["published_as"] = sitting_name(row)
    merged = merge(json.loads(here.read_text()) if here.is_file() else None, new, here, SAME_WRITES, point_key)
    for row in new["rows"]:
        knee, to = run.parent / row["knee"], dest / "knees" / point_name(row)
        require_report(knee)
        to.mkdir(parents=True, exist_ok=True)
        copy_report(knee, to)
        (to / "knee.json").write_text(scrub((knee / "knee.json").read_text()))
        steps = json.loads((knee / "knee.json").read_text())["steps"]
        write_cells(knee, to, [SimpleNamespace(scenario=a, dir=b) for a, _, b in
                               (s["cell"].partition("/") for s in steps)], scrub, under="steps")
    here.write_text(json.dumps(merged, indent=1) + "\n")
    (dest / "README.md").write_text(readme(merged, published_biases(dest)))
    return dest


SAME_WRITES = ("engine", "scenario", "profile", "overrides")     # what makes two runs' points one table


def point_key(row: dict) -> tuple:
    """A point and its sitting: a knee moves with the host (1x held 849 rows a block on one AMD sitting and 1,854
    on another, 12-07), so another sitting's knee joins the table beside it, and says how far apart they are;
    the same sitting's, measured again, replaces it."""
    return row["scale"], parse_size_bytes(row["mem"]), row["sitting"], sitting_of(row)     # the days in order


def finished(run: Path) -> dict:
    return finished_walk(run, WRITES_FILE, "writes")


def point_name(row: dict) -> str:
    """The folder a point's knee is published in (rows published before sittings were kept apart: scale and MEM)."""
    return row.get("published_as") or point_said(row)


def point_said(row: dict) -> str:
    return f"{row['scale']:g}x-{row['mem']}"


def sitting_name(row: dict) -> str:
    boot = f"-{row['boot_id'][:8]}" if row.get("boot_id") else ""
    return f"{point_said(row)}-{row['sitting']}{boot}"


def held_says(row: dict) -> str:
    """The knee as the table prints it: rows/s and rows per block, a floor where the search's top passed."""
    if row["knee_rows_per_block"] is None:
        return f"none (not even {row['floor_rows_per_block']:,.0f} rows a block held)"
    floor = "" if row["reached"] else "≥ "
    return f"{floor}{row['rows_per_s']:,.0f} rows/s ({floor}{row['knee_rows_per_block']:,.0f} a block)"


def readme(w: dict, biases: list[dict]) -> str:
    lines = [f"# Max writes: {w['engine']}, {w['scenario']} (`{w['profile']}`), rows per block searched", "",
             *commands_said(w["rows"], lambda r: f"{point_said(r)} on {r['sitting']}, {cpu_of(r)}"),
             f"- Measured {w['started_utc']} to {w.get('finished_utc', '?')}",
             f"- Host: {hosts_says(w['rows']) or 'unknown'}",
             f"- Settings beside the scenario's: {', '.join(f'`{o}`' for o in w['overrides']) or 'none'}", "",
             "| scale | MEM | most writes that held | p99 ms | bounded by | steps | minutes | knee |",
             "|---|---|---|---|---|---|---|---|"]
    for row in w["rows"]:
        p99 = "-" if row["p99_ms"] is None else f"{row['p99_ms']:,.0f}"
        bound = (f"{row['bounded_at_rows_per_block']:,.0f} a block: {'; '.join(row['bounded_by'])}"
                 if row["reached"] else "not reached")
        minutes = "-" if row["wall_s"] is None else f"{row['wall_s'] / 60:,.0f}"
        lines.append(f"| {row['scale']:g}x | {row['mem']} | {held_says(row)} | {p99} | {bound} | {row['steps']} | "
                     f"{minutes} | [{point_name(row)}](knees/{point_name(row)}/report.md){store_says(row)}"
                     f"{store_note(row, biases)} |")
    lines += ["", "≥: the search's top passed; the knee lies above it. Each step is a cell from the same starting "
              "state, stopped early where a line can no longer pass; the knee is confirmed by a cell with every row "
              "checked."]
    return "\n".join(lines) + "\n"
