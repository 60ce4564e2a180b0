"""A walk's cells and their records (cell.json), below every way of placing them: what a cell is (its
engine, MEM, scale, repeat, planned and named), and its record begun in a clean folder (a partial or
superseded attempt moved aside, never deleted), ended from its result.json, or found complete under the
same identity (then skipped)."""
from __future__ import annotations

import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from harness.environment import utc_now
from harness.provenance import code_digest
from harness.results import CellRecord, load_result, read_json, write_json
from harness.results.design import queryable_p99_ms
from harness.scenario.plan import RunPlan


class SweepInterrupted(Exception):
    """Ctrl-C during a cell: its partial result is kept and redone on the next start."""


@dataclass(frozen=True)
class Cell:
    scenario: str
    engine: str
    mem: str | None
    scale: float | None
    repeat: int = 1
    overrides: tuple[str, ...] = ()   # this cell's own --set items, after the sweep's
    tag: str = ""                     # names a cell whose overrides set it apart from the engine's others


@dataclass
class CellRun:
    cell: Cell
    plan: RunPlan
    cell_id: str
    dir: Path
    record: CellRecord | None = None


def set_aside(cell_dir: Path, why: str) -> Path:
    """A partial or superseded cell is kept (nothing lost), out of the way of the new attempt."""
    dest = cell_dir.parent / ".set-aside" / f"{cell_dir.name}-{why}-{time.strftime('%Y%m%d-%H%M%S')}"
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(cell_dir), str(dest))
    return dest


def stop_leftovers(cell_dir: Path) -> None:
    """A killed attempt in a container may still be running: stop it before its cell is run again."""
    try:
        old = RunPlan.read(cell_dir / "plan.yaml")
    except (OSError, ValueError, yaml.YAMLError):
        return
    if old.runtime == "docker":
        from harness.runtime.docker import remove_leftovers
        if remove_leftovers(old.run_id):
            print(f"[sweep] removed the still-running container of {old.run_id}", file=sys.stderr)


def read_cell(path: Path) -> CellRecord | None:
    raw = read_json(path)
    try:
        return CellRecord.model_validate(raw) if raw else None
    except ValueError:
        return None                  # unreadable: treated as a partial attempt (set aside, rerun)


def completed(cr: CellRun) -> CellRecord | None:
    """The cell's record when it completed under the same identity, else None."""
    return completed_record(cr.dir, cr.cell_id)


def completed_record(cell_dir: Path, cell_id: str) -> CellRecord | None:
    rec = read_cell(cell_dir / "cell.json")
    if rec and rec.cell_id == cell_id and rec.state == "complete" and (cell_dir / "result.json").exists():
        return rec
    return None


def superseded_why(old: CellRecord | None, cr: CellRun) -> str:
    """Why a complete cell is measured again: other measuring code (its digest against this tree's), or
    another plan or engine build."""
    if not old or old.state != "complete":
        return ""
    now = code_digest(cr.plan.engine)
    if old.code_digest and old.code_digest != now:
        return f" (measured by other code: digest {old.code_digest}, this tree's {now})"
    return " (its plan or the engine's build changed)"


def begin_cell(cr: CellRun, label: str, where: str | None = None) -> CellRecord:
    """The cell's record: the completed one (skipped), else a new "running" one in a clean folder, the
    partial or superseded attempt moved aside. where: what runs it, for the log (default its runtime)."""
    if (rec := completed(cr)) is not None:
        print(f"[sweep] {label} {cr.cell.scenario}/{cr.dir.name}: complete ({rec.status}), skipped", file=sys.stderr, flush=True)
        return rec
    if cr.dir.exists():
        old = read_cell(cr.dir / "cell.json")
        why = "superseded" if old and old.state == "complete" else "partial"
        stop_leftovers(cr.dir)
        print(f"[sweep] {label} {cr.cell.scenario}/{cr.dir.name}: {why} attempt{superseded_why(old, cr)} moved to "
              f"{set_aside(cr.dir, why)}", file=sys.stderr)
    shutil.rmtree(cr.plan.data_dir, ignore_errors=True)      # a killed attempt's database must not be reused
    cr.dir.mkdir(parents=True)
    rec = CellRecord(cell_id=cr.cell_id, scenario=cr.cell.scenario, engine=cr.cell.engine, mem=cr.cell.mem,
                     data_limit_bytes=cr.plan.memory.data_limit_bytes, scale=cr.plan.scale, repeat=cr.cell.repeat,
                     variant=cr.cell.tag or " ".join(cr.cell.overrides) or None,
                     runtime=cr.plan.runtime, dir=cr.dir.name, state="running", started_utc=utc_now())
    write_json(cr.dir / "cell.json", rec)
    print(f"[sweep] {label} {cr.cell.scenario}/{cr.dir.name}: running ({where or cr.plan.runtime})", file=sys.stderr, flush=True)
    return rec


def end_cell(cr: CellRun, rec: CellRecord, rc: int, label: str, **extra) -> CellRecord:
    """The record of a cell whose run ended (its result.json read back), written to cell.json."""
    rec = rec.model_copy(update={"state": "complete", "exit_code": rc, "finished_utc": utc_now(),
                                 **cell_summary(cr.dir), **extra})
    write_json(cr.dir / "cell.json", rec)
    print(f"[sweep] {label} {cr.cell.scenario}/{cr.dir.name}: {rec.status}", file=sys.stderr, flush=True)
    return rec


def cell_summary(run_dir: Path) -> dict:
    """The figures a sweep table and a verdict need, read back from the cell's result.json."""
    r = load_result(run_dir / "result.json")
    if r is None:
        return {"status": "error", "error": "the cell wrote no result.json"}
    m, c = r.metrics, r.metrics.commit_latency_ms
    return {"status": r.status, "error": r.error, "p50_ms": c.p50, "p99_ms": c.p99, "max_ms": c.max,
            "blocks": c.count, "rows_per_s": m.rows_per_s, "bloat_ratio": m.bloat_ratio,
            "wal_bytes_max": m.wal_bytes_max, "checkpoints": m.checkpoints, "integrity_ok": r.integrity.ok,
            "thresholds": r.thresholds, "early_abort": r.early_abort,
            "load_digest": (r.load or {}).get("digest"), "load_row_counts": (r.load or {}).get("row_counts"),
            "code_digest": r.environment.get("code_digest"), "queryable_p99_ms": queryable_p99_ms(m)}
