"""The tree's last leaf, measured: at each MEM where no step passed (and none errored), the designs of
scenarios/decision.yaml's `leaf` (matrix options that keep every version: a block log in front, the current ∪
history schema, the two together, each with the engine's own option that gave nothing up). They follow the tree:
an engine's designs before the next engine's, cheapest first within one, so a team learns first whether it can
stay on its engine. A design expected to pass somewhere (decision.yaml's estimate.passes, or passes_at_largest) is
walked from the smallest open MEM up: a pass implies a pass at every larger MEM (an assumption: verdict/controls.py
measures one such cell to check it), and a failure below costs a cell stopped early, so the design's full cells
(every criterion, a close call's runs) are paid once, at the smallest MEM it passes, not at each MEM above it. A
design the estimate expects to fail is walked from the largest MEM down instead, a failure there implying one
below, as the steps are. The first design that meets every criterion at a MEM is the answer there; where none
passes, the closest is named with where its block went."""
from __future__ import annotations

from itertools import groupby
from typing import Callable

from harness.results import CellRecord, LeafCell, MemAnswer, load_result
from harness.results.design import block_log_line, queryable_p99_ms
from harness.results.headroom import fragile
from harness.results.phases import describe
from harness.scenario.matrix import load_matrix
from harness.walks.verdict.answer import at_mem, closeness, matrix_cell
from harness.walks.verdict.headroom import check
from harness.walks.verdict.walk import log


def designs_in_order(tree) -> list[tuple[str, str]]:
    """(engine, design) pairs: engines in the tree's order (an engine the steps do not name after them), each
    engine's designs cheapest first (the matrix options' cost; the file's order among equals)."""
    if tree.leaf is None:
        return []
    mx = load_matrix()
    steps = [s.engine for s in tree.steps]
    rank = lambda e: steps.index(e) if e in steps else len(steps)          # noqa: E731
    pairs = [(rank(e), mx.engines[e].options[d].cost, j, e, d)
             for e, names in tree.leaf.designs.items() for j, d in enumerate(names)]
    return [(e, d) for *_, e, d in sorted(pairs)]


def run_leaf(walk, after_engine: Callable[[str], None] | None = None) -> list[LeafCell]:
    """The leaf's cells at every MEM the steps left without an engine (walk.open_mems()); `after_engine(engine)` once
    an engine's designs are done and a later engine's designs have a level left to run at (a walk that drops its
    states drops that engine's there, to make room; where none follows, its states stay for the implication controls
    and the closest alternative, which the 12-06 walk built again, ~6 min, after they had gone here)."""
    mems = walk.open_mems()
    if not mems:
        return []
    mx = load_matrix()
    expect = set(walk.tree.estimate.passes) | set(walk.tree.estimate.passes_at_largest)    # somewhere: walked up
    out: list[LeafCell] = []
    answered: set[str] = set()
    walk.reference_between("before the leaf")
    done = None             # the last engine whose designs ran: its states go only once another engine's run
    for engine, pairs in groupby(designs_in_order(walk.tree), key=lambda p: p[0]):
        if set(mems) <= answered:
            break
        if done is not None and after_engine is not None:
            after_engine(done)
        for _, design in pairs:
            out += _design(walk, engine, design, mx.engines[engine].options[design],
                           f"{engine}/leaf-{design}" in expect, mems, answered)
        done = engine
    return out


def _design(walk, engine: str, design: str, opt, up: bool, mems: list[str], answered: set[str]) -> list[LeafCell]:
    """One design (its matrix option) at the open MEMs not yet `answered` (updated here): walked up where the
    estimate expects it to pass somewhere, else down; stopped where its outcome implies the rest."""
    step = next((s for s in walk.tree.steps if s.engine == engine), None)
    settings = step.set if step is not None else {}
    order = [m for m in (reversed(mems) if up else mems) if m not in answered]
    out: list[LeafCell] = []
    below = None            # walking up: its pass today only at a smaller level, whose full cells imply this one's
    for i, mem in enumerate(order):
        log(f"leaf at {mem}: {engine} with {design} ({opt.says})")
        if below is not None:
            cell = _headroom_above(walk, below, mem, settings, opt)
        else:
            recs, headroom = walk.candidate(engine, settings, f"leaf-{design}", mem, opt)
            cell = leaf_cell(engine, design, opt.says, mem, recs, walk.root).model_copy(update={"headroom": headroom})
            below = (cell, recs) if up and fragile(cell) else None
        out.append(cell)
        log(f"leaf at {mem}: {engine} with {design}: {cell.outcome}{' today only' if fragile(cell) else ''}")
        held = cell.outcome == "pass" and not fragile(cell)     # a pass today only answers nothing yet
        answered |= {mem} if held else set()
        implied = order[i + 1:] if (held if up else cell.outcome == "fail") else []
        if implied:
            out += [cell.model_copy(update={"mem": m, "implied_from": mem, "cells": [], "runs": [],
                                            "outcome": "pass" if up else "implied"}) for m in implied]
            answered |= set(implied) if up else set()
            log(f"leaf: {engine} with {design} {cell.outcome}ed at {mem}: implied at {', '.join(implied)}")
            break
    return out


def _headroom_above(walk, below: tuple[LeafCell, list[CellRecord]], mem: str, settings: dict, opt) -> LeafCell:
    """A design that passed today only at a smaller level, at a larger one: its pass at the offered load is implied
    (a pass implies every larger level), so only its headroom is measured here, its latencies those of the cells
    below (a larger level's are no slower): a 60-block screen, not another 33 minutes of full cells."""
    cell, recs = below
    headroom = check(walk, cell.engine, settings, f"leaf-{cell.design}", mem, opt, recs)
    return cell.model_copy(update={"mem": mem, "implied_from": cell.mem, "cells": [], "runs": [], "headroom": headroom,
                                   "headroom_here": True})


def leaf_cell(engine: str, design: str, says: str, mem: str, recs: list[CellRecord], root) -> LeafCell:
    """A design's outcome at one MEM, with the first criterion's figures (its acknowledgement p99, the apply lag
    p99 under a block log) and where its block went."""
    base = matrix_cell(engine, mem, at_mem(recs), recs)
    first = recs[0] if recs else None
    r = load_result(root / first.scenario / first.dir / "result.json") if first else None
    m = r.metrics if r is not None else None
    bl = m.block_log if m is not None else None
    return LeafCell(engine=engine, design=design, says=says, mem=mem, outcome=base.outcome, cells=base.cells,
                    runs=base.runs, diagnosis=base.diagnosis, ack_p99_ms=m.commit_latency_ms.p99 if m else None,
                    lag_p99_blocks=bl.apply_lag_blocks.p99 if bl else None,
                    lag_p99_ms=bl.apply_lag_ms.p99 if bl else None, queryable_p99_ms=queryable_p99_ms(m) if m else None,
                    closeness=closeness(r.thresholds) if r is not None else None,
                    split=(block_log_line(bl) if bl else describe(m.block_phases)) if m else None)


def with_leaf(answers: list[MemAnswer], leaf: list[LeafCell]) -> list[MemAnswer]:
    """Each MEM without an engine, or with an engine that passes today only, gets what the leaf measured there: the
    first design that passed with headroom; else the engine that passes today only; else the first design that
    does (fragile); else the closest."""
    out = []
    for a in answers:
        cells = [c for c in leaf if c.mem == a.mem and c.outcome != "implied"]
        if (a.status != "none" and not a.fragile) or not cells:
            out.append(a)
            continue
        held = next((c for c in cells if c.outcome == "pass" and not fragile(c)), None)
        passed = held or (None if a.fragile else next((c for c in cells if c.outcome == "pass"), None))
        if passed is None and a.fragile:
            out.append(a)
            continue
        if passed is not None:
            at = f" (implied by its pass at {passed.implied_from}, not run here)" if passed.implied_from else ""
            decision = f"Deploy {passed.engine} with {passed.says}"
            text = (f"durable in {_ms(passed.ack_p99_ms)} ms (acknowledgement p99)"
                    + (f", queryable in {_ms(passed.queryable_p99_ms)} ms (p99 from its due time)"
                       if passed.queryable_p99_ms is not None else "")
                    + (f", index lag p99 {passed.lag_p99_blocks:g} blocks" if passed.lag_p99_blocks is not None else "")
                    + f"{at}; no engine as deployed met the criteria here")
        else:
            close = min(cells, key=lambda c: c.closeness if c.closeness is not None else float("inf"))
            decision = a.decision
            text = (f"no engine as deployed, and no design passes: closest {close.engine} with {close.says} "
                    f"({'; '.join(close.runs) + '; ' if close.runs else ''}{close.diagnosis or close.outcome}; "
                    f"{close.split or 'no split'})")
        out.append(a.model_copy(update={
            "status": "answered" if passed else "none", "engine": None, "tuned_with": None,
            "design": f"{passed.engine}: {passed.design}"
            if passed else None, "decision": decision, "leaf": text, "runs": passed.runs if passed else [],
            "headroom": passed.headroom if passed else None, "fragile": passed is not None and fragile(passed)}))
    return out


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v:,.0f}"
