"""What a reproduction measures, read from the published verdict alone: at each level its answer (as the walk measured
it: every criterion and its headroom screen; an answer implied from another level at the level it was measured at,
and at its own where the walk's implication control screened it there, or where that is the largest level, which
the walk implied and never measured), and the rejected alternative closest to its line. Each target keeps the
published cells' tag, so its cells carry the published cells' names."""
from __future__ import annotations

from harness.results import CellRecord, VerdictFile
from harness.results.reproduce import Figure, Label, Target
from harness.scenario.matrix import load_matrix
from harness.scenario.thresholds import METRICS, parse_threshold
from harness.units import parse_size_bytes
from harness.walks.verdict.answer import at_mem, closeness as closeness_of
from harness.walks.verdict.roles import headroom_tag

CANDIDATE = "candidate"
LEAF = "leaf-"


def tag_of(rec: CellRecord) -> str:
    """The walk's tag of a cell, from its name (sweep.cell_name: <engine>[-<tag>]-<mem>-s<scale>[-r<n>]); a rerun's
    (walk.engine_at: <tag>-again) is its cell's."""
    name = rec.dir.rsplit("-r", 1)[0] if rec.repeat > 1 else rec.dir
    suffix = f"-{rec.mem or 'nolimit'}-s{rec.scale:g}"
    if name == rec.engine + suffix or not name.endswith(suffix):
        return ""
    tag = name[len(rec.engine) + 1:len(name) - len(suffix)]
    return "" if tag == "again" else tag.removesuffix("-again")     # a disturbed cell's rerun is the cell's own


def says(engine: str, tag: str) -> str:
    """'sqlite at its own settings', 'sqlite with <the option's words>'."""
    if not tag:
        return f"{engine} at its own settings"
    opt = load_matrix().engines[engine].options.get(tag.removeprefix(LEAF))
    return f"{engine} with {opt.says if opt else tag}"


def records(v: VerdictFile, engine: str, tag: str, mem: str, label: str = CANDIDATE) -> list[CellRecord]:
    return [r for r in v.cells if r.engine == engine and r.mem == mem and tag_of(r) == tag
            and (r.label or "").startswith(label)]


def closeness(recs: list[CellRecord]) -> float | None:
    """The cells' distance from their lines (verdict/answer.closeness over all their thresholds)."""
    return closeness_of([t for r in recs for t in r.thresholds])


def label_of(recs: list[CellRecord], screen: list[CellRecord], headroom_passed: bool | None) -> Label:
    """A configuration's label from its cells: fails (or error), passes today only, passed with headroom; 'passes'
    where the walk asked for no headroom."""
    outcome = at_mem(recs)
    if outcome == "error":
        return "disturbed" if any((r.error or "").startswith("disturbed") for r in recs) else "error"
    if outcome != "pass":
        return "fails"
    if headroom_passed is None and screen:
        headroom_passed = at_mem(screen) == "pass"
    return "passes" if headroom_passed is None else "passed with headroom" if headroom_passed else "passes today only"


def _published_cell(v: VerdictFile, engine: str, tag: str, mem: str):
    """The leaf's or the matrix's cell of the configuration there, with its Headroom; None: the walk had none."""
    if tag.startswith(LEAF):
        return next((c for c in v.leaf if c.engine == engine and c.design == tag[len(LEAF):] and c.mem == mem
                     and c.headroom is not None), None)
    return next((c for c in v.matrix if c.engine == engine and c.mem == mem and c.headroom is not None
                 and (tag in c.passed_options if tag else not c.tuned_with)), None)


def _published_headroom(v: VerdictFile, engine: str, tag: str, mem: str) -> bool | None:
    """What the walk said of the configuration's headroom there (before v9: its latencies times m included), else
    None (its screen's cells then say)."""
    cell = _published_cell(v, engine, tag, mem)
    return cell.headroom.passed if cell is not None else None


def published_capacity(v: VerdictFile, engine: str, tag: str, mem: str):
    """The capacity the walk measured on the configuration there (verdict v9), else None."""
    cell = _published_cell(v, engine, tag, mem)
    return cell.headroom.capacity if cell is not None else None


def figures(recs: list[CellRecord], screen: list[CellRecord]) -> list[Figure]:
    """Every threshold's value of the configuration's cells, then its headroom screen's (the published side)."""
    out = []
    for prefix, cells in (("", recs), ("headroom screen, ", screen)):
        for r in cells:
            for t in r.thresholds:
                th = parse_threshold(t.expr)
                timed = (METRICS[th.metric] == "latency" and th.metric != "apply_lag_blocks") \
                    or th.metric == "apply_utilisation"
                out.append(Figure(name=f"{prefix}{r.scenario}: {t.expr}", published=t.value,
                                  timed=timed))
    return out


def target(v: VerdictFile, engine: str, tag: str, mem: str, level: str, role: str) -> Target:
    recs = records(v, engine, tag, mem)
    screen = records(v, engine, headroom_tag(tag), mem, "headroom screen")
    return Target(mem=mem, level=level, role=role, engine=engine, tag=tag, says=says(engine, tag),
                  published=label_of(recs, screen, _published_headroom(v, engine, tag, mem)),
                  figures=figures(recs, screen), published_cells=[f"{r.scenario}/{r.dir}" for r in recs + screen],
                  published_capacity=published_capacity(v, engine, tag, mem))


def _answer(v: VerdictFile, a) -> tuple[str, str, str | None, bool] | None:
    """(engine, tag, the level its cells were measured at where it was implied, whether only its headroom was
    measured here) of a level's answer; None: the level has none."""
    if a.design:
        engine, design = [s.strip() for s in a.design.split(":", 1)]
        cell = next((c for c in v.leaf if c.engine == engine and c.design == design and c.mem == a.mem), None)
        return engine, LEAF + design, cell.implied_from if cell is not None else None, \
            cell is not None and cell.headroom_here
    if a.status != "answered" or not a.engine:
        return None
    cell = next((c for c in v.matrix if c.engine == a.engine and c.mem == a.mem), None)
    if cell is None or not cell.tuned_with:
        return a.engine, "", None, False
    opts = load_matrix().engines[a.engine].options
    return a.engine, next((n for n in cell.passed_options if opts[n].says == cell.tuned_with), ""), None, False


def _implied(v: VerdictFile, engine: str, tag: str, source: str, mem: str, here: bool) -> Target | None:
    """An answer implied from `source`, at its own level: its headroom screen where the walk measured only that
    here, else the implication control's screen where the walk's ran here; None: the walk measured nothing here."""
    if here:
        cell = next(c for c in v.leaf if c.engine == engine and LEAF + c.design == tag and c.mem == mem)
        screen = records(v, engine, headroom_tag(tag), mem, "headroom screen")
        return Target(mem=mem, level=mem, role="answer", engine=engine, tag=tag, says=says(engine, tag),
                      headroom_from=source, published=label_of(records(v, engine, tag, source), screen,
                                                               cell.headroom.passed if cell.headroom else None),
                      figures=figures([], screen), published_cells=[f"{r.scenario}/{r.dir}" for r in screen])
    control = next((c for c in v.implication_controls if c.mem == mem and c.cells and c.engine == engine
                    and LEAF + (c.what or "") == tag), None)
    if control is None:     # implied at the largest level and never measured there: screened as a control is
        largest = max(v.mems, key=parse_size_bytes)
        if mem != largest:
            return None
        return Target(mem=mem, level=mem, role="control", engine=engine, tag=tag, says=says(engine, tag),
                      published="passes", figures=[], published_cells=[])
    return Target(mem=mem, level=mem, role="control", engine=engine, tag=tag, says=says(engine, tag),
                  published=label_of(control.cells, [], None), figures=figures(control.cells, []),
                  published_cells=[f"{r.scenario}/{r.dir}" for r in control.cells])


def targets(v: VerdictFile) -> list[Target]:
    """Per level, in the published order: the answer (at its source level, then here, where implied) and its
    alternative. A configuration measured for two levels runs once (the reproduction keeps its cells by place)."""
    out: list[Target] = []
    for a in v.answers:
        found = _answer(v, a)
        chosen = None
        if found is not None:
            engine, tag, source, here = found
            chosen = (engine, tag)
            out.append(target(v, engine, tag, source or a.mem, a.mem, "answer"))
            here_too = _implied(v, engine, tag, source, a.mem, here) if source else None
            out += [here_too] if here_too is not None else []
        rivals = {(r.engine, tag_of(r)) for r in v.cells if r.mem == a.mem and r.label == CANDIDATE} - {chosen}
        far = lambda k: (c if (c := closeness(records(v, *k, a.mem))) is not None else float("inf"), k)  # noqa: E731
        scored = sorted(rivals, key=far)
        if scored:
            out.append(target(v, *scored[0], a.mem, a.mem, "alternative"))
    return out


def published_cost(v: VerdictFile, todo: list[Target]) -> tuple[list[str], float]:
    """What the published walk spent on what a reproduction runs again: each target's cells and capacity steps,
    once each (two levels' answer measured at one level share them), and one reference cell per level and one
    more at the end, at the published reference cells' mean. (cell names, minutes); a state a cell built is in its
    minutes, the states the reproduction builds before its first cell are not."""
    from harness.report.verdict_cells import minutes
    names = list(dict.fromkeys(n for t in todo for n in [
        *t.published_cells, *(s.cell for s in (t.published_capacity.steps if t.published_capacity else []) if s.cell)]))
    by_name = {f"{r.scenario}/{r.dir}": r for r in v.cells}
    spent = [m for n in names if n in by_name and (m := minutes(by_name[n])) is not None]
    refs = [m for r in v.cells if (r.label or "").startswith("reference") and (m := minutes(r)) is not None]
    levels = len(dict.fromkeys(t.level for t in todo))
    return names, sum(spent) + (levels + 1) * (sum(refs) / len(refs) if refs else 0)
