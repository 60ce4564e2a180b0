"""`make verdict`: walk scenarios/decision.yaml (SQLite → libSQL → Postgres → DuckDB → revisit) against its
criteria, running only what the walk needs: the first engine that meets every criterion at every memory
limit ends it. Each step's cells are sweep cells (resumable the same way); verdict.json records, per step,
every cell with each threshold's measured value, and the decision."""
from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import yaml
from pydantic import Field, ValidationError, field_validator

from harness import registry
from harness.errors import EXIT_RUN_FAILED, ConfigError
from harness.scenario.load import format_error, load_scenario, resolve_path
from harness.scenario.model import Strict, ThresholdExprs
from harness.environment import utc_now
from harness.runner.result import write_json
from harness.sweep import Cell, CellOptions, SweepInterrupted, plan_cells, run_cells, sweep_dir_for

VERDICT_VERSION = 1
DECISION_FILE = Path(__file__).resolve().parents[1] / "scenarios" / "decision.yaml"


class Target(Strict):
    scale: float = Field(gt=0)
    measure_s: float = Field(gt=0)


class Criterion(Strict):
    name: str
    scenario: str
    thresholds: ThresholdExprs = Field(min_length=1)
    target: Target

    @field_validator("scenario")
    @classmethod
    def _scenario(cls, v: str) -> str:
        try:
            resolve_path(v)
        except ConfigError as e:
            raise ValueError(str(e)) from None
        return v


class Step(Strict):
    engine: str
    decision: str

    @field_validator("engine")
    @classmethod
    def _engine(cls, v: str) -> str:
        if v not in registry.ENGINE_NAMES:
            raise ValueError(f"unknown engine {v!r}; allowed: {', '.join(registry.ENGINE_NAMES)}")
        return v


class DecisionTree(Strict):
    description: str = ""
    steps: list[Step] = Field(min_length=1)
    otherwise: str
    criteria: list[Criterion] = Field(min_length=1)
    mems: dict[str, list[str]] = {}


def load_decision(path: Path = DECISION_FILE) -> DecisionTree:
    try:
        raw = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as e:
        raise ConfigError(f"{path}: cannot read: {e}") from None
    try:
        return DecisionTree.model_validate(raw)
    except ValidationError as e:
        raise ConfigError(format_error(path, e, DecisionTree)) from None


def caveats(tree: DecisionTree, records: list[dict]) -> list[str]:
    """Where the cells ran smaller or shorter than the criteria ask: said first, never buried."""
    out = []
    for crit in tree.criteria:
        cells = [r for r in records if r["scenario"] == crit.scenario and r.get("state") == "complete"]
        if not cells:
            continue
        scale = max(r["scale"] for r in cells)
        measure_s = max(r.get("measure_s") or 0 for r in cells)
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
    steps: list[dict] = []
    out = {"version": VERDICT_VERSION, "kind": "verdict", "decision_file": str(decision_path), "profile": prof,
           "mems": mems, "repeats": repeats, "dir": str(root), "criteria": [c.model_dump() for c in tree.criteria],
           "steps": steps, "verdict": None}
    print(f"[verdict] {root}: walking {' → '.join(s.engine for s in tree.steps)} at MEMS {' '.join(mems)}",
          file=sys.stderr, flush=True)
    all_records: list[dict] = []
    try:
        for step in tree.steps:
            records = []
            for crit in tree.criteria:
                cells = [Cell(crit.scenario, step.engine, m, scale, r) for m in mems for r in range(1, repeats + 1)]
                runs = plan_cells(cells, replace(opts, thresholds=tuple(crit.thresholds)),
                                  root, repeats)
                done = run_cells(runs, root / f"cells-{step.engine}-{crit.scenario}.json", meta)
                records += [{**c, "criterion": crit.name, "measure_s": runs[0].plan.phases.measure_s}
                            for c in done["cells"]]
            all_records += records
            steps.append(_judge(step, records))
            out["caveats"] = caveats(tree, all_records)
            write_json(root / "verdict.json", {**out, "updated_utc": utc_now()})
            print(f"[verdict] {step.engine}: {steps[-1]['outcome']}", file=sys.stderr, flush=True)
            if steps[-1]["passed"]:
                break
    except SweepInterrupted as e:
        print(f"[verdict] interrupted in cell {e}; run the same command again to resume", file=sys.stderr)
        return EXIT_RUN_FAILED
    winner = next((s for s in steps if s["passed"]), None)
    out["verdict"] = {"engine": winner["engine"] if winner else None,
                      "decision": winner["decision"] if winner else tree.otherwise,
                      "path": [f"{s['engine']}: {s['outcome']}" for s in steps]}
    out["caveats"] = caveats(tree, all_records)
    out["updated_utc"] = utc_now()
    write_json(root / "verdict.json", out)
    from harness.report import write_report
    md, html = write_report(root)
    print(("CAVEAT: " + "; ".join(out["caveats"]) + "\n") if out["caveats"] else "", end="", file=sys.stderr)
    print(f"verdict: {out['verdict']['decision']}  (path: {', '.join(out['verdict']['path'])})", file=sys.stderr)
    print(root / "verdict.json")
    print(html)
    return 0 if winner else 1


def _judge(step: Step, records: list[dict]) -> dict:
    """An engine passes when every cell passed: every threshold at every memory limit, integrity intact.
    An error cell is not a pass, but it is said apart from a measured failure."""
    statuses = [r.get("status") for r in records]
    passed = bool(records) and all(s == "passed" for s in statuses)
    errors = [f"{r['scenario']}/{r['dir']}: {r.get('error') or 'no result'}" for r in records
              if r.get("status") not in ("passed", "failed", "oom")]
    outcome = "passed" if passed else ("error" if errors and all(s not in ("failed", "oom") for s in statuses)
                                       else "failed")
    cells = [{k: r.get(k) for k in ("scenario", "criterion", "dir", "mem", "mem_limit_bytes", "scale", "repeat",
                                    "runtime", "status", "error", "p50_ms", "p99_ms", "max_ms", "rows_per_s",
                                    "integrity_ok", "thresholds", "early_abort")} for r in records]
    return {"engine": step.engine, "decision": step.decision, "passed": passed, "outcome": outcome,
            "errors": errors, "cells": cells}


def _default_profile(tree: DecisionTree) -> str:
    sc, _ = load_scenario(resolve_path(tree.criteria[0].scenario))
    return sc.pick_profile(None) or "base"

