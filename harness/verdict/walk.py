"""The walk: the tree's steps in order, each at the memory levels that still have no answer, largest first.
At one level the criteria run in order and the first that does not pass ends the others there; a failure
implies one at every smaller level (answer.py's matrix marks them implied, not run); an error makes the
level inconclusive and the next engine is not walked there. A step that passes where the step before failed
runs that step's control at those levels. Cells are sweep cells: resumable the same way."""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from harness.results import CellRecord, ControlRun, MatrixCell, VerdictStep
from harness.scenario.decision import DecisionTree, Step, as_overrides
from harness.sweep import Cell, CellOptions, plan_cells, run_cells
from harness.verdict.answer import at_mem, diagnose, judge_step, matrix_cell
from harness.verdict.plan import CriterionPlan


def log(msg: str) -> None:
    print(f"[verdict] {msg}", file=sys.stderr, flush=True)


@dataclass
class Walk:
    tree: DecisionTree
    mems: list[str]                     # largest first
    criteria: list[CriterionPlan]
    opts: CellOptions
    root: Path
    repeats: int = 1
    scale: float | None = None
    all_cells: bool = False
    on_step: object = None              # called with the steps so far, after each step (verdict.json)
    records: list[CellRecord] = field(default_factory=list)
    matrix: list[MatrixCell] = field(default_factory=list)
    steps: list[VerdictStep] = field(default_factory=list)
    cells_run: int = 0
    started: float = field(default_factory=time.monotonic)

    def open_mems(self) -> list[str]:
        """Levels where no engine has passed and none errored yet."""
        closed = {c.mem for c in self.matrix if c.outcome in ("pass", "error")}
        return [m for m in self.mems if m not in closed]

    def run(self) -> list[VerdictStep]:
        for i, step in enumerate(self.tree.steps):
            mems = self.open_mems()
            if not mems:
                for rest in self.tree.steps[i:]:
                    self.matrix += [MatrixCell(engine=rest.engine, mem=m, outcome="not run") for m in self.mems]
                break
            judged, passed_at = self.step(step, mems)
            if step.control and passed_at and i:
                judged = judged.model_copy(update={"control": self.control(self.tree.steps[i - 1], step, passed_at)})
            self.steps.append(judged)
            log(f"{step.engine}: {judged.outcome} ({self.progress()})")
            if self.on_step:
                self.on_step(self)
        return self.steps

    def step(self, step: Step, mems: list[str]) -> tuple[VerdictStep, list[str]]:
        records, outcomes, implied = [], {}, 0
        failed_above = False
        for mem in mems:
            if failed_above and not self.all_cells:
                implied += len(self.criteria) * self.repeats
                self.matrix.append(MatrixCell(engine=step.engine, mem=mem, outcome="implied"))
                continue
            recs = self.engine_at(step.engine, step.set, "", mem)
            outcomes[mem] = at_mem(recs)
            failed_above |= outcomes[mem] == "fail"
            records += recs
            self.matrix.append(matrix_cell(step.engine, mem, outcomes[mem], recs))
            log(f"{step.engine} at {mem}: {outcomes[mem]} ({self.progress()})")
        for m in self.mems:
            if m not in mems:
                self.matrix.append(MatrixCell(engine=step.engine, mem=m, outcome="not run"))
        return judge_step(step, records, outcomes, implied), [m for m, o in outcomes.items() if o == "pass"]

    def engine_at(self, engine: str, settings: dict, tag: str, mem: str) -> list[CellRecord]:
        """Every criterion at one MEM, in order; the first that does not pass ends the rest there."""
        out = []
        for cp in self.criteria:
            cells = [Cell(cp.criterion.scenario, engine, mem, self.scale, r, as_overrides(engine, settings), tag)
                     for r in range(1, self.repeats + 1)]
            runs = plan_cells(cells, replace(self.opts, thresholds=cp.thresholds), self.root, self.repeats)
            done = run_cells(runs, self.root / f"cells-{engine}{'-' + tag if tag else ''}-{cp.criterion.scenario}-{mem}.json",
                             {"kind": "verdict-cells", "dir": str(self.root)},
                             stop=None if self.all_cells else (lambda rec: rec.status != "passed"))
            self.cells_run += len(done.cells)
            recs = [c.model_copy(update={"criterion": cp.criterion.name, "measure_s": runs[0].plan.phases.measure_s,
                                         "diagnosis": diagnose(c, self.root / c.scenario / c.dir)})
                    for c in done.cells]
            for r in recs:
                if r.diagnosis:
                    log(f"{r.scenario}/{r.dir}: {r.diagnosis}")
            out += recs
            self.records += recs
            if not self.all_cells and at_mem(recs) != "pass":
                break
        return out

    def control(self, before: Step, step: Step, mems: list[str]) -> ControlRun:
        """The step before again, changed only by the control's settings, where this step passed."""
        settings = {**before.set, **step.control.set}
        tag = "-".join(str(v) for v in step.control.set.values()).lower().replace("_", "-")
        log(f"{step.engine} passed where {before.engine} failed ({', '.join(mems)}): control, {before.engine} with "
            f"{step.control.set} ({step.control.why})")
        recs = [r for m in mems for r in self.engine_at(before.engine, settings, tag, m)]
        outcomes = {m: at_mem([r for r in recs if r.mem == m]) for m in mems}
        judged = judge_step(before, recs, outcomes, 0)
        return ControlRun(engine=before.engine, set=settings, why=step.control.why, passed=judged.outcome == "passed",
                          outcome="passed" if judged.outcome == "passed" else
                          "error" if judged.outcome == "error" else "failed",
                          errors=judged.errors, cells=recs)

    def progress(self) -> str:
        """Cells run, and at most how many are left: every criterion at every open level for every step not
        yet walked (failures end cells early, so the ETA is an upper bound at the pace so far)."""
        secs = time.monotonic() - self.started
        steps_left = len(self.tree.steps) - len(self.steps)
        left = len(self.open_mems()) * len(self.criteria) * self.repeats * steps_left
        eta = f", at most {left} left, about {secs / self.cells_run * left / 60:.0f} min" if self.cells_run and left else ""
        return f"{self.cells_run} cells run in {secs / 60:.1f} min{eta}"
