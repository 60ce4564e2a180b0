"""A finished `make reads` made readable without the code (`make publish RUN=results/reads-...`): reads.json, each
search published as a read ceiling of its own under searches/<mix>-<connections>c/ (its steps, every step's result
gzipped, its README), and a README that opens on the reference's read table: per mix and connections the highest
offered rate holding p99 < 100 ms and 95% of it, its p99, what bounded it and whether its answers were checked."""
from __future__ import annotations

from pathlib import Path

from harness.report.publish import finished_walk, scrubber
from harness.report.publish_ceiling import publish_ceiling
from harness.results.headroom import Host

READS_FILE = "reads.json"


def publish_reads(run: Path, dest_root: Path, name: str | None) -> Path:
    r = finished(run)
    dest = dest_root / (name or f"{r['started_utc'][:10]}-reads-{r['engine']}")
    dest.mkdir(parents=True, exist_ok=True)
    (dest / READS_FILE).write_text(scrubber(run)((run / READS_FILE).read_text()))
    links = [publish_ceiling(run.parent / row["search"], dest / "searches", search_name(row)).relative_to(dest)
             for row in r["rows"]]
    (dest / "README.md").write_text(readme(r, links))
    return dest


def finished(run: Path) -> dict:
    return finished_walk(run, READS_FILE, "reads")


def search_name(row: dict) -> str:
    return f"mix-{row['mix']}-{row['connections']}c"


def knee_says(row: dict) -> str:
    """The knee as the table prints it: a floor where every rate up to the search's top passed."""
    if row["knee_read_qps"] is None:
        return "none (not even the lowest rate held)"
    return f"{'≥ ' if row['reached'] is False else ''}{row['knee_read_qps']:,.0f}"


def readme(r: dict, links: list[Path]) -> str:
    p = next(iter(r["protocol"].values()))
    hosts = sorted({Host(**row["host"]).says() for row in r["rows"] if row.get("host")})
    lines = [f"# Reads alone: the reference's read benchmark on {r['engine']} (`{r['profile']}`)", "",
             f"- Command: `{r.get('command') or '?'}`; {r['started_utc']} to {r.get('finished_utc', '?')}",
             f"- Host: {'; '.join(hosts) or 'unknown'}",
             f"- Scale {p['scale']:g}, MEM {r.get('mem') or 'none'}; each step {p['warmup_queries']:,} queries of "
             f"warm-up, {p['measure_queries']:,} measured at the offered rate, {p['cooldown_s']:g} s cool-down; "
             f"rates {', '.join(f'{q:,.0f}' for q in p['steps_qps'])} QPS, then doubled up to "
             f"{p['max_qps']:,.0f} and bisected",
             f"- A step passes on: {', '.join(f'`{t}`' for t in p['criteria'])}", "",
             "| mix | connections | highest QPS held | achieved QPS | read p99 ms | bounded by | answers | search |",
             "|---|---|---|---|---|---|---|---|"]
    for row, link in zip(r["rows"], links):
        p99 = "-" if row["read_p99_ms"] is None else f"{row['read_p99_ms']:,.1f}"
        achieved = "-" if row["achieved_qps"] is None else f"{row['achieved_qps']:,.0f}"
        bound = "; ".join(row["bounded_by"]) or ("not reached" if row["reached"] is False else "-")
        lines.append(f"| {row['mix']} | {row['connections']} | {knee_says(row)} | {achieved} | {p99} | {bound} | "
                     f"{row['answers']} | [{link.name}]({link}/README.md) |")
    lines += ["", "≥: every offered rate up to the search's top passed; the knee lies above it. \"not checkable\": "
              "the mix's kinds have no model answer (only the Data Center's kinds have: scenarios/read_mix_dc.yaml, "
              "read_mix_sched.yaml); \"none measured\": the step read nothing it could check (OOM-killed, an error)."]
    return "\n".join(lines) + "\n"
