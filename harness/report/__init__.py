"""`make report RUN=<dir>`: report.md and a self-contained report.html for a run, a sweep or a verdict.
The report is built once as a list of blocks (headings, paragraphs, tables, plots) and rendered twice."""
from __future__ import annotations

from pathlib import Path

from harness.report.collect import collect
from harness.report import nodes
from harness.report.blocks import Block
from harness.report.content import build
from harness.report.render import to_html, to_markdown


def write_report(path: Path, mixed_nodes: bool = False) -> tuple[Path, Path]:
    """Raises ConfigError where the cells ran on unlike nodes, unless mixed_nodes (report/nodes.py)."""
    data = collect(path)
    said = [s for s in (nodes.check(data.cells, mixed_nodes), nodes.drift(data.cells)) if s]
    doc = build(data)
    for s in reversed(said):
        doc.insert(1, Block("caveat", s))
    plots_dir = data.dir / "plots"
    plots_dir.mkdir(exist_ok=True)
    md, html = data.dir / "report.md", data.dir / "report.html"
    md.write_text(to_markdown(doc, plots_dir))
    html.write_text(to_html(doc))
    return md, html
