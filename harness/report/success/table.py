"""The reference's own closing table (000, "The experiments succeed if we can answer"), five questions, answered for
two systems side by side: SQLite as the reference deploys it, and the verdict's answer. Every figure names the
command that made it and the sitting it was made in; a figure without them is refused, not printed: a reader who
forwards the table must be able to run it again. A projected figure (the 10x point of the degradation curve) says
so in its own cell, never as a measurement."""
from __future__ import annotations

import re
from typing import Literal, Optional

from pydantic import field_validator

from harness.results.base import Model

VERSION = 1
Question = Literal["max_writes", "max_reads", "combined", "degradation", "v1"]
System = Literal["reference", "answer"]

# The reference's words for each question and what it asks to see (000, its last table).
QUESTIONS: dict[str, tuple[str, str]] = {
    "max_writes": ("Max writes", "rows/s, latency p99"),
    "max_reads": ("Max reads", "QPS, latency p99"),
    "combined": ("Combined sweet spot", "X writes/s + Y reads/s"),
    "degradation": ("Degradation curve", "performance vs DB size"),
    "v1": ("V1 feasibility", "go/no-go: 621K entities, 10K-50K writes/s, 1K-10K reads/s"),
}
SYSTEMS: dict[str, str] = {"reference": "SQLite as the reference deploys it", "answer": "the verdict's answer"}
_SITTING = re.compile(r"^\d{4}-\d{2}-\d{2}$")


class Figure(Model):
    """One system's answer to one question, at one scale and MEM, from one run."""
    question: Question
    system: System
    says: str                       # the figure in words, its p99 beside it: "9,800 rows/s, p99 4.1 ms"
    scale: float
    mem: str                        # what the database got: "8g", "6420m"
    command: str                    # the command that made it, as a user types it
    sitting: str                    # the day it was measured (YYYY-MM-DD)
    run: str                        # the run's folder or file, relative to the published folder
    host: Optional[str] = None      # CPU model, disk, runtime: the figure's host
    projected: bool = False         # a fit's prediction, not a measurement (the degradation curve's 10x)
    details: list[str] = []         # per-step lines, each with its link, printed below the table (the cell stays short)

    @field_validator("says", "command", "run", "mem")
    @classmethod
    def _given(cls, v: str, info) -> str:
        if not v.strip():
            raise ValueError(f"{info.field_name} is empty: every figure names its {info.field_name}")
        return v

    @field_validator("sitting")
    @classmethod
    def _a_day(cls, v: str) -> str:
        if not _SITTING.match(v):
            raise ValueError(f"sitting {v!r} is not a day (YYYY-MM-DD): every figure names the sitting it came from")
        return v

    def cell(self) -> str:
        """The figure as the table's cell: what, where, and the link to its run."""
        what = f"projected: {self.says}" if self.projected else self.says
        return f"{what} ({self.scale:g}x, MEM {self.mem}; [{self.sitting}]({self.run}))"


class SuccessTable(Model):
    """The five questions' figures; one per question and system at most (a scale's figure goes in `says`)."""
    version: int = VERSION
    figures: list[Figure] = []

    @field_validator("figures")
    @classmethod
    def _one_each(cls, figures: list[Figure]) -> list[Figure]:
        seen: set[tuple[str, str]] = set()
        for f in figures:
            if (f.question, f.system) in seen:
                raise ValueError(f"two figures for {f.question} of {f.system}: one each, its scales in its words")
            seen.add((f.question, f.system))
        return figures

    def of(self, question: str, system: str) -> Figure | None:
        return next((f for f in self.figures if f.question == question and f.system == system), None)

    def rows(self) -> list[list[str]]:
        """The reference's table, one row per question: what it asks, then each system's figure."""
        return [[f"{QUESTIONS[q][0]}? ({QUESTIONS[q][1]})",
                 *((f.cell() if (f := self.of(q, s)) else "not measured yet") for s in SYSTEMS)]
                for q in QUESTIONS]

    def markdown(self) -> str:
        head = ["question", *SYSTEMS.values()]
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(r) + " |" for r in self.rows()]
        return "\n".join(lines) + "\n"
