"""How far the closest alternative is (issue 84): of the candidates that failed (each step's own settings, each leaf
design), the one whose figures came nearest their lines, and its capacity, a multiple under 1 of the offered load,
measured on it as a candidate's is (verdict/headroom.measure_capacity, 1x a known failure). Once per walk, where it
came closest: the same configuration failing at three levels says the same thing three times, at ~7 min a time. An
engine whose typical block alone takes longer than the latency line fails at any load: said, and no step run."""
from __future__ import annotations

from harness.results import CellRecord, LeafCell, load_result
from harness.results.answers import Alternative
from harness.scenario.matrix import load_matrix
from harness.scenario.thresholds import parse_threshold
from harness.walks.verdict.answer import closeness
from harness.walks.verdict.headroom import measure_capacity
from harness.walks.verdict.roles import log


def _candidates(walk, leaf: list[LeafCell]) -> list[tuple[float, str, str, str, list[CellRecord]]]:
    """(closeness, engine, tag, mem, its records) of every measured candidate that failed."""
    by = {f"{r.scenario}/{r.dir}": r for r in walk.records if r.label == "candidate"}
    out = []
    for c in [*walk.matrix, *leaf]:
        if c.outcome != "fail" or not c.cells or getattr(c, "implied_from", None):
            continue
        tag = f"leaf-{c.design}" if isinstance(c, LeafCell) else ""
        recs = [by[n] for n in c.cells[:1] if n in by]          # its first criterion's cell: its own settings'
        near = closeness([t for r in recs for t in r.thresholds])
        if recs and near is not None:
            out.append((near, c.engine, tag, c.mem, recs))
    return sorted(out, key=lambda x: x[0])


def _no_load_carries(walk, recs: list[CellRecord]) -> str | None:
    """Where a block's service time alone (p50) is over the commit latency's line: no load carries it."""
    r = load_result(walk.root / recs[0].scenario / recs[0].dir / "result.json")
    if r is None or r.metrics.block_log is not None:
        return None
    lines = [parse_threshold(t.expr).limit for t in recs[0].thresholds if parse_threshold(t.expr).metric ==
             "commit_ms" and parse_threshold(t.expr).op in ("<", "<=")]
    p50 = r.metrics.service_time_ms.p50
    if lines and p50 is not None and p50 > min(lines):
        return (f"a block's service time alone (p50 {p50:,.0f} ms) is over the {min(lines):g} ms line: no load "
                "carries it")
    return None


def closest_alternative(walk, leaf: list[LeafCell]) -> Alternative | None:
    found = _candidates(walk, leaf)
    if not found:
        return None
    near, engine, tag, mem, recs = found[0]
    name = tag.removeprefix("leaf-")
    opt = load_matrix().engines[engine].options[name] if name else None
    what = f"{engine} with {opt.says}" if opt else f"{engine} at its own settings"
    settings = next((s.set for s in walk.tree.steps if s.engine == engine), {})
    log(f"the closest alternative: {what} at {mem} (closeness {near:g}): how far it is")
    why = _no_load_carries(walk, recs)
    if why is not None:
        log(f"the closest alternative: {why}")
        return Alternative(engine=engine, what=what, mem=mem, closeness=near, why=why)
    got = measure_capacity(walk, engine, settings, tag, mem, opt, recs, failed=True)
    alt = Alternative(engine=engine, what=what, mem=mem, closeness=near, capacity=got)
    log(alt.says())
    return alt
