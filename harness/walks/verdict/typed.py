"""The answer as one typed object (issue 84): per level what kind of thing answers (an engine at its own settings,
with a tune option, a design of the last leaf, or none), its settings, its capacity with the sitting it came from,
when a block is durable and when a reader can see it, the deciding figure closest to its line, and the sittings it
held in. The summary, report.md/html and a published README render this object; a script reads it. And, from the
same cells and no others, the answer for readers who must see a block within decision.yaml's readers.strict_ms."""
from __future__ import annotations

from harness.results import CellRecord, LeafCell, MatrixCell, MemAnswer, ReaderAnswer
from harness.results.answers import answer_source
from harness.scenario.matrix import load_matrix
from harness.scenario.thresholds import parse_threshold


def _records(cell, records: list[CellRecord]) -> list[CellRecord]:
    names = set(cell.cells) if cell is not None else set()
    return [r for r in records if f"{r.scenario}/{r.dir}" in names and r.label in (None, "candidate")]


def room(t) -> float | None:
    """How far inside its line a figure is, as a share of the line (negative: past it); None: no distance that
    says how much more the answer can take. A throughput floor that was met is one: a rate cannot exceed what was
    offered, so its distance to the line is the offer's over the line (6,000 rows/s against 5,700, 100% applied
    against 95%), the same for every candidate; a shortfall shows as a rate below the offer (Threshold.met_in_full)
    and, latency being measured from the intended start, in the p99."""
    th = parse_threshold(t.expr)
    if t.value is None:
        return None
    r = th.room(t.value)
    if r is not None and r >= 0 and th.agg == "rate" and (th.met_in_full(t.value) or not th.of_offered):
        return None
    return r


def binding(recs: list[CellRecord]):
    """The deciding threshold closest to its line among the answer's cells, with the cell it came from."""
    scored = [(room(t), r, t) for r in recs for t in r.thresholds if room(t) is not None]
    if not scored:
        return None
    _, rec, t = min(scored, key=lambda x: x[0])
    return rec, t


def answer_records(a: MemAnswer, matrix: list[MatrixCell], leaf: list[LeafCell],
                   records: list[CellRecord]) -> list[CellRecord]:
    """The candidate cells an answer stands on (a pass implied from another level: that level's)."""
    return _records(answer_source(a, matrix, leaf), records)


def binding_says(recs: list[CellRecord]) -> str | None:
    """The deciding figure closest to its line among an answer's cells, said beside its line ('p99_5x:
    last(apply_utilisation) 0.611 (< 0.85; 28% to spare)')."""
    from harness.report.answer_table import margin
    bound = binding(recs)
    return f"{bound[0].scenario}: {margin(bound[1])}" if bound is not None else None


def _settings(a: MemAnswer, steps: dict) -> dict:
    engine = a.design.split(": ", 1)[0] if a.design else a.engine
    out = dict(steps.get(engine, {}))
    name = a.design.split(": ", 1)[1] if a.design else None
    opts = load_matrix().engines[engine].options if engine else {}
    if name is None and a.tuned_with:
        name = next((n for n, o in opts.items() if o.says == a.tuned_with), None)
    if name in opts:
        out.update(opts[name].set)
    return out


def typed(answers: list[MemAnswer], matrix: list[MatrixCell], leaf: list[LeafCell], records: list[CellRecord],
          steps: dict) -> list[MemAnswer]:
    """steps: engine -> its step's settings."""
    out = []
    for a in answers:
        if a.status != "answered":
            out.append(a.model_copy(update={"kind": "none"}))
            continue
        cell = answer_source(a, matrix, leaf)
        recs = _records(cell, records)
        first = recs[0] if recs else None
        h = a.headroom
        cap = h.capacity if h is not None else None
        out.append(a.model_copy(update={
            "kind": "design" if a.design else "option" if a.tuned_with else "engine",
            "settings": _settings(a, steps), "measured_at": cell.mem if cell is not None else None,
            "capacity": h.smallest if h is not None and cap is not None else None,
            "capacity_at_least": bool(cap and cap.at_least and h.smallest == cap.multiple),
            "capacity_sitting": h.smallest_from if h is not None else None,
            "durable_p99_ms": first.p99_ms if first else None,
            "queryable_p99_ms": first.queryable_p99_ms if first else None,
            "binding": binding_says(recs),
            "held": (f"{int(h.passed)} of 1") if h is not None and cap is not None else None}))
    return out


def readers_answers(mems: list[str], line_ms: float, matrix: list[MatrixCell], leaf: list[LeafCell],
                    records: list[CellRecord]) -> list[ReaderAnswer]:
    """Per level, the first configuration that passed every criterion there (the steps' in the tree's order, then
    the leaf's designs) whose first criterion's queryable p99 is under line_ms; none: the passing one nearest it."""
    out = []
    for mem in mems:
        found = []
        for c in [*matrix, *leaf]:
            if c.mem != mem or c.outcome != "pass":
                continue
            src = leaf_source(c, leaf) if isinstance(c, LeafCell) else c
            recs = _records(src, records)
            q = recs[0].queryable_p99_ms if recs else None
            name = f"{c.engine}: {c.design}" if isinstance(c, LeafCell) else \
                c.engine + (f" with {c.tuned_with}" if c.tuned_with else " at its own settings")
            found.append((name, q))
        hit = next(((n, q) for n, q in found if q is not None and q < line_ms), None)
        if hit is not None:
            out.append(ReaderAnswer(mem=mem, line_ms=line_ms, status="answered", what=hit[0], queryable_p99_ms=hit[1]))
            continue
        near = min(((n, q) for n, q in found if q is not None), key=lambda x: x[1], default=(None, None))
        out.append(ReaderAnswer(mem=mem, line_ms=line_ms, status="none", closest=near[0], closest_ms=near[1]))
    return out


def leaf_source(c: LeafCell, leaf: list[LeafCell]) -> LeafCell:
    if not c.implied_from:
        return c
    return next((x for x in leaf if x.engine == c.engine and x.design == c.design and x.mem == c.implied_from), c)
