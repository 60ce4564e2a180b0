"""A verdict's tuned cells, each on its own row beside the engine's baseline at that MEM: the option, its
service p50 and p99, its thresholds, its diagnosis, what it gives up, and whether the answer used it."""
from __future__ import annotations

from harness.report.blocks import Block, _f
from harness.scenario.matrix import load_matrix


def tuning_blocks(meta, cells) -> list[Block]:
    """meta: the VerdictFile; cells: the report's CellData (their results, for service p50)."""
    tuned = [m for m in meta.matrix if m.tried]
    if not tuned:
        return []
    by_dir = {(c.scenario, c.run_dir.name): c for c in cells}
    records = [r for s in meta.steps for r in s.cells]
    try:
        options = load_matrix().engines
    except Exception:            # a matrix file since changed or gone: the rows still stand, unnamed trade-offs
        options = {}
    rows = []
    for m in tuned:
        for r in (r for r in records if r.engine == m.engine and r.mem == m.mem):
            opt = options[m.engine].options.get(r.variant) if r.variant and m.engine in options else None
            c = by_dir.get((r.scenario, r.dir))
            service = c.result.metrics.service_time_ms.p50 if c else None
            used = "answer" if opt is not None and m.tuned_with == opt.says else "baseline" if not r.variant else "-"
            rows.append([m.engine, m.mem, r.scenario, (opt.says if opt else r.variant) or "baseline (policy's settings)",
                         r.repeat, r.status or "-", _f(service, 0), _f(r.p99_ms, 0),
                         "; ".join(f"{'PASS' if t.passed else 'FAIL'} {t.expr}" for t in r.thresholds) or "-",
                         r.diagnosis or "-", (opt.trade_off if opt else None) or "-", used])
    return [Block("h2", "Tuning tried where an engine failed (one row per cell)"),
            Block("table", headers=["engine", "MEM", "scenario", "option", "run", "status", "service p50 ms", "p99 ms",
                                    "thresholds", "diagnosis", "gives up", "used by the answer"], rows=rows)]
