"""The report's building blocks: what content.py and the sections beside it produce, and render.py draws."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Block:
    kind: str                   # h1 h2 h3 p verdict caveat alarm list table plot
    text: str = ""
    headers: list = field(default_factory=list)
    rows: list = field(default_factory=list)
    items: list = field(default_factory=list)
    name: str = ""              # plot file name
    svg: str = ""


def _f(v, digits: int = 1) -> str:
    return "-" if v is None else f"{v:,.{digits}f}"


def plots_block(svg: str, name: str, caption: str) -> Block:
    return Block("plot", text=caption, name=name, svg=svg)
