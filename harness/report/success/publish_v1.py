"""A finished `make v1` made readable without the code (`make publish RUN=results/v1-...`): v1.json, its report.md,
each write rate's read ceiling published under searches/<rows/s>/, and a README that opens on the go/no-go and the
write x checked-read frontier, point by point, with the machine it was measured on."""
from __future__ import annotations

from pathlib import Path

from harness.report.publish import copy_report, finished_walk, require_report, scrubber
from harness.report.publish_ceiling import publish_ceiling

V1_FILE = "v1.json"


def publish_v1(run: Path, dest_root: Path, name: str | None) -> Path:
    v = finished(run)
    dest = dest_root / (name or f"{v['started_utc'][:10]}-v1-{v['engine']}")
    dest.mkdir(parents=True, exist_ok=True)
    (dest / V1_FILE).write_text(scrubber(run)((run / V1_FILE).read_text()))
    copy_report(run, dest)
    links = [publish_ceiling(run / p["search"], dest / "searches", f"{p['write_rows_per_s']:.0f}-rows-per-s")
             .relative_to(dest) for p in v["frontier"]]
    (dest / "README.md").write_text(readme(v, links))
    return dest


def finished(run: Path) -> dict:
    v = finished_walk(run, V1_FILE, "v1")
    require_report(run)
    return v


def reads_says(p: dict) -> str:
    if p["read_qps"] is None:
        return "none"
    return f"{'≥ ' if p.get('reached') is False else ''}{p['read_qps']:,.0f}"


def readme(v: dict, links: list[Path]) -> str:
    need = v["go_needs"]
    lines = [f"# V1 feasibility: {v['engine']}, the Data Center at {v['entities']:,} entities (`{v['profile']}`)", "",
             f"- Command: `{v.get('command') or '?'}`; {v['started_utc']} to {v.get('finished_utc', '?')}",
             f"- Measured on: {v.get('measured_on') or 'unknown'}; MEM {v.get('mem') or 'none'}",
             f"- Go needs {need['write_rows_per_s']:,.0f} rows/s written beside {need['read_qps']:,.0f} checked "
             f"reads/s; every step's criteria: {', '.join(f'`{c}`' for c in v['criteria'])}", "",
             f"**{v['sentence']}**", "",
             "| rows/s offered | rows/s written | reads/s held | read p99 ms | write p99 ms | answers checked | "
             "bounded by | search |", "|---|---|---|---|---|---|---|---|"]
    for p, link in zip(v["frontier"], links):
        fig = (lambda x, f=",.0f": "-" if x is None else format(x, f))
        answers = f"{p['answers_checked'] - p['answers_wrong']:,}/{p['answers_checked']:,} right"
        lines.append(f"| {p['write_rows_per_s']:,.0f} | {fig(p['write_rows_per_s_achieved'])} | {reads_says(p)} | "
                     f"{fig(p['read_p99_ms'], ',.1f')} | {fig(p['write_p99_ms'])} | {answers} | "
                     f"{'; '.join(p['bounded_by']) or '-'} | [{link.name}]({link}/README.md) |")
    return "\n".join(lines) + "\n"
