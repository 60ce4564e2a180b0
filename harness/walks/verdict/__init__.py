"""`make verdict`: walk scenarios/decision.yaml (SQLite → libSQL → Postgres → DuckDB → revisit) against its
criteria and answer per memory level: at each MEM, the first engine that meets every criterion there.
plan.py says what will run (levels largest first, thresholds as the profile can judge them, the disk),
walk.py runs only what the answers need (a failure implies one at every smaller level; an error makes its
level inconclusive), answer.py turns the cells into diagnoses, a matrix and the answers. verdict.json
records all of it; the exit code is 0 when every level has an engine, 1 when one has none, 3 when one is
inconclusive."""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

from harness import cell_states
from harness.environment import utc_now
from harness.errors import EXIT_RUN_FAILED, ConfigError
from harness.results import Verdict, VerdictFile, VerdictStep, write_json
from harness.scenario.decision import DECISION_FILE, DecisionTree, RatioMems, as_overrides, load_decision
from harness.scenario.load import load_scenario, resolve_path
from harness.walks.sweep import CellOptions, SweepInterrupted, sweep_dir_for
from harness.walks.verdict import answer
from harness.walks.verdict.alternatives import closest_alternative
from harness.walks.verdict.plan import MONOTONICITY, at_reference, caveats, criterion_plans, order_mems
from harness.walks.verdict.versions import library_versions, version_note
from harness.walks.verdict.controls import implication_controls, with_controls
from harness.walks.verdict.estimate import estimate
from harness.walks.verdict.headroom import reference_cell
from harness.walks.verdict.leaf import run_leaf, with_leaf
from harness.walks.verdict.states import (drop_leaf_engine_states, drop_new_states, drop_step_states, leaf_engine,
                                          state_ids)
from harness.walks.verdict.typed import readers_answers, typed
from harness.walks.verdict.trade_offs import screen_trade_offs
from harness.walks.verdict.walk import Walk, log


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


@dataclass
class Prepared:
    """What a verdict walks, before any cell runs (also what its Kubernetes manifests place)."""
    tree: DecisionTree
    profile: str
    mems: list[str]
    memory_basis: str
    plans: dict
    criteria: list
    notes: list[str]
    opts: CellOptions
    root: Path
    drop_states: bool = False     # asked, or needed: the disk cannot hold every state at once


def prepare(profile: str | None, mems: list[str] | None, opts: CellOptions, results_root: Path, repeats: int = 1,
            scale: float | None = None, decision_path: Path = DECISION_FILE, drop_states: bool = False,
            here: bool = True, durability: str | None = None) -> Prepared:
    """here: the walk runs on this machine (its disk is checked); not for a cluster's manifests. durability: the
    walk's (DURABILITY=), over the decision file's."""
    tree = load_decision(decision_path)
    if durability:
        tree = tree.model_copy(update={"durability": durability})
    prof = profile or _default_profile(tree)
    opts = replace(opts, profile=prof, overrides=(*opts.overrides, *_at_durability(tree)))
    mems, memory_basis = _mems(tree, prof, mems, scale, opts, decision_path)
    plans = _first_plans(tree, mems, scale, opts)
    criteria = criterion_plans(tree, lambda sc: plans[(sc, tree.steps[0].engine)].phases.measure_s)
    notes = [n for cp in criteria for n in cp.notes]
    if here:            # where a clone does not fit, each cell moves its state in when its turn comes
        drop_states = fit_disk(list(plans.values()), drop_states)
    spec = {"decision": tree.model_dump(), "profile": prof, "mems": mems, "scale": scale, "repeats": repeats,
            "opts": opts.asked()}
    root = sweep_dir_for(results_root, "verdict", prof, spec)
    if here:
        opts = pinned_runtime(opts, plans[(tree.criteria[0].scenario, tree.steps[0].engine)], root)
    return Prepared(tree, prof, mems, memory_basis, plans, criteria, notes, opts, root, drop_states)


def _at_durability(tree: DecisionTree) -> tuple[str, ...]:
    """Every cell at the walk's one durability (like for like), as a scenario override."""
    return (f"durability={tree.durability}",) if tree.durability else ()


def pinned_runtime(opts: CellOptions, plan, root: Path) -> CellOptions:
    """RUNTIME=auto that finds no current image when the walk starts runs the whole walk locally (kept in its
    folder, so a resumed walk does too): images built beside it (a `make test`) would otherwise move its later
    cells into containers, and a walk's cells should differ only in what the tree varies."""
    from harness.runtime.docker import choose_runtime
    pin = root / "runtime"
    if opts.runtime != "auto":
        return opts
    if pin.is_file():
        runtime = pin.read_text().strip()
    else:
        runtime, why = choose_runtime("auto", plan)
        log(f"{why}{': the whole walk runs locally' if runtime == 'local' else ''}")
        if runtime != "local":
            return opts         # images current now: auto (a crash cell runs locally whatever the runtime)
        root.mkdir(parents=True, exist_ok=True)
        pin.write_text(runtime + "\n")
    return replace(opts, runtime=runtime)


def fit_disk(plans: list, drop_states: bool) -> bool:
    """Whether the walk drops each engine's states after its step: when asked (DROP_STATES=1), or on its own where
    the disk cannot hold every state the walk may build (a 1x walk needs ~160 GiB that way): said, not refused."""
    if not drop_states:
        try:
            cell_states.check_walk_disk(plans, False, "verdict", skip_later=True)
            return False
        except ConfigError as e:
            log(f"{e}: so each engine's states go once its step is done, as with DROP_STATES=1")
    cell_states.check_walk_disk(plans, True, "verdict", skip_later=True)
    return True


def verdict(profile: str | None, mems: list[str] | None, opts: CellOptions, results_root: Path,
            repeats: int = 1, scale: float | None = None, decision_path: Path = DECISION_FILE,
            all_cells: bool = False, drop_states: bool = False, knees: bool = False,
            durability: str | None = None) -> int:
    """all_cells: run the cells a failure at a larger MEM implies, and the criteria after a failed one.
    knees: then search how far each failing engine is from passing (verdict/knees.py)."""
    started = time.monotonic()      # the walk's clock: from here, the state that sizes MEM included, as the estimate
    states_before = state_ids()     # with drop_states, what the walk builds goes at its end, whatever built it
    pre = prepare(profile, mems, opts, results_root, repeats, scale, decision_path, drop_states, durability=durability)
    drop_states = pre.drop_states
    tree, prof, mems, memory_basis, plans, criteria, notes, opts, root = (
        pre.tree, pre.profile, pre.mems, pre.memory_basis, pre.plans, pre.criteria, pre.notes, pre.opts, pre.root)
    root.mkdir(parents=True, exist_ok=True)
    ref = lambda m: at_reference(m, tree, next(iter(plans.values())).scale)  # noqa: E731
    out = VerdictFile(decision_file=str(decision_path), profile=prof, mems=mems, repeats=repeats, dir=str(root),
                      criteria=[c.model_dump() for c in tree.criteria], steps=[], memory_basis=memory_basis,
                      monotonicity=MONOTONICITY, durability=tree.durability, asked=opts.asked())
    log(f"{root}: walking {' → '.join(s.engine for s in tree.steps)} at MEMS {' '.join(mems)} (largest first)")

    def save(walk: Walk) -> None:
        nonlocal out
        out = out.model_copy(update={
            "steps": walk.steps, "matrix": walk.matrix, "leaf": leaf, "implication_controls": controls,
            "cells": walk.records, "reference": walk.reference,
            **_answers(walk, leaf, controls, ref), "alternative": alternative,
            "caveats": caveats(tree, walk.records, memory_basis, notes), "walk_s": round(time.monotonic() - walk.started, 1),
            "cells_implied": sum(c.outcome == "implied" for c in walk.matrix), "updated_utc": utc_now()})
        write_json(root / "verdict.json", out)
        if drop_states and walk.steps:
            drop_step_states(walk.steps[-1].engine, plans, walk)

    leaf, controls, alternative = [], [], None
    walk = Walk(tree, mems, criteria, opts, root, repeats, scale, all_cells, on_step=save, started=started)
    out = out.model_copy(update={"estimate": _expect(walk, prof, drop_states)})
    try:
        steps = walk.run()
        leaf = run_leaf(walk, (lambda e: drop_leaf_engine_states(e, plans, walk)) if drop_states else None)
        controls, alternative = _after_the_answer(walk, leaf, all_cells)
        if drop_states:
            _drop_leaf_states(walk, leaf, plans, states_before)
    except SweepInterrupted as e:
        print(f"[verdict] interrupted in cell {e}; run the same command again to resume", file=sys.stderr)
        return EXIT_RUN_FAILED
    save(walk)
    if knees:
        from harness.walks.verdict.knees import run_knees
        try:
            run_knees(tree.criteria[0].scenario, walk.matrix, opts, root)
        except SweepInterrupted as e:
            print(f"[verdict] interrupted in a knee search ({e}); run the same command again to resume", file=sys.stderr)
            return EXIT_RUN_FAILED
    out = _verdict(_versions(tree, out, steps, root), steps)
    write_json(root / "verdict.json", out)
    from harness.report import write_report
    _, html = write_report(root, mixed_nodes=opts.mixed_nodes)
    return _summary(out, walk.cells_run, root, html)


def _after_the_answer(walk: Walk, leaf: list, all_cells: bool) -> tuple[list, object]:
    """What follows the answer: the implication controls, the closest alternative and the end's reference cell (with
    headroom), then the trade-offs' screens, never the answer, within the walk's budget (verdict/trade_offs.py)."""
    controls = [] if all_cells else implication_controls(walk, leaf)
    alternative = closest_alternative(walk, leaf) if walk.headroom_on and not all_cells else None
    if walk.headroom_on:
        reference_cell(walk, "end")
    screen_trade_offs(walk)
    return controls, alternative


def _drop_leaf_states(walk: Walk, leaf: list, plans: dict, before: set[str]) -> None:
    """The leaf's own states (its engines' again, each design's schema, what was kept for it), then whatever else
    the walk built."""
    for engine in dict.fromkeys([*(c.engine for c in leaf), *leaf_engine(walk)]):
        drop_step_states(engine, plans, walk, leaf_done=True)
    drop_new_states(before)


def _answers(walk: Walk, leaf, controls, ref) -> dict:
    """verdict.json's answers (typed, from every cell the walk ran) and the stricter readers' answer per level."""
    tree, mems = walk.tree, walk.mems
    found = with_controls(with_leaf(answer.answers(tree, mems, walk.matrix, ref), leaf), controls)
    return {"answers": typed(found, walk.matrix, leaf, walk.records, {s.engine: s.set for s in tree.steps}),
            "readers": readers_answers(mems, tree.readers.strict_ms, walk.matrix, leaf, walk.records)}


def _verdict(out: VerdictFile, steps: list[VerdictStep]) -> VerdictFile:
    """The one-line verdict over the answers: the engine where one engine answers every level."""
    answers = out.answers
    engines = {a.engine for a in answers}
    winner = next((s for s in steps if s.engine in engines), None) if len(engines) == 1 else None
    return out.model_copy(update={
        "verdict": Verdict(engine=winner.engine if winner else None, decision=answer.sentence(answers),
                           path=[f"{s.engine}: {s.outcome}" for s in steps], note=_control_note(winner)),
        "updated_utc": utc_now()})


def _expect(walk: Walk, profile: str, drop_states: bool):
    """The estimate, printed before the first cell."""
    walk.expected = e = estimate(walk, profile, drop_states)
    log(f"expected: {e.cells} cells, about {e.minutes:.0f} min ({e.state_minutes:.0f} min of them building states; "
        f"{', '.join(f'{n} {k}' for k, n in e.by_label.items())}): {e.basis}")
    if e.path:
        log(f"expected path: {'; '.join(e.path)}")
    if e.not_foreseen():
        log(f"not foreseen: {e.not_foreseen()}")
    return e


def _summary(out: VerdictFile, cells_run: int, root: Path, html: Path) -> int:
    """The answers and the walk on stderr, the files on stdout; the exit code (0 every level answered, by an engine
    or a design, 1 one has none, 3 one is inconclusive)."""
    answers = out.answers
    print(("CAVEAT: " + "; ".join(out.caveats) + "\n") if out.caveats else "", end="", file=sys.stderr)
    for a in answers:
        print(f"verdict at {a.mem}: {a.figures()}"
              + (f"\n  the last leaf, measured: {a.leaf}" if a.leaf and not a.design else ""), file=sys.stderr)
    from harness.report.answer_table import HEADERS, answer_rows, readers_line
    if out.readers:
        print(readers_line(out), file=sys.stderr)
    if out.alternative:
        print(out.alternative.says(), file=sys.stderr)
    for row in answer_rows(out):
        print("\n".join([f"  {row[0]}: {row[1]}", *(f"    {h}: {x}" for h, x in zip(HEADERS[2:], row[2:]))]),
              file=sys.stderr)
    if out.reference:
        print("reference cells (the sitting's speed): " + "; ".join(
            f"{r.at} {r.service_p50_ms:,.0f} ms" if r.service_p50_ms else f"{r.at} -" for r in out.reference)
              + (f"; every cell at durability {out.durability}" if out.durability else ""), file=sys.stderr)
    for c in out.implication_controls:
        print(f"implication control, {c.direction}: " + (c.note or f"{c.engine}{' with ' + c.what if c.what else ''} "
              f"at {c.mem} (implied {c.expected} by {c.implied_from}): {c.outcome}, "
              f"{'agreed' if c.agreed else 'DISAGREED' if c.agreed is False else 'no measurement'}"), file=sys.stderr)
    est = out.estimate
    print(f"walk: {out.walk_s / 60:.1f} min, {cells_run} cells run, {out.cells_implied} implied "
          + (f"(expected {est.cells} cells, {est.minutes:.0f} min) " if est else "")
          + f"(path: {', '.join(out.verdict.path)})", file=sys.stderr)
    print(root / "verdict.json")
    print(html)
    if any(a.status == "inconclusive" for a in answers):
        return EXIT_RUN_FAILED
    return 0 if all(a.status == "answered" for a in answers) else 1


def _mems(tree: DecisionTree, prof: str, mems: list[str] | None, scale, opts, decision_path) -> tuple[list[str], str | None]:
    if mems:
        return order_mems(mems), None
    if prof not in tree.mems:
        raise ConfigError(f"{decision_path}: mems: no default for profile {prof!r}; give MEMS=\"...\"")
    spec = tree.mems[prof]
    if isinstance(spec, RatioMems):
        found, basis = ratio_mems(tree, spec, prof, scale, opts)
        return order_mems(found), basis
    return order_mems(spec), None


def _first_plans(tree: DecisionTree, mems: list[str], scale, opts: CellOptions) -> dict:
    """One resolved plan per criterion and engine (at the largest MEM): a bad setting stops the walk before it
    starts, and the disk check knows every state the walk may build."""
    from harness.scenario.plan import resolve_plan
    plans = {}
    for crit in tree.criteria:
        for step in tree.steps:
            plans[(crit.scenario, step.engine)] = resolve_plan(
                crit.scenario, step.engine, profile=opts.profile, scale=scale, mem=mems[0],
                overrides=[*opts.overrides, *as_overrides(step.engine, step.set)])
    return plans


def _versions(tree: DecisionTree, out: VerdictFile, steps: list[VerdictStep], root: Path) -> VerdictFile:
    if not tree.compare_versions:
        return out
    table = library_versions(tree, steps, root)
    steps = [s.model_copy(update={"version_note": version_note(tree, i, table)}) for i, s in enumerate(steps)]
    notes = [n for n in (version_note(tree, i, table) for i in range(len(tree.steps))) if n]
    return out.model_copy(update={"versions_of": tree.compare_versions.of, "library_versions": table,
                                  "version_notes": notes, "steps": steps})


def _control_note(winner: VerdictStep | None) -> str | None:
    c = winner.control if winner else None
    if c is None:
        return None
    what = _settings_text(c.set) + "".join(f" and {o}" for o in c.options)
    if c.passed:
        return (f"{c.engine} with {what} also passed the same cells: the change alone would have "
                f"done, so moving to {winner.engine} is not what made the difference")
    return f"{c.engine} with {what} did not pass the same cells ({c.outcome}): {winner.engine} did"


def _settings_text(settings: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in settings.items()) or "its defaults"


def _default_profile(tree: DecisionTree) -> str:
    sc, _ = load_scenario(resolve_path(tree.criteria[0].scenario))
    return sc.pick_profile(None) or "base"
