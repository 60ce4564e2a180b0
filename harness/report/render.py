"""Render the report's blocks as Markdown (plots saved as SVG files beside it) and as one HTML file with the
plots inline: no script, no stylesheet or font to fetch, so it views offline and forwards as one file."""
from __future__ import annotations

import html
from pathlib import Path

from harness.report.blocks import Block

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
h1{font-size:1.6em}h2{margin-top:2em;border-bottom:1px solid #ddd}h3{margin-top:1.5em}
table{border-collapse:collapse;margin:.8em 0;font-size:12.5px}th,td{border:1px solid #ccc;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#f4f4f4}td.num{text-align:right;font-variant-numeric:tabular-nums}
.caveat{background:#fff4d6;border-left:4px solid #e0a800;padding:.6em 1em}
.alarm{background:#fde8e8;border-left:4px solid #c62828;padding:.6em 1em}
.verdict{font-size:1.25em;font-weight:600}
figure{margin:1em 0}figure svg{max-width:100%;height:auto}figcaption{color:#555;font-size:12px}
code{background:#f4f4f4;padding:0 3px}
"""


def to_markdown(doc: list[Block], plots_dir: Path) -> str:
    out: list[str] = []
    for b in doc:
        if b.kind == "h1":
            out.append(f"# {b.text}\n")
        elif b.kind == "h2":
            out.append(f"## {b.text}\n")
        elif b.kind == "h3":
            out.append(f"### {b.text}\n")
        elif b.kind in ("p", "verdict"):
            out.append(f"{'**' if b.kind == 'verdict' else ''}{b.text}{'**' if b.kind == 'verdict' else ''}\n")
        elif b.kind in ("caveat", "alarm"):
            out.append(f"> **{'Caveat' if b.kind == 'caveat' else 'Warning'}:** {b.text}\n")
        elif b.kind == "list":
            out.append("\n".join(f"- {item}" for item in b.items) + "\n")
        elif b.kind == "table":
            cell = lambda v: str(v).replace("|", "\\|").replace("\n", " ")  # noqa: E731
            out.append("| " + " | ".join(map(cell, b.headers)) + " |")
            out.append("|" + "---|" * len(b.headers))
            out.extend("| " + " | ".join(map(cell, r)) + " |" for r in b.rows)
            out.append("")
        elif b.kind == "plot":
            (plots_dir / f"{b.name}.svg").write_text(b.svg)
            out.append(f"![{b.text}](plots/{b.name}.svg)\n")
    return "\n".join(out) + "\n"


def to_html(doc: list[Block]) -> str:
    e = html.escape
    title = next((b.text for b in doc if b.kind == "h1"), "arkbench report")
    body: list[str] = []
    for b in doc:
        if b.kind in ("h1", "h2", "h3"):
            body.append(f"<{b.kind}>{e(b.text)}</{b.kind}>")
        elif b.kind == "p":
            body.append(f"<p>{e(b.text)}</p>")
        elif b.kind == "verdict":
            body.append(f'<p class="verdict">{e(b.text)}</p>')
        elif b.kind in ("caveat", "alarm"):
            body.append(f'<p class="{b.kind}"><b>{"Caveat" if b.kind == "caveat" else "Warning"}:</b> {e(b.text)}</p>')
        elif b.kind == "list":
            body.append("<ul>" + "".join(f"<li>{e(str(i))}</li>" for i in b.items) + "</ul>")
        elif b.kind == "table":
            head = "".join(f"<th>{e(str(h))}</th>" for h in b.headers)
            rows = "".join("<tr>" + "".join(_td(v) for v in r) + "</tr>" for r in b.rows)
            body.append(f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>")
        elif b.kind == "plot":
            body.append(f'<figure class="plot" id="{e(b.name)}">{b.svg}<figcaption>{e(b.text)}</figcaption></figure>')
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width,initial-scale=1"><title>{e(title)}</title>'
            f"<style>{_CSS}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")


def _td(v) -> str:
    text = html.escape(str(v))
    return f'<td class="num">{text}</td>' if isinstance(v, (int, float)) else f"<td>{text}</td>"
