"""KNEES=1: after the walk, how far each failing engine is from passing: the write knee (rows per block) at
every MEM where it failed the first criterion, and its memory knee at the walk's scale (harness/walks/knee.py).
Each search lives under the verdict's knees/ folder, resumable; the report reads their knee.json."""
from __future__ import annotations

from pathlib import Path

from harness.walks.knee import knee
from harness.walks.sweep import CellOptions
from harness.walks.verdict.walk import log

KNEES_DIR = "knees"          # report/knee_report.verdict_knee_blocks reads it


def run_knees(criterion_scenario: str, matrix, opts: CellOptions, root: Path) -> list[Path]:
    """matrix: the verdict's MatrixCell list; returns the knee.json files written."""
    failing = [(c.engine, c.mem) for c in matrix if c.outcome == "fail"]
    searches = [(e, "rows", m) for e, m in failing] + [(e, "mem", None) for e in dict.fromkeys(e for e, _ in failing)]
    out = []
    for i, (engine, axis, mem) in enumerate(searches, 1):
        log(f"knee {i}/{len(searches)}: {engine} {axis}" + (f" at {mem}" if mem else ""))
        knee(criterion_scenario, engine, axis, opts, root / KNEES_DIR, mem=mem)
        out += sorted((root / KNEES_DIR).glob(f"knee-*-{engine}-{axis}-*/knee.json"))
    return sorted(set(out))
