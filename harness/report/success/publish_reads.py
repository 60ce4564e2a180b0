"""A finished `make reads` made readable without the code (`make publish RUN=results/reads-...`): reads.json, each
search published as a read ceiling of its own under searches/<mix>-<connections>c/ (its steps, every step's result
gzipped, its README), and a README that opens on the reference's read table: per mix and connections the highest
offered rate holding p99 < 100 ms and 95% of it, its p99, what bounded it and whether its answers were checked.
A later sitting's searches (another mix, another scale) published into the same folder join the earlier ones
(success/merge.py): each row keeps its command, MEM and protocol."""
from __future__ import annotations

import json
from pathlib import Path

from harness.report.publish import finished_walk, scrubber
from harness.report.publish_ceiling import publish_ceiling
from harness.report.success.merge import commands_said, cpu_of, hosts_says
from harness.report.success.merge import merged as merge

READS_FILE = "reads.json"


def publish_reads(run: Path, dest_root: Path, name: str | None) -> Path:
    r = finished(run)
    dest = dest_root / (name or f"{r['started_utc'][:10]}-reads-{r['engine']}")
    dest.mkdir(parents=True, exist_ok=True)
    here = dest / READS_FILE
    merged = merge(with_protocols(json.loads(here.read_text())) if here.is_file() else None,
                   with_protocols(json.loads(scrubber(run)((run / READS_FILE).read_text()))), here, SAME_READS,
                   search_key, stamp=("command", "mem", "profile"))
    for row in r["rows"]:
        publish_ceiling(run.parent / row["search"], dest / "searches", search_name({**row, "profile": r["profile"]}))
    here.write_text(json.dumps(merged, indent=1) + "\n")
    (dest / "README.md").write_text(readme(merged))
    return dest


SAME_READS = ("engine", "overrides")     # a profile (the size) is a row's: 1x and 5x share a table


def with_protocols(r: dict) -> dict:
    """Each row with its mix's protocol (the scale among it), which rows of other sittings keep apart."""
    return {**r, "rows": [{**row, "protocol": row.get("protocol") or r["protocol"][row["mix"]]} for row in r["rows"]]}


SIZES = ("smoke", "quick", "ratio", "full")      # the profiles by the size they load, smallest first


def search_key(row: dict) -> tuple:
    """A row's profile sets its size (a DC mix's scale is 0: its data centres are the profile's)."""
    p = row["profile"]
    return (SIZES.index(p) if p in SIZES else len(SIZES), p), row["mix"], row["connections"]


def finished(run: Path) -> dict:
    return finished_walk(run, READS_FILE, "reads")


def search_name(row: dict) -> str:
    """mix-a-10c at the ratio profile (1x; the first published named no profile), mix-a-10c-full at another."""
    profile = row.get("profile") or "ratio"
    return f"mix-{row['mix']}-{row['connections']}c" + ("" if profile == "ratio" else f"-{profile}")


def size_says(row: dict) -> str:
    """1x for a mendoza mix's scale; the profile for a DC mix, whose size is its data centres."""
    return f"{row['scale']:g}x" if row["scale"] else f"`{row.get('profile') or '?'}`"


def knee_says(row: dict) -> str:
    """The knee as the table prints it: a floor where every rate up to the search's top passed."""
    if row["knee_read_qps"] is None:
        return "none (not even the lowest rate held)"
    return f"{'≥ ' if row['reached'] is False else ''}{row['knee_read_qps']:,.0f}"


def _protocol_says(p: dict) -> str:
    return (f"{p['warmup_queries']:,} queries of warm-up, {p['measure_queries']:,} measured at the offered rate, "
            f"{p['cooldown_s']:g} s cool-down; rates {', '.join(f'{q:,.0f}' for q in p['steps_qps'])} QPS, then "
            f"doubled up to {p['max_qps']:,.0f} and bisected; a step passes on: "
            + ", ".join(f"`{t}`" for t in p["criteria"]))


def readme(r: dict) -> str:
    protocols = dict.fromkeys(_protocol_says(row["protocol"]) for row in r["rows"])
    lines = [f"# Reads alone: the reference's read benchmark on {r['engine']}", "",
             *commands_said(r["rows"], lambda row: f"{search_name(row)} at {size_says(row)} on {row['sitting']}, "
                            f"{cpu_of(row)}"),
             f"- Measured {r['started_utc']} to {r.get('finished_utc', '?')}",
             f"- Host: {hosts_says(r['rows']) or 'unknown'}",
             f"- Settings beside the scenario's: {', '.join(f'`{o}`' for o in r['overrides']) or 'none'}",
             *[f"- Each step: {p}" for p in protocols], "",
             "| mix | size | MEM | connections | highest QPS held | achieved QPS | read p99 ms | bounded by | answers "
             "| search |", "|---|---|---|---|---|---|---|---|---|---|"]
    for row in r["rows"]:
        p99 = "-" if row["read_p99_ms"] is None else f"{row['read_p99_ms']:,.1f}"
        achieved = "-" if row["achieved_qps"] is None else f"{row['achieved_qps']:,.0f}"
        bound = "; ".join(row["bounded_by"]) or ("not reached" if row["reached"] is False else "-")
        link = f"searches/{search_name(row)}"
        lines.append(f"| {row['mix']} | {size_says(row)} | {row.get('mem') or 'none'} | {row['connections']} | "
                     f"{knee_says(row)} | {achieved} | {p99} | {bound} | {row['answers']} | [{search_name(row)}]"
                     f"({link}/README.md) |")
    lines += ["", "≥: every offered rate up to the search's top passed; the knee lies above it. \"not checkable\": "
              "the mix's kinds have no model answer (only the Data Center's kinds have: scenarios/read_mix_dc.yaml, "
              "read_mix_sched.yaml); \"none measured\": the step read nothing it could check (OOM-killed, an error)."]
    return "\n".join(lines) + "\n"
