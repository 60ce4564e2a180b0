"""`make verdict`: walk scenarios/decision.yaml (SQLite → libSQL → Postgres → DuckDB → revisit) against its
criteria, running only what the walk needs: the first engine that meets every criterion at every memory
limit ends it. Each step's cells are sweep cells (resumable the same way); verdict.json records, per step,
every cell with each threshold's measured value, and the decision."""
from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

from harness.environment import utc_now
from harness.errors import EXIT_RUN_FAILED, ConfigError
from harness.results import CellRecord, Verdict, VerdictFile, VerdictStep, write_json
from harness.scenario.decision import DECISION_FILE, DecisionTree, Step, load_decision
from harness.scenario.load import load_scenario, resolve_path
from harness.sweep import Cell, CellOptions, SweepInterrupted, plan_cells, run_cells, sweep_dir_for


def caveats(tree: DecisionTree, records: list[CellRecord]) -> list[str]:
    """Where the cells ran smaller or shorter than the criteria ask: said first, never buried."""
    out = []
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


def verdict(profile: str | None, mems: list[str] | None, opts: CellOptions, results_root: Path,
            repeats: int = 1, scale: float | None = None, decision_path: Path = DECISION_FILE) -> int:
    tree = load_decision(decision_path)
    prof = profile or _default_profile(tree)
    if not mems:
        if prof not in tree.mems:
            raise ConfigError(f"{decision_path}: mems: no default for profile {prof!r}; give MEMS=\"...\"")
        mems = tree.mems[prof]
    spec = {"decision": tree.model_dump(), "profile": prof, "mems": mems, "scale": scale, "repeats": repeats,
            "opts": opts.asked()}
    root = sweep_dir_for(results_root, "verdict", prof, spec)
    root.mkdir(parents=True, exist_ok=True)
    meta = {"kind": "verdict-cells", "dir": str(root)}
    out = VerdictFile(decision_file=str(decision_path), profile=prof, mems=mems, repeats=repeats, dir=str(root),
                      criteria=[c.model_dump() for c in tree.criteria], steps=[])
    print(f"[verdict] {root}: walking {' → '.join(s.engine for s in tree.steps)} at MEMS {' '.join(mems)}",
          file=sys.stderr, flush=True)
    steps: list[VerdictStep] = []
    all_records: list[CellRecord] = []
    try:
        for step in tree.steps:
            records = []
            for crit in tree.criteria:
                cells = [Cell(crit.scenario, step.engine, m, scale, r) for m in mems for r in range(1, repeats + 1)]
                runs = plan_cells(cells, replace(opts, thresholds=tuple(crit.thresholds)), root, repeats)
                done = run_cells(runs, root / f"cells-{step.engine}-{crit.scenario}.json", meta)
                records += [c.model_copy(update={"criterion": crit.name, "measure_s": runs[0].plan.phases.measure_s})
                            for c in done.cells]
            all_records += records
            steps.append(_judge(step, records))
            out = out.model_copy(update={"steps": steps, "caveats": caveats(tree, all_records),
                                         "updated_utc": utc_now()})
            write_json(root / "verdict.json", out)
            print(f"[verdict] {step.engine}: {steps[-1].outcome}", file=sys.stderr, flush=True)
            if steps[-1].passed:
                break
    except SweepInterrupted as e:
        print(f"[verdict] interrupted in cell {e}; run the same command again to resume", file=sys.stderr)
        return EXIT_RUN_FAILED
    winner = next((s for s in steps if s.passed), None)
    out = out.model_copy(update={
        "verdict": Verdict(engine=winner.engine if winner else None,
                           decision=winner.decision if winner else tree.otherwise,
                           path=[f"{s.engine}: {s.outcome}" for s in steps]),
        "caveats": caveats(tree, all_records), "updated_utc": utc_now()})
    write_json(root / "verdict.json", out)
    from harness.report import write_report
    md, html = write_report(root)
    print(("CAVEAT: " + "; ".join(out.caveats) + "\n") if out.caveats else "", end="", file=sys.stderr)
    print(f"verdict: {out.verdict.decision}  (path: {', '.join(out.verdict.path)})", file=sys.stderr)
    print(root / "verdict.json")
    print(html)
    return 0 if winner else 1


def _judge(step: Step, records: list[CellRecord]) -> VerdictStep:
    """An engine passes when every cell passed: every threshold at every memory limit, integrity intact.
    An error cell is not a pass, but it is said apart from a measured failure."""
    statuses = [r.status for r in records]
    passed = bool(records) and all(s == "passed" for s in statuses)
    errors = [f"{r.scenario}/{r.dir}: {r.error or 'no result'}" for r in records
              if r.status not in ("passed", "failed", "oom")]
    outcome = "passed" if passed else ("error" if errors and all(s not in ("failed", "oom") for s in statuses)
                                       else "failed")
    return VerdictStep(engine=step.engine, decision=step.decision, passed=passed, outcome=outcome, errors=errors,
                       cells=records)


def _default_profile(tree: DecisionTree) -> str:
    sc, _ = load_scenario(resolve_path(tree.criteria[0].scenario))
    return sc.pick_profile(None) or "base"
