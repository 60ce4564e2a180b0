"""`make verdict`: walk scenarios/decision.yaml (SQLite → libSQL → Postgres → DuckDB → revisit) against its
criteria, running only what the walk needs: the first engine that meets every criterion at every memory
limit ends it. A step that passes where the one before failed runs that step's control, when it has one
(the earlier engine again, changed only by the control's settings); compare_versions' engines get their
library versions side by side. Each step's cells are sweep cells (resumable the same way); verdict.json
records, per step, every cell with each threshold's measured value, and the decision."""
from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

from harness.environment import utc_now
from harness.errors import EXIT_RUN_FAILED, ConfigError
from harness.results import (CellRecord, ControlRun, LibraryVersion, Verdict, VerdictFile, VerdictStep, load_result,
                             write_json)
from harness.scenario.decision import DECISION_FILE, DecisionTree, RatioMems, Step, as_overrides, load_decision
from harness.scenario.load import load_scenario, resolve_path
from harness.sweep import Cell, CellOptions, SweepInterrupted, plan_cells, run_cells, sweep_dir_for
from harness.versions import probe


def caveats(tree: DecisionTree, records: list[CellRecord], memory_basis: str | None = None) -> list[str]:
    """Where the cells ran smaller or shorter than the criteria ask: said first, never buried."""
    out = [memory_basis] if memory_basis else []
    for crit in tree.criteria:
        cells = [r for r in records if r.scenario == crit.scenario and r.state == "complete"]
        if not cells:
            continue
        scale = max(r.scale for r in cells)
        measure_s = max(r.measure_s or 0 for r in cells)
        if scale < crit.target.scale or measure_s < crit.target.measure_s:
            out.append(f"{crit.scenario} ran at scale {scale:g} for {measure_s:g} s measured; "
                       f"the criterion asks for scale {crit.target.scale:g} for {crit.target.measure_s:g} s")
    return out


def ratio_mems(tree: DecisionTree, spec: RatioMems, profile: str, scale: float | None,
               opts: CellOptions) -> tuple[list[str], str]:
    """MEMS from data-to-memory ratios: the size of spec.size_of's starting state for the first criterion
    (built now if missing) divided by each ratio. Returns (mems, the sentence that says what was scaled)."""
    from harness.scenario.plan import resolve_plan
    from harness.state.build import ensure
    crit = tree.criteria[0]
    plan = resolve_plan(crit.scenario, spec.size_of, profile=profile, scale=scale,
                        overrides=list(opts.overrides))
    _, man, _ = ensure(plan)
    size = man.data_bytes
    mems = [f"{max(16, int(size / r) >> 20)}m" for r in spec.data_to_memory]
    basis = (f"memory limits {', '.join(mems)} are the {spec.size_of} starting state's {size / 2**30:.2f} GiB at "
             f"scale {plan.scale:g} divided by {', '.join(f'{r:g}' for r in spec.data_to_memory)} (the reference's "
             f"data-to-memory ratios: ~67 GB at 5x over 8, 16 and 32 GB); the database is "
             f"{crit.target.scale / plan.scale:g}x smaller than the criterion's, the ratios are kept")
    print(f"[verdict] {basis}", file=sys.stderr, flush=True)
    return mems, basis


def verdict(profile: str | None, mems: list[str] | None, opts: CellOptions, results_root: Path,
            repeats: int = 1, scale: float | None = None, decision_path: Path = DECISION_FILE,
            all_cells: bool = False) -> int:
    """all_cells: run a step's every cell even after one has failed it (a fuller table, not a different
    decision); by default the walk moves on at a step's first cell that is not a pass."""
    tree = load_decision(decision_path)
    prof = profile or _default_profile(tree)
    memory_basis = None
    if not mems:
        if prof not in tree.mems:
            raise ConfigError(f"{decision_path}: mems: no default for profile {prof!r}; give MEMS=\"...\"")
        mems = tree.mems[prof]
        if isinstance(mems, RatioMems):
            mems, memory_basis = ratio_mems(tree, mems, prof, scale, opts)
    spec = {"decision": tree.model_dump(), "profile": prof, "mems": mems, "scale": scale, "repeats": repeats,
            "opts": opts.asked()}
    root = sweep_dir_for(results_root, "verdict", prof, spec)
    root.mkdir(parents=True, exist_ok=True)
    meta = {"kind": "verdict-cells", "dir": str(root)}
    out = VerdictFile(decision_file=str(decision_path), profile=prof, mems=mems, repeats=repeats, dir=str(root),
                      criteria=[c.model_dump() for c in tree.criteria], steps=[], memory_basis=memory_basis)
    print(f"[verdict] {root}: walking {' → '.join(s.engine for s in tree.steps)} at MEMS {' '.join(mems)}",
          file=sys.stderr, flush=True)
    steps: list[VerdictStep] = []
    all_records: list[CellRecord] = []

    def cells_of(engine: str, settings: dict, tag: str = "") -> tuple[list[CellRecord], int]:
        """Every criterion's cells for one engine with its settings, at every limit (in the order given:
        the tightest first fails a step soonest) and repeat; and how many were left unrun."""
        records, unrun = [], 0
        for crit in tree.criteria:
            cells = [Cell(crit.scenario, engine, m, scale, r, as_overrides(engine, settings), tag)
                     for m in mems for r in range(1, repeats + 1)]
            if failed_at(records):
                unrun += len(cells)
                continue
            runs = plan_cells(cells, replace(opts, thresholds=tuple(crit.thresholds)), root, repeats)
            done = run_cells(runs, root / f"cells-{engine}{'-' + tag if tag else ''}-{crit.scenario}.json", meta,
                             stop=None if all_cells else (lambda rec: rec.status != "passed"))
            unrun += len(runs) - len(done.cells)
            records += [c.model_copy(update={"criterion": crit.name, "measure_s": runs[0].plan.phases.measure_s})
                        for c in done.cells]
        all_records.extend(records)
        return records, unrun

    def failed_at(records: list[CellRecord]) -> bool:
        return not all_cells and any(r.status != "passed" for r in records)

    try:
        for i, step in enumerate(tree.steps):
            judged = _judge(step, *cells_of(step.engine, step.set))
            if step.control and judged.passed:      # the walk reached it: the step before failed
                before = tree.steps[i - 1]
                settings = {**before.set, **step.control.set}
                print(f"[verdict] {step.engine} passed where {before.engine} failed: control, {before.engine} "
                      f"with {step.control.set} ({step.control.why})", file=sys.stderr, flush=True)
                ctl = _judge(before, *cells_of(before.engine, settings, _tag(step.control.set)))
                judged = judged.model_copy(update={"control": ControlRun(
                    engine=before.engine, set=settings, why=step.control.why, passed=ctl.passed,
                    outcome=ctl.outcome, errors=ctl.errors, cells=ctl.cells, cells_unrun=ctl.cells_unrun)})
            steps.append(judged)
            out = out.model_copy(update={"steps": steps, "caveats": caveats(tree, all_records, memory_basis),
                                         "updated_utc": utc_now()})
            write_json(root / "verdict.json", out)
            print(f"[verdict] {step.engine}: {steps[-1].outcome}", file=sys.stderr, flush=True)
            if steps[-1].passed:
                break
    except SweepInterrupted as e:
        print(f"[verdict] interrupted in cell {e}; run the same command again to resume", file=sys.stderr)
        return EXIT_RUN_FAILED
    winner = next((s for s in steps if s.passed), None)
    if tree.compare_versions:
        table = library_versions(tree, steps, root)
        steps = [s.model_copy(update={"version_note": version_note(tree, i, table)}) for i, s in enumerate(steps)]
        notes = [n for n in (version_note(tree, i, table) for i in range(len(tree.steps))) if n]
        out = out.model_copy(update={"versions_of": tree.compare_versions.of, "library_versions": table,
                                     "version_notes": notes, "steps": steps})
    out = out.model_copy(update={
        "verdict": Verdict(engine=winner.engine if winner else None,
                           decision=winner.decision if winner else tree.otherwise,
                           path=[f"{s.engine}: {s.outcome}" for s in steps], note=_control_note(winner)),
        "caveats": caveats(tree, all_records, memory_basis), "updated_utc": utc_now()})
    write_json(root / "verdict.json", out)
    from harness.report import write_report
    md, html = write_report(root)
    print(("CAVEAT: " + "; ".join(out.caveats) + "\n") if out.caveats else "", end="", file=sys.stderr)
    print(f"verdict: {out.verdict.decision}  (path: {', '.join(out.verdict.path)})", file=sys.stderr)
    print(root / "verdict.json")
    print(html)
    return 0 if winner else 1


def _tag(settings: dict) -> str:
    return "-".join(str(v) for v in settings.values()).lower().replace("_", "-")


def _control_note(winner: VerdictStep | None) -> str | None:
    c = winner.control if winner else None
    if c is None:
        return None
    if c.passed:
        return (f"{c.engine} with {_settings_text(c.set)} also passed the same cells: the change alone would have "
                f"done, so moving to {winner.engine} is not what made the difference")
    return f"{c.engine} with {_settings_text(c.set)} did not pass the same cells ({c.outcome}): {winner.engine} did"


def _settings_text(settings: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in settings.items()) or "its defaults"


def library_versions(tree: DecisionTree, steps: list[VerdictStep], root: Path) -> list[LibraryVersion]:
    """compare_versions' engines side by side: as measured where a step (or control) ran them, else as
    installed here (harness.versions), each with the settings the tree gives it (a control's too)."""
    of = tree.compare_versions.of
    wanted: list[tuple[str, dict]] = []
    for i, s in enumerate(tree.steps):
        if s.engine in tree.compare_versions.engines:
            wanted.append((s.engine, s.set))
        if s.control and i:
            wanted.append((tree.steps[i - 1].engine, {**tree.steps[i - 1].set, **s.control.set}))
    wanted += [(e, {}) for e in tree.compare_versions.engines if e not in {w[0] for w in wanted}]
    wanted = list({(e, json.dumps(s, sort_keys=True)): (e, s) for e, s in wanted}.values())
    ran = {}
    for s in steps:
        for engine, settings, cells in ((s.engine, s.set, s.cells),
                                        *(((s.control.engine, s.control.set, s.control.cells),) if s.control else ())):
            for c in cells:
                r = load_result(root / c.scenario / c.dir / "result.json") if c.state == "complete" else None
                if r is not None and r.engine_library:
                    ran.setdefault((engine, json.dumps(settings, sort_keys=True)), r)
    out = []
    for engine, settings in wanted:
        r = ran.get((engine, json.dumps(settings, sort_keys=True)))
        if r is not None:
            out.append(LibraryVersion(engine=engine, set=settings, library=r.engine_library, driver=r.engine_driver,
                                      version=r.engine_related_versions.get(of), source="measured"))
            continue
        try:
            p = probe(engine, settings)
        except ConfigError as e:
            print(f"[verdict] {e}", file=sys.stderr)
            continue
        out.append(LibraryVersion(engine=engine, set=settings, library=p["library"], driver=p["driver"],
                                  version=p["related"].get(of), source="installed"))
    return out


def version_note(tree: DecisionTree, i: int, table: list[LibraryVersion]) -> str | None:
    """Between two consecutive steps of compare_versions' engines: did they run the same library?"""
    if i == 0:
        return None
    a, b = tree.steps[i - 1], tree.steps[i]
    of = tree.compare_versions.of
    find = lambda s: next((v for v in table if v.engine == s.engine and v.set == s.set), None)  # noqa: E731
    va, vb = find(a), find(b)
    if va is None or vb is None or va.version is None or vb.version is None:
        return None
    if va.version == vb.version:
        return (f"{b.engine} runs {of} {vb.version}, as {a.engine} did ({va.driver}): the same {of}, so this step "
                f"measures {b.engine} itself, not a {of} upgrade")
    return (f"{a.engine} ran {of} {va.version} ({va.driver}), {b.engine} runs {of} {vb.version} ({vb.driver}): "
            f"a difference between them may be {of}'s own, not {b.engine}'s; the control (if any) tells")


def _judge(step: Step, records: list[CellRecord], unrun: int = 0) -> VerdictStep:
    """An engine passes when every cell passed: every threshold at every memory limit, integrity intact.
    An error cell is not a pass, but it is said apart from a measured failure."""
    statuses = [r.status for r in records]
    passed = bool(records) and not unrun and all(s == "passed" for s in statuses)
    errors = [f"{r.scenario}/{r.dir}: {r.error or 'no result'}" for r in records
              if r.status not in ("passed", "failed", "oom")]
    outcome = "passed" if passed else ("error" if errors and all(s not in ("failed", "oom") for s in statuses)
                                       else "failed")
    return VerdictStep(engine=step.engine, decision=step.decision, passed=passed, outcome=outcome, errors=errors,
                       cells=records, set=step.set, cells_unrun=unrun)


def _default_profile(tree: DecisionTree) -> str:
    sc, _ = load_scenario(resolve_path(tree.criteria[0].scenario))
    return sc.pick_profile(None) or "base"
