"""Each target measured in this sitting the way the published walk measured it, through the walk's own code: a
candidate with every criterion and, where it passed, its capacity measured on itself; an implied answer's control
screened as the walk's implication control was; a headroom measured at a level whose pass came from below."""
from __future__ import annotations

from harness.results import CellRecord, VerdictFile
from harness.results.reproduce import Figure, Target
from harness.scenario.matrix import load_matrix
from harness.walks.reproduce.targets import LEAF, figures, label_of
from harness.walks.verdict.controls import control_tag
from harness.walks.verdict.headroom import check
from harness.walks.verdict.roles import screen


def measure(walk, t: Target, done: dict, published: VerdictFile) -> Target:
    """done: (engine, tag, mem) -> (records, headroom) of the candidates measured so far in this sitting."""
    settings = next((s.set for s in walk.tree.steps if s.engine == t.engine), {})
    opt = load_matrix().engines[t.engine].options[t.tag.removeprefix(LEAF)] if t.tag else None
    if t.role == "control":
        recs = walk.engine_at(t.engine, settings, control_tag(t.tag.removeprefix(LEAF) or None), t.mem, opt,
                              screen(walk.tree.screen_blocks, "control, "))
        return _filled(t, recs, [], label_of(recs, [], None), published, None)
    where = t.headroom_from or t.mem
    if (t.engine, t.tag, where) not in done:
        done[(t.engine, t.tag, where)] = walk.candidate(t.engine, settings, t.tag, where, opt)
    recs, h = done[(t.engine, t.tag, where)]
    if t.headroom_from:        # its pass is the level below's; its headroom is measured here
        h = check(walk, t.engine, settings, t.tag, t.mem, opt, recs) if label_of(recs, [], None) == "passes" else None
        recs_here = []
    else:
        recs_here = recs
    screens = _records(walk, h.screen_cells) if h is not None else []
    label = label_of(recs, screens, h.passed if h is not None else None)
    return _filled(t, recs_here, screens, label, published, h)


def _records(walk, cells: list[str]) -> list[CellRecord]:
    """The walk's records of the named cells (<scenario>/<dir>), the last of each (a disturbed first run is kept
    beside its rerun)."""
    by_name = {f"{r.scenario}/{r.dir}": r for r in walk.records}
    return [by_name[c] for c in cells if c in by_name]


def passes(recs: list[CellRecord], screens: list[CellRecord]) -> dict[str, bool]:
    """Each figure's pass, by the names targets.figures gives them."""
    out = {}
    for prefix, cells in (("", recs), ("headroom screen, ", screens)):
        for r in cells:
            for th in r.thresholds:
                out[f"{prefix}{r.scenario}: {th.expr}"] = th.passed
    return out


def _filled(t: Target, recs: list[CellRecord], screens: list[CellRecord], label, published: VerdictFile,
            headroom) -> Target:
    """The target with this sitting's label, figures and cells, and, where its label changed, the figure it
    changed on: the first whose pass flipped, else the headroom's latency times m, else its screen."""
    mine = figures(recs, screens)           # this sitting's values, in the field the published side fills
    now = {f.name: f.published for f in mine}
    figs = [f.model_copy(update={"reproduced": now.pop(f.name, None)}) for f in t.figures]
    figs += [f.model_copy(update={"published": None, "reproduced": now[f.name]}) for f in mine if f.name in now]
    changed = None
    if label != t.published:
        then = passes(*_published_records(published, t))
        here = passes(recs, screens)
        changed = next((f"{n}: {'passed' if then[n] else 'failed'}, now {'passed' if here[n] else 'failed'}"
                        for n in here if n in then and then[n] != here[n]), None)
        if changed is None and headroom is not None and headroom.capacity is not None:
            c = headroom.capacity
            changed = f"capacity {c.figure()} against the {headroom.multiple:g}x line" + (
                f" ({c.binding()})" if c.binding() else "")
        if changed is None and headroom is not None and headroom.latency_over:
            changed = f"headroom: {headroom.latency_over[0]}"
        if changed is None and headroom is not None and headroom.close_call is not None:
            changed = f"a close call: {headroom.close_call}"
        if changed is None and headroom is not None and headroom.screen != "passed":
            changed = f"headroom screen at {headroom.multiple:.2f}x: {headroom.screen}"
    cap = headroom.capacity if headroom is not None else None
    if cap is not None or t.published_capacity is not None:     # the capacity itself, beside the walk's
        figs.append(Figure(name="capacity (x the offered load)", timed=False,
                           published=t.published_capacity.multiple if t.published_capacity else None,
                           reproduced=cap.multiple if cap else None))
    return t.model_copy(update={"reproduced": label, "figures": figs, "cells": recs + screens, "changed_on": changed,
                                "capacity": cap})


def _published_records(v: VerdictFile, t: Target) -> tuple[list[CellRecord], list[CellRecord]]:
    named = {f"{r.scenario}/{r.dir}": r for r in v.cells}
    cells = [named[c] for c in t.published_cells if c in named]
    screens = [c for c in cells if (c.label or "").startswith("headroom screen")]
    return [c for c in cells if c not in screens], screens

