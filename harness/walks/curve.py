"""`make curve ENGINE= [SCENARIO=p99_5x] [SCALES="0.125 0.25 0.5 1 2 3 5"] [RATIO=] [PROFILE=ratio] [SET=]`: the
degradation curve (issue 85), a configuration's figures against the database's size at one data-to-memory ratio.
At each scale its starting state is built at bulk speed, MEM is that state's size over RATIO (default: the
verdict's tightest ratio, decision.yaml's, the reference's ~67 GB at 5x over 8 GB), and the scenario's cell runs
in full, never stopped early: each point's figures are over every block. The state is moved into its one cell,
not copied (a 5x state and its copy do not fit this disk), and what is left of it dropped after. Per-block service
time p50, acknowledgement p99 and queryable p99 are drawn against the size, and each projected to 10x through the
measured points (report/success/curve.py: the model, why, its prediction interval), labelled projected wherever
it appears. Resumable: a scale already measured is read from curve.json, its state not built again."""
from __future__ import annotations

import sys
import time
from dataclasses import replace
from pathlib import Path

from harness.cell_states import drop_all
from harness.environment import utc_now
from harness.errors import EXIT_RUN_FAILED, ConfigError
from harness.records import Cell
from harness.report.success.curve import MIN_POINTS, project
from harness.report.success.curve_report import basis, figures, measured
from harness.results import load_curve, load_result, write_json
from harness.results.design import queryable_p99_ms
from harness.results.curve import CurveFile, CurvePoint, CurveProjection
from harness.results.headroom import Host
from harness.scenario.decision import RatioMems, load_decision
from harness.scenario.plan import resolve_plan
from harness.units import parse_size_bytes
from harness.walks.sweep import CellOptions, SweepInterrupted, plan_cells, run_cell, sweep_dir_for

CURVE_FILE = "curve.json"
SCALES = (0.125, 0.25, 0.5, 1.0, 2.0, 3.0, 5.0)
PROJECT_TO = 10.0          # the reference's largest size: what this machine's free disk cannot hold


def _log(msg: str) -> None:
    print(f"[curve] {msg}", file=sys.stderr, flush=True)


def default_ratio() -> float:
    """The verdict's tightest data-to-memory ratio (decision.yaml's ratio levels): the reference's 8 GB at 5x."""
    spec = load_decision().mems.get("ratio")
    if not isinstance(spec, RatioMems):
        raise ConfigError("scenarios/decision.yaml: mems.ratio: no data-to-memory ratios; give RATIO=")
    return max(spec.data_to_memory)


def mem_for(size_bytes: int, ratio: float) -> str:
    """MEM for a state of size_bytes at `ratio` data bytes per byte of memory, in MiB (as the verdict's levels)."""
    return f"{max(16, int(size_bytes / ratio) >> 20)}m"


def point_of(scale: float, mem: str, size_bytes: int, cell: str, result, status: str) -> CurvePoint:
    """Its figures from a cell that measured (passed or failed; an oom's partial blocks are no figure). The
    per-block service time is the engine's commit, or behind a block log its apply: the acknowledgement's append
    does not grow with the database."""
    m = result.metrics if result is not None and status in ("passed", "failed") else None
    bl = m.block_log if m is not None else None
    return CurvePoint(scale=scale, mem=mem, size_gib=round(size_bytes / 2**30, 3), status=status,
                      service_p50_ms=(bl.apply_ms.p50 if bl else m.service_time_ms.p50) if m else None,
                      ack_p99_ms=m and m.commit_latency_ms.p99, busy=bl.apply_utilisation if bl else None,
                      harness_share=_harness_share(result) if m else None,
                      queryable_p99_ms=queryable_p99_ms(m) if m else None, rows_per_s=m and m.rows_per_s, cell=cell,
                      sitting=(result.environment.get("started_utc") or utc_now())[:10] if result else utc_now()[:10],
                      host=Host.of(result.environment) if result is not None else None,
                      boot_id=result.environment.get("boot_id") if result is not None else None)


def _harness_share(result) -> float | None:
    h, limit = result.metrics.harness, result.memory.data_limit_bytes
    end = h.harness_bytes_end if h is not None else None
    return round(end / limit, 4) if end and limit else None


def projections(points: list[CurvePoint], to_scale: float = PROJECT_TO) -> list[CurveProjection]:
    """Each figure at `to_scale`, through the points that measured it (passed or failed, never an error)."""
    out = []
    for name, what in figures(points).items():
        got = measured(points, name)
        if len(got) < MIN_POINTS or len({g.size_gib for g in got}) < 2 or max(g.scale for g in got) >= to_scale:
            continue
        q = project(got, to_scale)
        out.append(CurveProjection(figure=name, scale=to_scale, size_gib=round(q.size_gib, 1), value=q.value, lo=q.lo,
                                   hi=q.hi, model=q.fit.model, says=f"{what}: {q.says('ms')}"))
    return out


def mem_at(scale: float, size_bytes: int, ratio: float, mem_1x: str | None) -> str:
    if mem_1x:
        return f"{max(16, int(scale * parse_size_bytes(mem_1x)) >> 20)}m"
    return mem_for(size_bytes, ratio)


def curve(scenario: str, engine: str, opts: CellOptions, results_root: Path, scales: list[float] | None = None,
          ratio: float | None = None, command: str = "make curve", mem_1x: str | None = None) -> int:
    t0 = time.monotonic()
    scales, ratio = sorted(scales or SCALES), ratio or default_ratio()
    # the ratio profile unless asked: 1x at the reference's data-to-memory ratios, each cell's 300 blocks
    opts = replace(opts, profile=opts.profile or "ratio", early_abort=False, take_states=True)
    root = sweep_dir_for(results_root, "curve", f"{Path(scenario).stem}-{engine}",
                         {"scenario": scenario, "engine": engine, "scales": scales, "ratio": ratio,
                          "opts": opts.asked(), **({"mem_1x": mem_1x} if mem_1x else {})})
    root.mkdir(parents=True, exist_ok=True)
    probe = resolve_plan(scenario, engine, profile=opts.profile, scale=scales[0], overrides=list(opts.overrides))
    opts, ageing = at_block_size(scenario, engine, opts, probe)
    old = _again(load_curve(root / CURVE_FILE), root)
    out = old or CurveFile(scenario=probe.scenario, engine=engine, profile=probe.profile, ratio=ratio,
                           overrides=list(opts.overrides), criteria=list(opts.thresholds or ()), command=command,
                           mem_1x=mem_1x, updated_utc=utc_now())
    _log(f"{root}: {engine} {probe.scenario} ({probe.profile}) at scales {' '.join(f'{s:g}' for s in scales)}, "
         f"{basis(out)}")
    try:
        for scale in scales:
            if any(p.scale == scale for p in out.points):
                continue
            point = _measure(scenario, engine, opts, root, scale, ratio, mem_1x, ageing)
            out = out.model_copy(update={"points": [*out.points, point],
                                         "updated_utc": utc_now()})
            write_json(root / CURVE_FILE, out)          # nothing lost if interrupted
    except SweepInterrupted as e:
        _log(f"interrupted in {e}; run the same command again to resume")
        return EXIT_RUN_FAILED
    out = out.model_copy(update={"projections": projections(out.points), "complete": True,
                                 "wall_s": round(((old.wall_s or 0) if old else 0) + time.monotonic() - t0, 1),
                                 "updated_utc": utc_now()})
    write_json(root / CURVE_FILE, out)
    for p in out.points:
        _log(f"{p.scale:g}x ({p.size_gib:,.1f} GiB, MEM {p.mem}): {p.status}; service p50 {p.service_p50_ms} ms, "
             f"ack p99 {p.ack_p99_ms} ms, queryable p99 {p.queryable_p99_ms} ms")
    for q in out.projections:
        _log(q.says)
    from harness.report import write_report
    _, html = write_report(root)
    print(root / CURVE_FILE)
    print(html)
    return 0


def at_block_size(scenario: str, engine: str, opts: CellOptions, probe) -> tuple[CellOptions, tuple[str, ...]]:
    """A curve at a block size of its own (SET workload.rows_per_block, a configuration that cannot carry the
    scenario's): an absolute rate of rows keeps its share of the offered rate (the plan scales it: resolve_plan), and
    the curve keeps those lines as its criteria; the state is aged at the scenario's block size, as the knee's, so
    both start from one history. Returns the options and the cells' extra overrides."""
    base = resolve_plan(scenario, engine, profile=opts.profile, scale=probe.scale).workload.rows_per_block
    rows = probe.workload.rows_per_block
    if rows == base or opts.thresholds is not None:
        return opts, ()
    opts = replace(opts, thresholds=tuple(probe.thresholds))     # the plan kept a rate line's share already
    _log(f"{rows:,} rows a block, not the scenario's {base:,}: judged on {', '.join(opts.thresholds)}")
    return opts, (f"load.age_rows_per_block={base}",) if probe.load.aged_state else ()


def _again(c: CurveFile | None, root: Path) -> CurveFile | None:
    """A resumed curve's points re-derived from their cells' results: what this code reads of them, not what
    the code that wrote curve.json did."""
    if c is None:
        return None
    return c.model_copy(update={"points": [point_of(p.scale, p.mem, int(p.size_gib * 2**30), p.cell,
                                                     load_result(root / p.cell / "result.json"), p.status)
                                            for p in c.points]})


def _measure(scenario: str, engine: str, opts: CellOptions, root: Path, scale: float, ratio: float,
             mem_1x: str | None, ageing: tuple[str, ...] = ()) -> CurvePoint:
    """One scale: its state built (outside any limit), MEM from its size (or scale x mem_1x), the cell in full, the
    state dropped."""
    from harness.state.build import ensure
    plan = resolve_plan(scenario, engine, profile=opts.profile, scale=scale, overrides=[*opts.overrides, *ageing])
    _, man, _ = ensure(plan)
    mem = mem_at(scale, man.data_bytes, ratio, mem_1x)
    _log(f"scale {scale:g}: the state is {man.data_bytes / 2**30:.2f} GiB, MEM {mem}")
    [cr] = plan_cells([Cell(scenario, engine, mem, scale, 1, ageing)], opts, root, 1)
    cr.record = run_cell(cr, f"scale {scale:g} at MEM {mem}")
    drop_all([cr.plan], who="curve")
    result = load_result(cr.dir / "result.json")
    return point_of(scale, mem, man.data_bytes, f"{cr.plan.scenario}/{cr.dir.name}", result, cr.record.status)
