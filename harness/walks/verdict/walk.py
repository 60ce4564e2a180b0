"""The walk: the tree's steps in order, each at the memory levels that still have no answer, largest first.
At one level the criteria run in order and the first that does not pass ends the others there; a failure
implies one at every smaller level (answer.py's matrix marks them implied, not run); an error makes the
level inconclusive and the next engine is not walked there. A step that passes where the step before failed
runs that step's control at those levels. Cells are sweep cells: resumable the same way."""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from harness.results import CellRecord, ControlRun, Estimate, MatrixCell, VerdictStep
from harness.results.headroom import Headroom, ReferenceRun, fragile
from harness.scenario.decision import DecisionTree, Step, as_overrides
from harness.scenario.matrix import Option, flat_values, load_matrix
from harness.scenario.plan import resolve_plan
from harness.walks.capacity import MAX_STEPS
from harness.walks.sweep import Cell, CellOptions, plan_cells, run_cells
from harness.walks.verdict.answer import at_mem, diagnose, judge_step, matrix_cell, runs_lines
from harness.walks.verdict.confirm import close_call, runs_outcome
from harness.walks.verdict.plan import CriterionPlan
from harness.walks.verdict.headroom import check, reference_cell
from harness.walks.verdict.roles import CANDIDATE, CONTROL, Role, log, scaled_rates, screen  # noqa: F401
from harness.walks.verdict.watch import undisturbed


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
    started: float = field(default_factory=time.monotonic)
    expected: Estimate | None = None    # verdict/estimate.py's, made before the first cell
    reference: list[ReferenceRun] = field(default_factory=list)     # the sitting's reference cells so far
    cells_at_reference: int = 0         # cells run when the last reference cell ended
    first_fsync_p50_us: float | None = None     # the walk's first disk probe: the machine's watch compares with it
    pending: list[tuple[Step, str, str]] = field(default_factory=list)  # trade-off screens due after the answer

    @property
    def headroom_on(self) -> bool:
        """A walk with a reference cell asks its candidates for headroom instead of same-sitting confirmations."""
        return self.tree.reference is not None

    def elapsed_min(self) -> float:
        """Minutes since the walk started (the estimate's played walk counts its predicted minutes instead)."""
        return (time.monotonic() - self.started) / 60

    @property
    def cells_run(self) -> int:
        """Every cell run so far, confirmations and controls included: one record each."""
        return len(self.records)

    def open_mems(self) -> list[str]:
        """Levels where no engine has passed and none errored yet."""
        closed = {c.mem for c in self.matrix if (c.outcome == "pass" and not fragile(c)) or c.outcome == "error"}
        return [m for m in self.mems if m not in closed]

    def run(self) -> list[VerdictStep]:
        log(f"at most {self.cells_at_most()} cells: {len(self.mems)} levels x {len(self.criteria)} criteria, each "
            "step's settings, tune options and control, the leaf's designs, a close call's runs or capacity steps; a "
            "failure ends its level's criteria and implies the levels below, so a walk runs far fewer")
        if self.headroom_on and not self.reference:
            reference_cell(self, "start")
        for i, step in enumerate(self.tree.steps):
            mems = self.open_mems()
            if not mems:
                for rest in self.tree.steps[i:]:
                    self.matrix += [MatrixCell(engine=rest.engine, mem=m, outcome="not run") for m in self.mems]
                break
            self.reference_between(f"before {step.engine}")
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
        failed_at: dict[str, str] = {}      # "" (its own settings) or a tune option -> the MEM it failed at
        for mem in mems:
            if failed_above and not self.all_cells:     # its options failed above too: implied with it
                implied += len(self.criteria) * self.repeats
                self.matrix.append(MatrixCell(engine=step.engine, mem=mem, outcome="implied",
                                              diagnosis="implied by a failure above"))
                continue
            recs, cell = self.own_settings(step, mem, failed_at)
            outcomes[mem] = cell.outcome
            if not recs:                                # implied, not run
                implied += len(self.criteria) * self.repeats
            # thresholds missed, or memory run out, at the policy's settings: an option may help either (DuckDB's
            # 1x cells run out of memory with 13 ART indexes and run without them)
            if (outcomes[mem] in ("fail", "unstable") or fragile(cell)) and step.tune:
                cell, tuned = self.tune(step, mem, cell, failed_at)
                outcomes[mem] = cell.outcome
                recs = recs + tuned
            failed_above |= outcomes[mem] == "fail"
            records += recs
            self.matrix.append(cell)
            log(f"{step.engine} at {mem}: {outcomes[mem]}"
                f"{f' with {cell.tuned_with}' if cell.tuned_with else ''} ({self.progress()})")
        for m in self.mems:
            if m not in mems:
                self.matrix.append(MatrixCell(engine=step.engine, mem=m, outcome="not run"))
        return judge_step(step, records, outcomes, implied), [m for m, o in outcomes.items() if o == "pass"]

    def own_settings(self, step: Step, mem: str, failed_at: dict[str, str]) -> tuple[list, MatrixCell]:
        """The step's own settings at a MEM: run, or implied failed where they failed at a larger one (a tune
        option passed there, so the engine was walked here)."""
        if "" in failed_at and not self.all_cells:
            log(f"{step.engine} at {mem}: its own settings implied failed (they failed at {failed_at['']})")
            return [], MatrixCell(engine=step.engine, mem=mem, outcome="fail",
                                  diagnosis=f"its own settings: implied by their failure at {failed_at['']}")
        recs, headroom = self.candidate(step.engine, step.set, "", mem)
        if at_mem(recs) == "fail":
            failed_at[""] = mem
        return recs, matrix_cell(step.engine, mem, at_mem(recs), recs).model_copy(update={"headroom": headroom})

    def reference_between(self, at: str) -> None:
        """A reference cell between steps (or before the leaf), once enough cells ran since the last."""
        if self.headroom_on and self.cells_run - self.cells_at_reference >= self.tree.reference.every_cells:
            reference_cell(self, at)

    def candidate(self, engine: str, settings: dict, tag: str, mem: str,
                  option: Option | None = None) -> tuple[list[CellRecord], Headroom | None]:
        """A cell that could be the answer: every criterion in full, then, where they all passed and the walk has a
        reference cell, its capacity (verdict/headroom.py; its steps' records are the walk's, not the answer's)."""
        recs = self.engine_at(engine, settings, tag, mem, option)
        if not self.headroom_on or at_mem(recs) != "pass":
            return recs, None
        return recs, check(self, engine, settings, tag, mem, option, recs)

    def tune(self, step: Step, mem: str, cell: MatrixCell,
             failed_at: dict[str, str]) -> tuple[MatrixCell, list[CellRecord]]:
        """The step's matrix options at a MEM where it failed, cheapest first: the first that passes and gives
        nothing up is the answer there, and the rest are not run. Where none does, each option that gives
        something up is due a screen after the answer (verdict/trade_offs.py: never the answer, never confirmed,
        never carried to another MEM). Below a MEM where they all failed, they are implied failed with the engine;
        below one where an option passed, those that failed there are implied failed (failed_at, updated here)."""
        em = load_matrix().engines[step.engine]
        cost = lambda n: em.options[n].cost                       # noqa: E731
        keeps = sorted((n for n in step.tune if em.options[n].trade_off is None), key=cost)
        gives = sorted((n for n in step.tune if em.options[n].trade_off is not None), key=cost)
        tried, records, passed, implied = [], [], [], []
        for name in keeps:
            opt = em.options[name]
            if name in failed_at and not self.all_cells:
                log(f"{step.engine} at {mem}: {name} implied failed (it failed at {failed_at[name]})")
                implied.append(f"{name} (failed at {failed_at[name]})")
                continue
            log(f"{step.engine} at {mem}: trying {name} ({opt.says})")
            recs, headroom = self.candidate(step.engine, step.set, name, mem, opt)
            records += recs
            tried.append(name)
            if at_mem(recs) == "fail":
                failed_at[name] = mem
            if at_mem(recs) == "pass":
                passed.append(name)
                held = headroom is None or headroom.passed      # a pass today only leaves the next option a try
                if held or cell.outcome != "pass":
                    cell = cell.model_copy(update={"outcome": "pass", "tuned_with": opt.says, "runs": runs_lines(recs),
                                                   "cells": cell.cells + [f"{r.scenario}/{r.dir}" for r in recs],
                                                   "headroom": headroom})
                if held:
                    break
        self.pending += [] if passed else [(step, mem, name) for name in gives]
        diagnosis = cell.diagnosis if cell.tuned_with else \
            f"{cell.diagnosis}; tried {', '.join(tried) or 'nothing'}" \
            f"{'; implied failed: ' + ', '.join(implied) if implied else ''}: no option was enough"
        return cell.model_copy(update={"tried": tried, "diagnosis": diagnosis,
                                       "passed_options": passed}), records

    def criterion_runs(self, cp: CriterionPlan, engine: str, settings: dict, tag: str, mem: str,
                       option: Option | None = None, repeats: int | None = None, screen_blocks: int | None = None,
                       load: float = 1.0, fixed: bool = False) -> list:
        """The cells (sweep CellRuns, planned) of one criterion for one engine at one MEM, a repeat each; a
        screen's measured phase cut to its blocks (never longer than the profile's). load: blocks due that many
        times as often (a capacity step), an absolute rate's line raised with it, every other line as it is (a
        block log's applier busy share included). fixed: the reference cell, at the engine's own durability, with
        no horizon and never stopped early (the same cell, its full blocks, in every sitting)."""
        repeats = repeats or self.repeats
        opts = replace(self.opts, thresholds=scaled_rates(cp.thresholds, load))
        hour_s = cp.criterion.target.measure_s        # every accumulating figure's trend is carried to it
        if fixed:
            opts = replace(opts, overrides=tuple(o for o in opts.overrides if not o.startswith("durability=")),
                           early_abort=False)
        elif hour_s:        # the walk's, as its durability: no cell's variant
            opts = replace(opts, overrides=(*opts.overrides, f"phases.horizon_s={hour_s:g}",
                                            f"phases.horizon_scale={cp.criterion.target.scale:g}"))
        over = as_overrides(engine, settings)
        if option is not None or screen_blocks or load != 1:
            base = resolve_plan(cp.criterion.scenario, engine, profile=opts.profile, scale=self.scale, mem=mem,
                                duration_s=opts.duration_s, overrides=[*opts.overrides, *over])
        if option is not None:
            over += tuple(option.overrides(engine, base.memory.data_limit_bytes,
                                           flat_values(base.model_dump(mode="json", by_alias=True))))
        interval_s = base.workload.block_interval_ms / 1000 / load if option is not None or screen_blocks \
            or load != 1 else 0
        if load != 1:       # a capacity step counts its rows, as a knee's step does: its 1x cells checked every row
            over += (f"workload.block_interval_ms={interval_s * 1000:g}", "integrity=counts")
        if screen_blocks and interval_s and screen_blocks * interval_s < base.phases.measure_s:
            over += (f"phases.measure_s={screen_blocks * interval_s:g}",)
        cells = [Cell(cp.criterion.scenario, engine, mem, self.scale, r, over, tag) for r in range(1, repeats + 1)]
        return plan_cells(cells, opts, self.root, repeats)

    def every_cell(self) -> list:
        """Every step's every criterion at every MEM, untuned (what --all-cells runs, and an orchestrator is
        handed up front: the walk's choices are made afterwards from the cells' results)."""
        return [cr for step in self.tree.steps for mem in self.mems for cp in self.criteria
                for cr in self.criterion_runs(cp, step.engine, step.set, "", mem)]

    def engine_at(self, engine: str, settings: dict, tag: str, mem: str, option: Option | None = None,
                  role: Role = CANDIDATE) -> list[CellRecord]:
        """The role's criteria at one MEM, in order; the first that does not pass ends the rest there. With a
        matrix option, its overrides come after the step's settings. Each cell carries the role's label."""
        out = []
        for cp in self.criteria[:role.criteria]:
            blocks = self.screened(cp, option, role)
            runs = self.criterion_runs(cp, engine, settings, tag, mem, option, screen_blocks=blocks,
                                       load=role.load, fixed=role.fixed)
            name = f"cells-{engine}{'-' + tag if tag else ''}-{cp.criterion.scenario}-{mem}"
            done = run_cells(runs, self.root / f"{name}.json", {"kind": "verdict-cells", "dir": str(self.root)},
                             stop=None if self.all_cells else (lambda rec: rec.status != "passed"), place=self.opts.place)
            again = f"{tag}-again" if tag else "again"
            kept, aside = undisturbed(self, done.cells, lambda: run_cells(
                self.criterion_runs(cp, engine, settings, again, mem, option, screen_blocks=blocks,
                                    load=role.load, fixed=role.fixed), self.root / f"{name}-again.json",
                {"kind": "verdict-cells", "dir": str(self.root)}, place=self.opts.place).cells)
            self.records += aside
            first = [c.model_copy(update={"label": role.label}) for c in kept]
            more = self.confirmations(kept, name, cp, engine, settings, tag, mem, option) \
                if role.confirm and not self.headroom_on else []       # with a reference: its headroom instead
            cells = first + [c.model_copy(update={"label": "confirmation"}) for c in more]
            recs = [c.model_copy(update={"criterion": cp.criterion.name, "measure_s": runs[0].plan.phases.measure_s,
                                         "diagnosis": diagnose(c, self.root / c.scenario / c.dir)})
                    for c in cells]
            for r in recs:
                if r.diagnosis:
                    log(f"{r.scenario}/{r.dir}: {r.diagnosis}")
            out += recs
            self.records += recs
            if not self.all_cells and at_mem(recs) != "pass":
                break
        return out

    def screened(self, cp: CriterionPlan, option: Option | None, role: Role) -> int | None:
        """The measured blocks a criterion's cell is cut to: the role's screen, or the tree's where the criterion is
        screened behind a block log (decision.yaml's behind_a_log) and the option puts one in front; None: in full."""
        behind = cp.criterion.behind_a_log == "screen" and option is not None and option.logs_blocks
        return role.screen_blocks or (self.tree.screen_blocks if behind else None)

    def option_passed(self, engine: str, before: str, mem: str) -> tuple[str | None, Option | None]:
        """The tune option `engine` passed with at `mem`, as `before`'s matrix has it; (None, None) where it passed
        at its own settings, or `before` has no such option (the control then runs without it, and says so)."""
        cell = next((c for c in self.matrix if c.engine == engine and c.mem == mem), None)
        name = cell.passed_options[-1] if cell is not None and cell.passed_options else None
        opt = load_matrix().engines[before].options.get(name) if name else None
        if name and opt is None:
            log(f"control at {mem}: {before} has no option {name}: run without it")
        return (name, opt) if opt is not None else (None, None)

    def confirmations(self, cells: list[CellRecord], name: str, *where) -> list[CellRecord]:
        """A close call's runs after the first (decision.yaml's confirm), each on a fresh clone; none for a cell
        far from its line, or where REPEATS already runs each cell more than once. The first run that disagrees
        with the first ends them: the cell is unstable (or in error) whatever the runs left would say. So a first
        run that failed is never run again: no run after it could make the cell an answer, and a full cell at 1x
        costs 14 min (a failing close call is said, and implies the levels below as any failure does)."""
        confirm = self.tree.confirm
        why = close_call(cells[0], confirm) if len(cells) == 1 else None
        if not why:
            return []
        if cells[0].status != "passed":
            log(f"{cells[0].scenario}/{cells[0].dir}: a close call ({why}), failing: not run again (no run after a "
                "failure can make it an answer)")
            return []
        more = self.criterion_runs(*where, repeats=confirm.runs)[1:]
        runs = f"{len(more)} more run" + ("s" if len(more) > 1 else "")
        log(f"{cells[0].scenario}/{cells[0].dir}: a close call ({why}): up to {runs}")
        first = cells[0]
        settled = lambda rec: runs_outcome([first, rec]) in ("unstable", "error")     # noqa: E731
        return run_cells(more, self.root / f"{name}-confirm.json", {"kind": "verdict-cells", "dir": str(self.root)},
                         stop=settled, place=self.opts.place).cells

    def control(self, before: Step, step: Step, mems: list[str]) -> ControlRun:
        """The step before again, changed only by the control's settings, where this step passed: with the tune
        option this step passed with there, where it passed only with one (like for like: the 11-29 walk's libSQL
        passed 2568m with PASSIVE checkpoints, and the control ran SQLite's own settings)."""
        settings = {**before.set, **step.control.set}
        tag = "-".join(str(v) for v in step.control.set.values()).lower().replace("_", "-")
        log(f"{step.engine} passed where {before.engine} failed ({', '.join(mems)}): control, {before.engine} with "
            f"{step.control.set} ({step.control.why})")
        recs, carried = [], {}
        for m in mems:
            name, opt = self.option_passed(step.engine, before.engine, m)
            if opt is not None:
                carried[opt.says] = None
            recs += self.engine_at(before.engine, settings, f"{tag}-{name}" if opt else tag, m, opt, role=CONTROL)
        outcomes = {m: at_mem([r for r in recs if r.mem == m]) for m in mems}
        judged = judge_step(before, recs, outcomes, 0)
        return ControlRun(engine=before.engine, set=settings, why=step.control.why, passed=judged.outcome == "passed",
                          outcome="passed" if judged.outcome == "passed" else
                          "error" if judged.outcome == "error" else "failed", options=list(carried),
                          errors=judged.errors, cells=recs)

    def cells_at_most(self) -> int:
        """Cells the walk may still run, an upper bound on a quiet machine: every criterion at every open level, each
        with a close call's runs (or, with a reference cell, its capacity's steps), for every step not yet judged with
        its tune options and control, then every leaf design, and the reference cells left (failures end a level's
        criteria early and imply the levels below, so most walks run far fewer)."""
        runs = self.repeats if self.repeats > 1 else 1 if self.headroom_on else self.tree.confirm.runs
        steps_left = self.tree.steps[len(self.steps):]
        configs = sum(1 + len(s.tune) + bool(s.control) for s in steps_left)
        designs = sum(len(d) for d in self.tree.leaf.designs.values()) if self.tree.leaf else 0
        per_config = len(self.criteria) * runs + (MAX_STEPS if self.headroom_on else 0)
        references = len(steps_left) + 2 if self.headroom_on else 0     # between steps, before the leaf, at the end
        return len(self.open_mems()) * per_config * (configs + designs) + references

    def progress(self) -> str:
        """Cells run and minutes so far, against the estimate made before the first cell (its ETA), else the bound."""
        secs = time.monotonic() - self.started
        exp = self.expected
        if exp is not None and exp.cells:
            eta = max(0.0, exp.minutes - secs / 60)
            return (f"{self.cells_run} of ~{exp.cells} expected cells in {secs / 60:.1f} min; ETA ~{eta:.0f} min "
                    f"(expected {exp.minutes:.0f} min)")
        left = self.cells_at_most()
        eta = f", at most {left} left, about {secs / self.cells_run * left / 60:.0f} min" if self.cells_run and left else ""
        return f"{self.cells_run} cells run in {secs / 60:.1f} min{eta}"
