"""`make report RUN=<dir>`: report.md and a self-contained report.html for a run, a sweep or a verdict.
The report is built once as a list of blocks (headings, paragraphs, tables, plots) and rendered twice."""
from __future__ import annotations

from pathlib import Path

from harness.report.collect import collect
from harness.report.content import build
from harness.report.render import to_html, to_markdown


def write_report(path: Path) -> tuple[Path, Path]:
    data = collect(path)
    doc = build(data)
    plots_dir = data.dir / "plots"
    plots_dir.mkdir(exist_ok=True)
    md, html = data.dir / "report.md", data.dir / "report.html"
    md.write_text(to_markdown(doc, plots_dir))
    html.write_text(to_html(doc))
    return md, html
