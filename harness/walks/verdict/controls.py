"""The walk's two assumptions, each checked once on a cell it implied (issue 64): a failure at a larger MEM implies
one at every smaller MEM (the steps are walked largest first), and a pass at a smaller MEM implies one at every
larger MEM (the leaf's designs are walked smallest first). Both are assumptions: a bigger cache was once slower
here. After the walk, the first cell each direction implied is measured, once (a control: never confirmed): an
implied failure on the criteria in order until one fails (the one that failed above may be any), an implied pass
on the first criterion screened over decision.yaml's screen_blocks (a full phase cost 14.5 min of a walk that must
end in a sitting; a block over the line or an applier falling behind shows in the screen); the report prints
whether it agreed. Where a direction implied nothing, it says so."""
from __future__ import annotations

from harness.results import ImplicationControl, LeafCell
from harness.scenario.matrix import load_matrix
from harness.walks.verdict.confirm import runs_outcome
from harness.walks.verdict.walk import CONTROL, log, screen

BELOW, ABOVE = "failure implies below", "pass implies above"
OWN = "own"          # the engine's own settings, as an implication control's tag says it


def control_tag(what: str | None) -> str:
    """The tag of an implication control's cells: apart from the cells it checks, naming what it checks."""
    return f"implied-{what or OWN}"


def checked(tag: str) -> str | None:
    """What an implication control's tag checks: a design or option, '' for the engine's own settings; None: the
    tag is no implication control's."""
    if not tag.startswith("implied-"):
        return None
    what = tag.removeprefix("implied-")
    return "" if what == OWN else what


def implication_controls(walk, leaf: list[LeafCell]) -> list[ImplicationControl]:
    return [_failure_below(walk, leaf), _pass_above(walk, leaf)]


def _failure_below(walk, leaf: list[LeafCell]) -> ImplicationControl:
    implied = next((c for c in walk.matrix if c.outcome == "implied"), None)
    if implied is None:
        leaf_failure = next((c for c in leaf if c.implied_from and c.outcome == "implied"), None)
        if leaf_failure is not None:
            return _design(walk, BELOW, leaf_failure, "fail", CONTROL)
        return ImplicationControl(direction=BELOW, engine="-", mem="-", expected="fail",
                                  note="no cell was implied failed: nothing to check")
    step = next(s for s in walk.tree.steps if s.engine == implied.engine)
    source = next((c.mem for c in walk.matrix if c.engine == implied.engine and c.outcome == "fail"), None)
    return _measure(walk, BELOW, implied.engine, None, implied.mem, source, "fail", step.set, None, CONTROL)


def _pass_above(walk, leaf: list[LeafCell]) -> ImplicationControl:
    implied = next((c for c in leaf if c.implied_from and c.outcome == "pass"), None)
    if implied is None:
        return ImplicationControl(direction=ABOVE, engine="-", mem="-", expected="pass",
                                  note="no cell was implied passed: nothing to check")
    return _design(walk, ABOVE, implied, "pass", screen(walk.tree.screen_blocks, "control, "))


def _design(walk, direction: str, implied: LeafCell, expected: str, role) -> ImplicationControl:
    steps = {s.engine: s for s in walk.tree.steps}
    opt = load_matrix().engines[implied.engine].options[implied.design]
    settings = steps[implied.engine].set if implied.engine in steps else {}
    return _measure(walk, direction, implied.engine, implied.design, implied.mem, implied.implied_from, expected,
                    settings, opt, role)


def _measure(walk, direction: str, engine: str, what: str | None, mem: str, source: str | None, expected: str,
             settings: dict, option, role) -> ImplicationControl:
    log(f"implication control ({direction}): {engine}{' with ' + what if what else ''} at {mem}, implied "
        f"{expected} by {source}; measured once")
    recs = walk.engine_at(engine, settings, control_tag(what), mem, option, role)
    outcome = runs_outcome(recs) if recs else "error"
    measured = {"passed": "pass", "failed": "fail"}.get(outcome)
    if any(r.status == "oom" for r in recs):
        measured = "fail"
    agreed = None if measured is None else measured == expected
    log(f"implication control ({direction}): {outcome}; "
        + ("agreed" if agreed else "DISAGREED" if agreed is False else "no measurement"))
    return ImplicationControl(direction=direction, engine=engine, what=what, mem=mem, implied_from=source,
                              expected=expected, outcome=outcome, agreed=agreed, cells=recs)


def with_controls(answers: list, controls: list[ImplicationControl]) -> list:
    """An answer implied from another level says what its implication control measured at its own, where one did
    (on 11-29 the 5137m answer quoted 2568m's figures while its control had run the design at 5137m)."""
    out = []
    for a in answers:
        c = next((c for c in controls if c.direction == ABOVE and c.mem == a.mem and c.cells and a.design
                  and a.design.endswith(f": {c.what}")), None)
        if c is None:
            out.append(a)
            continue
        first = c.cells[0]
        said = f"; measured here by its implication control ({first.label}): {c.outcome}" + (
            f", p99 {first.p99_ms:,.1f} ms" if first.p99_ms is not None else "")
        out.append(a.model_copy(update={"leaf": (a.leaf or "") + said}))
    return out
