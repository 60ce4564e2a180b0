"""Steps of a knee already measured in this sitting by another walk of the same point: a rows knee started
again elsewhere (another START_ROWS) is a folder of its own, and at 5x each of its steps is ~25 minutes (a state
built, aged and measured; 12-07: the walks started again at 1,050 and 620 rows a block could use none of the
steps the walks before them had measured). A step of another walk counts here only as the very cell this walk
would run: the same identity (its plan and the measuring code's digest), complete, measured on this boot. It is
copied into this walk's folder, so the walk finds it done, resumes with it and publishes it with its own steps."""
from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Callable

from harness.environment import boot_id
from harness.records import completed_record
from harness.results import load_knee, load_result

KNEE_FILE = "knee.json"


def _log(msg: str) -> None:
    print(f"[knee] {msg}", file=sys.stderr, flush=True)


def siblings(root: Path) -> list[Path]:
    """The other walks of this point: the same kind, scenario, engine and axis (the folder's name less its
    digest); whether their cells are this walk's, their identities say."""
    prefix = root.name.rsplit("-", 1)[0]
    return sorted(p for p in root.parent.glob(f"{prefix}-*") if p != root and (p / KNEE_FILE).is_file())


def adopt(root: Path, plan_step: Callable) -> list[float]:
    """The values (the axis's own unit) of every step another walk of this point measured as this walk would,
    on this boot, copied in; a confirmation is not adopted (its walk's knee, not this one's). plan_step(value):
    the walk's CellRun (walks/sweep) for its step at that value."""
    adopted: list[float] = []
    now = boot_id()
    for other in siblings(root):
        k = load_knee(other / KNEE_FILE)
        for s in (k.steps if k else []):
            if s.confirming or s.verdict == "error" or s.value in adopted or s.repeat != 1:
                continue
            cr, src = plan_step(s.value), other / s.cell
            rec = completed_record(src, cr.cell_id)
            r = load_result(src / "result.json") if rec else None
            if r is None or now is None or r.environment.get("boot_id") != now:
                continue
            if completed_record(cr.dir, cr.cell_id) is None:
                shutil.rmtree(cr.dir, ignore_errors=True)
                shutil.copytree(src, cr.dir)
            adopted.append(s.value)
            _log(f"step at {s.value:,.0f} adopted from {other.name}, measured there on this boot ({rec.status})")
    return adopted
