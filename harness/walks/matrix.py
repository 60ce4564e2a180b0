"""`make matrix`: the optimisation matrix (scenarios/matrix.yaml) at one MEM. The baseline and each option alone,
all from the same starting state (an option that changes the file's layout or schema builds its own), then
the best combination: from each group, the option that lowered p99 most beyond the matrix's noise, among
those that give nothing up. Options that change what reads can use run their read mix too, beside the
baseline's. Cells run as a sweep's do (harness/walks/sweep.py): resumable, each in its own cgroup or container."""
from __future__ import annotations

import sys
import time
from dataclasses import replace
from pathlib import Path

from harness import cell_states
from harness.environment import utc_now
from harness.errors import EXIT_RUN_FAILED, ConfigError
from harness.results import MatrixFile, OptionRow, RunResult, load_result, write_json
from harness.results.design import block_log_line
from harness.results.phases import describe
from harness.scenario.matrix import CellRule, EngineMatrix, Matrix, flat_values, load_matrix
from harness.scenario.plan import resolve_plan
from harness.records import CellRun
from harness.walks.sweep import (Cell, CellOptions, SweepInterrupted, cell_identity, completed, engine_build, plan_cells,
                           run_cells, sweep_dir_for)

BASELINE, BEST = "baseline", "best"
MEASURED = ("passed", "failed")
P99, SERVICE = "p99", "service p50"


def basis_of(base: RunResult | None, by_blocks: bool = False) -> str:
    """What `helped` compares: p99, unless the cells measure a fixed window of blocks (whose p99 is their max)
    or the baseline was saturated (SERVICE: see MatrixFile.basis)."""
    return SERVICE if by_blocks or (base is not None and base.status in MEASURED and base.saturated) else P99


def vs_baseline(row: OptionRow, basis: str) -> float | None:
    """The row's figure over the baseline's, on the matrix's basis."""
    return row.service_p50_vs_baseline if basis == SERVICE else row.p99_vs_baseline


def option_cells(em: EngineMatrix, names: list[str], scenario: str, engine: str, mem: str | None,
                 plan_values: dict, mem_bytes: int | None, opts: CellOptions) -> tuple[list[Cell], dict[str, str]]:
    """The baseline, each option alone, and the read mix of the baseline and of each option that asks;
    and why an option's read mix cannot run (its queries need what the option removes)."""
    cells = [Cell(scenario, engine, mem, None, tag=BASELINE)]
    reads = [n for n in names if em.options[n].reads]
    if reads:
        cells.append(Cell(em.reads, engine, mem, None, tag=BASELINE))
    unreadable = {}
    for n in names:
        over = tuple(em.options[n].overrides(engine, mem_bytes, plan_values))
        cells.append(Cell(scenario, engine, mem, None, overrides=over, tag=n))
        if n in reads:
            try:
                resolve_plan(em.reads, engine, profile=opts.profile, mem=mem, overrides=[*opts.overrides, *over])
                cells.append(Cell(em.reads, engine, mem, None, overrides=over, tag=n))
            except ConfigError as e:
                unreadable[n] = str(e).split(": ")[-1]
    return cells, unreadable


def _ratio(value: float | None, base: RunResult | None, get) -> float | None:
    b = get(base.metrics) if base is not None and base.status in MEASURED else None
    return round(value / b, 3) if value and b else None


def _row(name: str, says: str, over: list[str], trade_off: str | None, r: RunResult | None, d: Path | None,
         base: RunResult | None, noise: float, basis: str = P99) -> OptionRow:
    if r is None:
        return OptionRow(option=name, says=says, overrides=over, trade_off=trade_off, status="not run")
    m, io, settled = r.metrics, r.metrics.io, r.settled or {}
    row = OptionRow(option=name, says=says, overrides=over, trade_off=trade_off, dir=d.name if d else None,
                    status=r.status, p99_ms=m.commit_latency_ms.p99, service_p50_ms=m.service_time_ms.p50,
                    rows_per_s=m.rows_per_s,
                    p99_vs_baseline=_ratio(m.commit_latency_ms.p99, base, lambda b: b.commit_latency_ms.p99),
                    service_p50_vs_baseline=_ratio(m.service_time_ms.p50, base, lambda b: b.service_time_ms.p50),
                    write_amplification=io.write_amplification if io else None,
                    read_iops=io.read_iops if io else None,
                    resident_share_end=io.residency.share_end if io and io.residency else None,
                    passed=r.status == "passed" if not settled else None,   # a settled cell ran part of its window
                    settled_blocks=settled.get("block"), settled_budget_s=settled.get("budget_s"),
                    db_bytes_end=m.db_bytes_final,
                    split=block_log_line(m.block_log) if m.block_log else describe(m.block_phases))
    vs = vs_baseline(row, basis)
    measured = vs is not None and r.status in MEASURED and r.integrity.ok
    return row.model_copy(update={"helped": vs < 1 - noise if measured else None})


def _with_reads(row: OptionRow, r: RunResult | None, base: RunResult | None) -> OptionRow:
    if r is None:
        return row
    p99 = r.metrics.read_latency_ms.p99 if r.metrics.read_latency_ms else None
    bp99 = base.metrics.read_latency_ms.p99 if base is not None and base.metrics.read_latency_ms else None
    return row.model_copy(update={"read_p99_ms": p99, "read_status": r.status,
                                  "read_p99_vs_baseline": round(p99 / bp99, 3) if p99 and bp99 else None})


def best_combination(m: Matrix, em: EngineMatrix, rows: list[OptionRow], basis: str = P99) -> list[str]:
    """Per group, the option that helped most, among those with no trade-off; in the matrix's order."""
    best: dict[str, OptionRow] = {}
    for row in rows:
        opt = em.options.get(row.option)
        if opt is None or opt.trade_off or not row.helped:
            continue
        if opt.group not in best or vs_baseline(row, basis) < vs_baseline(best[opt.group], basis):
            best[opt.group] = row
    chosen = {r.option for r in best.values()}
    return [n for n in em.options if n in chosen]


def answer(rows: list[OptionRow]) -> str:
    base = next((r for r in rows if r.option == BASELINE), None)
    if base is not None and base.passed:
        return "the baseline already meets every threshold"
    clean = [r for r in rows if r.passed and not r.trade_off and r.option != BASELINE]
    if clean:
        return "meets every threshold with " + " / ".join(f"{r.option} ({r.says})" for r in clean)
    traded = [r for r in rows if r.passed and r.trade_off]
    if traded:
        return ("no option that gives nothing up is enough; only with a trade-off: "
                + "; ".join(f"{r.option} ({r.trade_off})" for r in traded))
    return "no option, alone or combined, meets every threshold"


def matrix(engine: str, scenario: str, mem: str | None, options: list[str] | None, opts: CellOptions,
           results_root: Path, drop_states: bool = False) -> int:
    return run_matrix(engine, scenario, mem, options, opts, results_root, drop_states)[0]


def option_names(em: EngineMatrix, engine: str, options: list[str] | None) -> list[str]:
    names = options or list(em.options)
    unknown = [n for n in names if n not in em.options]
    if unknown:
        raise ConfigError(f"OPTIONS: {unknown[0]!r} is not an option of {engine}; allowed: {', '.join(em.options)}")
    return names


def run_matrix(engine: str, scenario: str, mem: str | None, options: list[str] | None, opts: CellOptions,
               results_root: Path, drop_states: bool = False) -> tuple[int, MatrixFile]:
    """The engine's matrix (resumable): its exit code and its matrix.json, and the wall time it took said
    last. drop_states: an option's own states go after its last cell (cell_states.py)."""
    t0 = time.monotonic()
    rc, out = _run_matrix(engine, scenario, mem, options, opts, results_root, drop_states)
    print(f"[matrix] {engine} at {mem or 'no limit'}: {(time.monotonic() - t0) / 60:.1f} min wall in this run, "
          "states included", file=sys.stderr, flush=True)
    return rc, out


def _run_matrix(engine: str, scenario: str, mem: str | None, options: list[str] | None, opts: CellOptions,
                results_root: Path, drop_states: bool) -> tuple[int, MatrixFile]:
    mx = load_matrix()
    em = mx.engines.get(engine)
    if em is None:
        raise ConfigError(f"scenarios/matrix.yaml has no options for {engine}; it has: {', '.join(mx.engines)}")
    names = option_names(em, engine, options)
    base = resolve_plan(scenario, engine, profile=opts.profile, mem=mem, duration_s=opts.duration_s,
                        overrides=list(opts.overrides))
    opts = replace(opts, overrides=(*opts.overrides, *mx.cells.overrides(base.workload.block_interval_ms,
                                                                          opts.duration_s is not None)))
    values = flat_values(base.model_dump(mode="json", by_alias=True))
    cells, unreadable = option_cells(em, names, scenario, engine, mem, values, base.memory.data_limit_bytes, opts)
    spec = {"engine": engine, "scenario": scenario, "mem": mem, "options": names, "opts": opts.asked()}
    root = sweep_dir_for(results_root, "matrix", f"{engine}-{Path(scenario).stem}", spec)
    root.mkdir(parents=True, exist_ok=True)
    try:
        runs = plan_cells(cells, opts, root, 1)
    except ConfigError as e:
        raise ConfigError(f"matrix: {e}") from None
    print(f"[matrix] {root}: {len(runs)} cells (the baseline, {len(names)} options"
          f"{', their read mix' if any(c.scenario == em.reads for c in cells) else ''})", file=sys.stderr, flush=True)
    meta = {"kind": "matrix", "spec": spec, "dir": str(root)}
    cell_states.check_disk([cr for cr in runs if completed(cr) is None], drop_states)   # resumed: what is left
    combo, interrupted = [], None
    stop = cell_states.dropper(runs) if drop_states else None
    try:
        if mx.cells.settle and mx.cells.measure_blocks is not None:     # the baseline first: it settles the rest
            run_cells([cr for cr in runs if cr.cell.tag == BASELINE], root / "sweep.json", meta, stop=stop)
            settle_options(runs, scenario, mx.noise, mx.cells)
        run_cells(runs, root / "sweep.json", meta, stop=stop)
        combo = best_combination(mx, em, *_rows(mx, em, names, runs, unreadable=unreadable))
        if len(combo) > 1:
            over = tuple(o for n in combo for o in em.options[n].overrides(engine, base.memory.data_limit_bytes,
                                                                             values))
            runs += plan_cells([Cell(scenario, engine, mem, None, overrides=over, tag=BEST)], opts, root, 1)
            run_cells(runs, root / "sweep.json", meta)
    except SweepInterrupted as e:
        interrupted = str(e)
    if drop_states and interrupted is None:
        cell_states.drop_all([cr.plan for cr in runs])
    # an interrupted matrix still writes its table: the cells measured so far, the others "not run"
    rows, basis = _rows(mx, em, names, runs, combo, unreadable)
    done = sum(completed(cr) is not None for cr in runs)
    out = MatrixFile(engine=engine, scenario=scenario, profile=base.profile, mem=mem, noise=mx.noise, basis=basis,
                     dir=str(root), updated_utc=utc_now(), rows=rows, combination=combo,
                     answer=answer(rows) if interrupted is None else
                     f"incomplete: {done} of {len(runs)} cells measured; run the same command again to resume")
    write_json(root / "matrix.json", out)
    text = table_markdown(out)
    (root / "matrix.md").write_text(text)
    print(text)
    print(root / "matrix.json")
    if interrupted is not None:
        print(f"[matrix] interrupted in cell {interrupted}; run the same command again to resume", file=sys.stderr)
        return EXIT_RUN_FAILED, out
    return (0 if all(r.status in ("passed", "failed", "oom") for r in rows) else EXIT_RUN_FAILED), out


def settle_options(runs: list[CellRun], scenario: str, noise: float, rule: CellRule) -> None:
    """Each option's own cell (not a read mix's) ends once its service p50 can no longer go below the
    baseline's less the noise: it did not help, whatever its remaining blocks do (runner/abort.py), or once
    its clock has run rule.settle_budget times the baseline's (warm-up and measured blocks, at the measured
    phase's pace) with every measured block over that limit. A cell that may help runs every block, so the
    best in each group is chosen on full windows."""
    base_run = next(cr for cr in runs if cr.cell.tag == BASELINE and cr.cell.scenario == scenario)
    base = load_result(base_run.dir / "result.json") if completed(base_run) else None
    p50 = base.metrics.service_time_ms.p50 if base is not None and base.status in MEASURED else None
    if not p50 or not base.integrity.ok:
        return
    limit_ms = round(p50 * (1 - noise), 3)
    blocks = (rule.warmup_blocks or 0) + rule.measure_blocks
    budget_s = (round(rule.settle_budget * base.metrics.measured_s * blocks / rule.measure_blocks, 1)
                if rule.settle_budget and base.metrics.measured_s else None)
    builds = {}                              # as plan_cells keys them: found once, not once a cell
    for cr in runs:
        if cr.cell.scenario == scenario and cr.cell.tag not in (BASELINE, BEST):
            cr.plan = cr.plan.model_copy(update={"settle_service_p50_ms": limit_ms, "settle_budget_s": budget_s})
            key = (cr.cell.engine, cr.plan.runtime, cr.plan.capabilities)
            if key not in builds:
                builds[key] = engine_build(cr.plan)
            cr.cell_id = cell_identity(cr.plan, builds[key])


def _rows(mx: Matrix, em: EngineMatrix, names: list[str], runs, combo: list[str] = (),
          unreadable: dict[str, str] | None = None) -> tuple[list[OptionRow], str]:
    """The matrix's rows, and the basis they were judged on (basis_of the baseline)."""
    by_tag = {(cr.cell.scenario, cr.cell.tag): cr for cr in runs}
    scenario = runs[0].cell.scenario

    def result(sc: str, tag: str):
        cr = by_tag.get((sc, tag))
        return (load_result(cr.dir / "result.json"), cr.dir) if cr and completed(cr) else (None, None)

    base, base_dir = result(scenario, BASELINE)
    base_reads, _ = result(em.reads, BASELINE)
    basis = basis_of(base, mx.cells.measure_blocks is not None)
    rows = [_with_reads(_row(BASELINE, "the scenario at its memory policy", [], None, base, base_dir, base, mx.noise,
                             basis), base_reads, base_reads)]
    for n in names:
        opt = em.options[n]
        r, d = result(scenario, n)
        row = _row(n, opt.says, list(by_tag[(scenario, n)].cell.overrides), opt.trade_off, r, d, base, mx.noise,
                   basis)
        if n in (unreadable or {}):
            row = row.model_copy(update={"read_status": f"not run: {unreadable[n]}"})
        rows.append(_with_reads(row, result(em.reads, n)[0], base_reads) if opt.reads else row)
    if (scenario, BEST) in by_tag:
        r, d = result(scenario, BEST)
        rows.append(_row(BEST, " + ".join(combo), list(by_tag[(scenario, BEST)].cell.overrides), None, r, d, base,
                         mx.noise, basis))
    return rows, basis


def _delta(vs: float | None, helped: bool | None) -> str:
    return "-" if vs is None else f"{vs:.2f}x" + (" ✓" if helped else "")


def _status(r: OptionRow) -> str:
    if not r.settled_blocks:
        return r.status
    return (f"{r.status}, settled after {r.settled_blocks} block{'s' * (r.settled_blocks > 1)}"
            + (f" (every one over, past its {r.settled_budget_s:g} s budget)" if r.settled_budget_s else ""))


def table_markdown(m: MatrixFile) -> str:
    f = lambda v, spec="": "-" if v is None else format(v, spec)  # noqa: E731
    head = (f"## Optimisation matrix: {m.engine}, {m.scenario} ({m.profile}), MEM={m.mem}\n\n"
            "| option | status | p99 ms | service p50 ms | committed rows/s | Δ p99 | Δ service p50 | write amp. | "
            "read IOPS | resident at end | read p99 ms (Δ) | trade-off |\n"
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
    lines = []
    for r in m.rows:
        reads = (r.read_status or "-") if r.read_p99_ms is None else (f"{r.read_p99_ms:,.1f}" + (
            f" ({r.read_p99_vs_baseline:.2f}x)" if r.read_p99_vs_baseline is not None else ""))
        status = _status(r)
        lines.append(f"| {r.option}: {r.says} | {status} | {f(r.p99_ms, ',.0f')} | {f(r.service_p50_ms, ',.0f')} | "
                     f"{f(r.rows_per_s, ',.0f')} | {_delta(r.p99_vs_baseline, r.helped and m.basis == P99)} | "
                     f"{_delta(r.service_p50_vs_baseline, r.helped and m.basis == SERVICE)} | "
                     f"{f(r.write_amplification, '.1f')} | {f(r.read_iops, ',.0f')} | "
                     f"{f(r.resident_share_end, '.0%')} | {reads} | {r.trade_off or ''} |")
    why = (" (the cells measure a fixed window of blocks, whose p99 is their max, or the baseline was saturated, "
           "its p99 the backlog since the clock started)" if m.basis == SERVICE else "")
    foot = (f"\nΔ: the option's figure over the baseline's; ✓ where its {m.basis}{why} is below {1 - m.noise:.2f}x "
            "(beyond the matrix's noise). "
            + ("Settled: the cell ended once its service p50 could no longer beat the baseline's, or once its clock "
               "had run its budget (a multiple of the baseline's) with every measured block slower than that, its "
               "figures over the blocks it ran. " if any(r.settled_blocks for r in m.rows) else "")
            + f"Best combination: {' + '.join(m.combination) if m.combination else 'none (no option helped)'}.\n"
            f"Answer: {m.answer}.\n")
    return head + "\n".join(lines) + "\n" + foot + _split_markdown(m)


def _split_markdown(m: MatrixFile) -> str:
    """Each cell's size on disk and write amplification beside where its block went (a design's: its
    acknowledgement, apply transactions and lag)."""
    rows = [r for r in m.rows if r.split or r.db_bytes_end]
    if not rows:
        return ""
    lines = [f"| {r.option} | {'-' if r.db_bytes_end is None else f'{r.db_bytes_end / 2**30:,.2f}'} | "
             f"{'-' if r.write_amplification is None else f'{r.write_amplification:.1f}'} | {r.split or '-'} |"
             for r in rows]
    return ("\n| option | on disk GiB | write amp. | where a block went |\n|---|---:|---:|---|\n"
            + "\n".join(lines) + "\n")
