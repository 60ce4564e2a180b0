"""`make matrix ENGINES="sqlite postgres duckdb"`: each engine's matrix in turn at the same MEM (harness/walks/matrix.py,
each resumable in its own directory), then one table side by side: per engine its baseline, its best option
that gives nothing up (its best combination included), its best with a trade-off and what that gives up, and
its answer (matrices.json, matrices.md)."""
from __future__ import annotations

import sys
from pathlib import Path

from harness.environment import utc_now
from harness.errors import EXIT_RUN_FAILED, ConfigError
from harness.walks.matrix import BASELINE, MEASURED, run_matrix, vs_baseline
from harness.results import EngineBest, MatricesFile, MatrixFile, OptionRow, write_json
from harness.walks.sweep import CellOptions, sweep_dir_for


def best_of(m: MatrixFile) -> EngineBest:
    """The baseline, and the measured option lowest on the matrix's basis with and without a trade-off."""
    measured = [r for r in m.rows if r.option != BASELINE and r.status in MEASURED and vs_baseline(r, m.basis) is not None]
    clean = [r for r in measured if not r.trade_off]
    traded = [r for r in measured if r.trade_off]

    def lowest(rows):
        return min(rows, key=lambda r: vs_baseline(r, m.basis)) if rows else None
    return EngineBest(engine=m.engine, dir=m.dir, basis=m.basis,
                      baseline=next((r for r in m.rows if r.option == BASELINE), None),
                      best_clean=lowest(clean), best_traded=lowest(traded), answer=m.answer)


def _cell(r: OptionRow | None, basis: str) -> str:
    if r is None:
        return "-"
    f = lambda v, spec=",.0f": "-" if v is None else format(v, spec)  # noqa: E731
    vs = vs_baseline(r, basis)
    return (f"{r.option}: p99 {f(r.p99_ms)} / p50 {f(r.service_p50_ms)} ms"
            + (f" ({vs:.2f}x{' ✓' if r.helped else ''})" if vs is not None else "") + (" PASS" if r.passed else ""))


def table_markdown(mf: MatricesFile) -> str:
    head = (f"## Optimisation matrices side by side: {mf.scenario} ({mf.profile}), MEM={mf.mem}\n\n"
            "| engine | baseline | best that gives nothing up | best with a trade-off | what it gives up | answer |\n"
            "|---|---|---|---|---|---|\n")
    lines = [f"| {e.engine} | {_cell(e.baseline, e.basis)} | {_cell(e.best_clean, e.basis)} | "
             f"{_cell(e.best_traded, e.basis)} | {(e.best_traded.trade_off if e.best_traded else '') or '-'} | "
             f"{e.answer} |" for e in mf.engines]
    return head + "\n".join(lines) + ("\n\np99 and service p50 in ms; (x): over the engine's baseline on its matrix's "
                                      "basis, ✓ beyond its noise; PASS: every threshold met. Each engine's whole "
                                      "table is its matrix.md.\n")


def matrices(engines: list[str], scenario: str, mem: str | None, opts: CellOptions, results_root: Path,
             drop_states: bool = False) -> int:
    if len(set(engines)) < 2:
        raise ConfigError("ENGINES: a side-by-side needs two engines or more (ENGINE= runs one matrix)")
    spec = {"engines": engines, "scenario": scenario, "mem": mem, "opts": opts.asked()}
    root = sweep_dir_for(results_root, "matrices", Path(scenario).stem, spec)
    root.mkdir(parents=True, exist_ok=True)
    rcs, best, profile = [], [], None
    for engine in engines:
        print(f"[matrices] {engine}: its matrix at {mem or 'no limit'}", file=sys.stderr, flush=True)
        rc, m = run_matrix(engine, scenario, mem, None, opts, results_root, drop_states)
        rcs.append(rc)
        best.append(best_of(m))
        profile = m.profile
        if m.answer.startswith("incomplete"):      # interrupted: the same command resumes it, then the rest
            break
    out = MatricesFile(scenario=scenario, profile=profile, mem=mem, updated_utc=utc_now(), engines=best)
    write_json(root / "matrices.json", out)
    text = table_markdown(out)
    (root / "matrices.md").write_text(text)
    print(text)
    print(root / "matrices.json")
    return EXIT_RUN_FAILED if any(rcs) else 0
