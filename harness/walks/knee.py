"""`make knee ENGINE= SCENARIO= AXIS=rows|mem|scale`: how far a cell is from passing, as the knee of one axis:
  rows   the most rows per block the engine carries at the scenario's cadence (at MEM);
  mem    the least MEM at which the cell passes, up to what this machine can give ("nowhere up to ..." is an
         answer); its floor: MEM, or the verdict's tightest data-to-memory ratio;
  scale  the largest database (fraction of 1x) at which it passes at MEM, up to what the disk holds with a
         clone: the degradation curve on the way. Each scale is a starting state of its own, built once.
Every step is an ordinary cell from the same starting state (resumable like a sweep, early abort, integrity by
row counts); the knee is confirmed by a cell of its own with the scenario's every-row check. The search is the
read ceiling's (harness/walks/bracket.py), to within 10%. knee.json + report.md/html with the curve."""
from __future__ import annotations

import os
import shutil
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from harness.walks.bracket import Bracket, Verdict, verdict_of, walk
from harness.environment import utc_now
from harness.errors import EXIT_RUN_FAILED, EXIT_THRESHOLD_FAILED, ConfigError
from harness.results import KNEE_VERSION, KneeFile, KneeStep, load_result, write_json
from harness.results.design import behind_at_clock
from harness.results.phases import describe
from harness.scenario.plan import MEM_FLOOR_BYTES, resolve_plan
from harness.scenario.thresholds import parse_threshold, scaled_thresholds
from harness.walks.knee_continue import Chain, continued_rows
from harness.walks.knee_prior import KNEE_FILE, adopt
from harness.walks.sweep import Cell, CellOptions, CellRun, SweepInterrupted, plan_cells, run_cell, sweep_dir_for
from harness.units import parse_size_bytes

RESOLUTION = 0.1
NEAR = RESOLUTION * 0.95           # a started knee's neighbours: a pass and a failure this far apart converge
MAX_STEPS = 16
ROWS_RANGE = (1 / 64, 16)          # rows per block searched within these multiples of the scenario's
SCALE_RANGE = (1 / 32, 8)
HARNESS_RESERVE_BYTES = 4 << 30    # what a mem knee leaves the machine: the feed, the model, the OS
DISK_HEADROOM = 0.8                # of the free disk a scale knee may fill (each state and its clone)


def _log(msg: str) -> None:
    print(f"[knee] {msg}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Axis:
    """An axis in the search's difficulty (larger: harder): MEM is searched on its reciprocal."""
    name: str
    unit: str
    to_x: Callable[[float], float]
    from_x: Callable[[float], float]
    snap: Callable[[float], float]        # a value the axis can run, in its own unit
    floor: float                          # the easiest and hardest values the search may try (own unit)
    ceiling: float
    proportional: bool = False            # a step's lines grow in proportion with it (a block's latency, its rows)

    def bracket(self, start: float, near: bool = False, load=None) -> Bracket:
        """near: the start is where an earlier knee was found, so its neighbours within the resolution come next:
        the one above after a pass, the one below after a failure. A knee still there is settled in two steps
        and a confirmation, where doubling from it and bisecting back to the resolution takes five (a passing
        step is 11 minutes at the ratio profile)."""
        lo, hi = sorted((self.to_x(self.floor), self.to_x(self.ceiling)))
        x = self.to_x(start)

        def near_x(v: float) -> float:
            # snapped as the walk snaps what it runs, so a neighbour run is found among the runs
            return self.snap_x(min(max(v, lo), hi))
        if not near:
            return Bracket([x], lo, hi, RESOLUTION, load=load)
        return Bracket(sorted({x, near_x(x * (1 + NEAR))}), lo, hi, RESOLUTION, down=near_x(x / (1 + NEAR)),
                       load=load)

    def snap_x(self, x: float) -> float:
        return self.to_x(self.snap(self.from_x(x)))


def _mib(v: float) -> float:
    return float(max(MEM_FLOOR_BYTES, (int(v) >> 20) << 20))


def machine_mem_bound_bytes() -> int:
    """What a cell's MEM may be here: the machine's RAM less what the harness and the OS keep."""
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") - HARNESS_RESERVE_BYTES


def axis_for(name: str, probe, start: float, taking: bool = False) -> Axis:
    ident = (lambda v: v)
    if name == "rows":
        return Axis("rows", "rows per block", ident, ident, lambda v: float(max(1, round(v))),
                    max(1, start * ROWS_RANGE[0]), start * ROWS_RANGE[1], proportional=True)
    if name == "mem":
        return Axis("mem", "bytes of MEM", lambda v: 1 / v, lambda x: 1 / x, _mib, start,
                    _mib(machine_mem_bound_bytes()))
    if name == "scale":
        return Axis("scale", "fraction of 1x", ident, ident, lambda v: float(f"{v:.3g}"),
                    start * SCALE_RANGE[0], min(start * SCALE_RANGE[1], disk_scale_bound(probe, taking)))
    raise ConfigError(f"AXIS: {name!r}; allowed: rows, mem, scale")


def disk_scale_bound(probe, taking: bool = False) -> float:
    """The largest scale whose state and clone fit in the free disk, from this scale's state's bytes per 1x
    (the starting state, built now if missing); taking (DROP_STATES=1: each step moves its state in, so one
    state is on disk at a time): the largest whose state and its cell's writes fit."""
    from harness.state.sizes import growth_bytes
    from harness.state.build import ensure
    _, man, _ = ensure(probe)
    free = shutil.disk_usage(".").free      # states, clones and results share it here (docs/states.md)
    per_1x = man.data_bytes / probe.scale
    if taking:
        # at one cadence a cell's writes (its rows, the feed's spool of them) do not grow with the scale
        return max(0.0, (DISK_HEADROOM * (free + man.data_bytes) - growth_bytes(probe, man.data_bytes)) / per_1x)
    return DISK_HEADROOM * (free + man.data_bytes) / (2 * per_1x)


def mem_floor(scenario: str, engine: str, opts: CellOptions) -> str:
    """The verdict's tightest MEM for this profile (decision.yaml's ratios over its size_of state)."""
    from harness.scenario.decision import RatioMems, load_decision
    from harness.state.build import ensure
    tree = load_decision()
    spec = tree.mems.get(opts.profile or "")
    if not isinstance(spec, RatioMems):
        raise ConfigError(f"knee AXIS=mem: give MEM= (the lowest to try); profile {opts.profile!r} has no "
                          "data-to-memory ratios in decision.yaml")
    _, man, _ = ensure(resolve_plan(scenario, spec.size_of, profile=opts.profile, overrides=list(opts.overrides)))
    return f"{max(MEM_FLOOR_BYTES, int(man.data_bytes / max(spec.data_to_memory))) >> 20}m"


def mem_text(v: float) -> str:
    return f"{int(v) >> 20}m"


def step_cell(scenario: str, engine: str, axis: str, value: float, mem: str | None, scale: float | None,
              repeat: int, confirming: bool, aged_rows: int | None = None) -> Cell:
    """A step's cell; a step checks integrity by row counts, the knee's confirmation every row (the scenario's).
    aged_rows: a rows step's aged state is aged at the scenario's block size, so every step clones one state (a
    state aged per block size took 8 to 11 GiB and 1.5 min a step at 1x, 12-06; at 5x, a disk a step)."""
    check = () if confirming else ("integrity=counts",)
    if axis == "rows":
        ageing = (f"load.age_rows_per_block={aged_rows}",) if aged_rows else ()
        return Cell(scenario, engine, mem, scale, repeat, (f"workload.rows_per_block={int(value)}", *ageing, *check),
                    tag=f"rows{int(value)}{'-confirm' if confirming else ''}")
    if axis == "mem":
        return Cell(scenario, engine, mem_text(value), scale, repeat, check, tag="confirm" if confirming else "")
    return Cell(scenario, engine, mem, value, repeat, check, tag="confirm" if confirming else "")


def step_figures(cr: CellRun, value: float, confirming: bool) -> KneeStep:
    r = load_result(cr.dir / "result.json")
    status = cr.record.status if cr.record else "error"
    m = r.metrics if r else None
    failed_on = [] if status == "passed" else _failed_on(r) or [f"the run: {status}" + (f" ({r.error})" if r and r.error else "")]
    return KneeStep(value=value, confirming=confirming, repeat=cr.cell.repeat, status=status,
                    verdict=verdict_of(status), p99_ms=m and m.commit_latency_ms.p99,
                    service_p50_ms=m and m.service_time_ms.p50, rows_per_s=m and m.rows_per_s,
                    offered_rows_per_s=m and m.offered_rows_per_s, rows_per_block=r and r.plan["workload"]["rows_per_block"],
                    db_bytes=m and m.db_bytes_final, phases=describe(m.block_phases) if m else None,
                    biggest_phase=m.block_phases.biggest if m and m.block_phases else None,
                    early_abort=bool(r and r.early_abort), failed_on=failed_on, load=load_of(r),
                    continued_rows=continued_rows(cr.dir), cell=str(cr.dir.relative_to(cr.dir.parents[1])))


def load_of(r) -> float | None:
    """How close a step came to its lines: the largest measured value over its limit among its upper bounds (a
    p99, a busy share, a lag: what grows with a block's rows); above 1 it failed there. None without one."""
    loads = []
    for t in (r.thresholds if r else []):
        line = parse_threshold(t.expr)
        room = line.room(t.value) if line.op.startswith("<") and not line.of_offered and t.value is not None else None
        if room is not None:
            loads.append(1 - room)          # a line's room is 1 - measured/limit
    return max(loads, default=None)


def _failed_on(r) -> list[str]:
    """The lines a step failed, what bound it first: a block log's backlog carried from the warm-up (the step never
    kept up at its load: capacity.py's rule), then the line that stopped it early, then the rest as measured."""
    if r is None:
        return []
    behind = behind_at_clock(r)
    lines = sorted((t for t in r.thresholds if not t.passed), key=lambda t: not t.early_abort)
    return ([f"fell {behind:g} blocks behind in its warm-up (lag bound {r.metrics.block_log.lag_bound_blocks:g})"]
            if behind is not None else []) + [f"{t.expr} (measured {t.value:g})" if t.value is not None else t.expr
                                              for t in lines]


def knee(scenario: str, engine: str, axis_name: str, opts: CellOptions, results_root: Path,
         mem: str | None = None, scale: float | None = None, drop_states: bool = False,
         command: str | None = None, start_rows: float | None = None) -> int:
    """command: the make command that asked for it, kept in knee.json. drop_states: every step moves its state in
    (built again by a later step at the same scale), so a scale knee reaches twice as far on the same disk.
    start_rows: a rows knee's first step (default: the scenario's block); its range and its lines stay the
    scenario's, so a knee started near where an earlier sitting found it takes fewer steps, not other ones."""
    t0 = time.monotonic()
    if start_rows is not None and axis_name != "rows":
        raise ConfigError(f"START_ROWS: starts a rows knee; AXIS={axis_name} starts at the scenario's own value")
    opts = search_opts(opts, drop_states)
    if axis_name == "mem" and mem is None:
        mem = mem_floor(scenario, engine, opts)
    probe = resolve_plan(scenario, engine, profile=opts.profile, mem=mem, scale=scale, overrides=list(opts.overrides))
    base = {"rows": probe.workload.rows_per_block, "scale": probe.scale}.get(axis_name) or \
        float(parse_size_bytes(mem or "0"))
    if axis_name == "rows" and not probe.workload.block_interval_ms:
        raise ConfigError(f"{probe.scenario_file}: workload.block_interval_ms: a rows knee needs a cadence")
    axis = axis_for(axis_name, probe, base, taking=drop_states)
    if axis.floor >= axis.ceiling:
        raise ConfigError(f"knee AXIS={axis_name}: nothing to search between {axis.floor:g} and {axis.ceiling:g}")
    start = first_step(axis, base, start_rows)
    root = knee_dir(scenario, engine, axis_name, opts, results_root, mem, scale, start_rows)
    root.mkdir(parents=True, exist_ok=True)
    out = started(root, probe, engine, axis, mem, start, command)
    steps: list[KneeStep] = []
    chain = Chain(axis_name, drop_states, opts.continue_steps)    # steps on the database the step before left

    def plan_step(value: float, confirming: bool = False, repeat: int = 1) -> CellRun:
        cell = step_cell(scenario, engine, axis_name, value, mem, scale, repeat, confirming,
                         aged_rows=probe.workload.rows_per_block if probe.load.aged_state else None)
        step_opts = replace(opts, thresholds=scaled_thresholds(probe.thresholds, value / base)) \
            if axis_name == "rows" else opts
        return plan_cells([cell], step_opts, root, repeats=2)[0]

    def run_step(x: float, confirming: bool) -> Verdict:
        value = axis.from_x(x)
        cr = chain.step(plan_step(value, confirming, sum(s.value == value and s.confirming == confirming
                                                         for s in steps) + 1), confirming)
        label = f"step {len(steps) + 1}: {_fmt(axis_name, value)}" + (" (confirming, every row)" if confirming else "")
        cr.record = run_cell(cr, label)
        s = step_figures(cr, value, confirming)
        steps.append(s)
        _log(f"{label}: {s.verdict.upper()} ({s.status}); p99 {s.p99_ms} ms, service p50 {s.service_p50_ms} ms"
             + (f"; {s.phases}" if s.phases else ""))
        write_json(root / KNEE_FILE, out.model_copy(update={"steps": steps}))   # nothing lost if interrupted
        return s.verdict

    bracket = axis.bracket(start, near=start_rows is not None, load=lambda x: last_load(steps, axis.from_x(x)))
    try:
        for value in adopt(root, plan_step):        # another walk's steps of this point, this boot: known already
            bracket.record(axis.to_x(value), run_step(axis.to_x(value), False) == "pass")
        w = walk(bracket, run_step, MAX_STEPS, snap=axis.snap_x)
    except SweepInterrupted as e:
        _log(f"interrupted in {e}; run the same command again to resume")
        return EXIT_RUN_FAILED
    chain.close()
    return _finish(root, out.model_copy(update={"steps": steps}), axis, w, time.monotonic() - t0)


def started(root: Path, probe, engine: str, axis: Axis, mem: str | None, start: float, command: str | None) -> KneeFile:
    """The search's file before its first step, said."""
    _log(f"{root}: {engine} {probe.scenario} ({probe.profile}), {axis.name} from {_fmt(axis.name, start)} within "
         f"[{_fmt(axis.name, axis.floor)}, {_fmt(axis.name, axis.ceiling)}], to {RESOLUTION:.0%}")
    return KneeFile(version=KNEE_VERSION, axis=axis.name, unit=axis.unit, scenario=probe.scenario,
                    profile=probe.profile, engine=engine, mem=mem, scale=probe.scale, criteria=probe.thresholds,
                    floor=axis.floor, ceiling=axis.ceiling, start=start, resolution=RESOLUTION,
                    block_interval_ms=probe.workload.block_interval_ms, command=command, started_utc=utc_now())


def last_load(steps: list[KneeStep], value: float) -> float | None:
    """The load of the last step run at this value (a confirmation that refuted it, where one did)."""
    return next((s.load for s in reversed(steps) if s.value == value and s.verdict != "error"), None)


def first_step(axis: Axis, base: float, start_rows: float | None) -> float:
    """The search's first value: the scenario's, or a rows knee's START_ROWS within the axis's range."""
    if start_rows is None:
        return base
    if not axis.floor <= start_rows <= axis.ceiling:
        raise ConfigError(f"START_ROWS={start_rows:g}: a rows knee searches {axis.floor:g} to {axis.ceiling:g} "
                          f"rows per block around the scenario's {base:g}: start within them")
    return axis.snap(start_rows)


def knee_dir(scenario: str, engine: str, axis_name: str, opts: CellOptions, results_root: Path, mem: str | None,
             scale: float | None, start_rows: float | None = None) -> Path:
    """Where a search of these inputs keeps its steps and knee.json (opts as the search runs them: early abort on,
    take_states as asked): the same inputs, the same folder (one started elsewhere, a folder of its own)."""
    return sweep_dir_for(results_root, "knee", f"{Path(scenario).stem}-{engine}-{axis_name}",
                         {"scenario": scenario, "engine": engine, "axis": axis_name, "mem": mem, "scale": scale,
                          "opts": opts.asked()} | started_at(start_rows))


def started_at(start_rows: float | None) -> dict:
    """What START_ROWS adds to a walk's name: nothing unset, so a knee started at the scenario's block keeps the
    folder it had before START_ROWS."""
    return {} if start_rows is None else {"start_rows": start_rows}


def search_opts(opts: CellOptions, drop_states: bool) -> CellOptions:
    """A knee's steps stop early where a line can no longer pass; DROP_STATES=1 moves each step's state in."""
    return replace(opts, early_abort=True, take_states=drop_states)


def _finish(root: Path, out: KneeFile, axis: Axis, w, wall_s: float) -> int:
    knee_value = axis.from_x(w.knee) if w.knee is not None else None
    out = out.model_copy(update={"knee": knee_value, "converged": w.converged, "complete": True,
                                 "inconclusive_at": axis.from_x(w.inconclusive_at) if w.inconclusive_at else None,
                                 "finished_utc": utc_now(), "wall_s": round(wall_s, 1)})
    out = out.model_copy(update={"sentence": sentence(out)})
    write_json(root / KNEE_FILE, out)
    from harness.report import write_report
    _, html = write_report(root)
    _log(out.sentence)
    _log(f"{len(out.steps)} steps in {wall_s / 60:.1f} min")
    print(root / KNEE_FILE)
    print(html)
    if out.inconclusive_at is not None:
        return EXIT_RUN_FAILED
    return 0 if knee_value is not None else EXIT_THRESHOLD_FAILED


def _fmt(axis: str, v: float | None) -> str:
    if v is None:
        return "-"
    return {"rows": lambda: f"{v:,.0f} rows/block", "mem": lambda: mem_text(v),
            "scale": lambda: f"scale {v:g}"}[axis]()


def knee_runs(k: KneeFile) -> tuple[list[KneeStep], KneeStep | None]:
    """The knee's passing runs, and the nearest step beyond it that failed (None: the search's bound passed)."""
    runs = [s for s in k.steps if s.value == k.knee and s.verdict == "pass"]
    fails = [s for s in k.steps if s.verdict == "fail" and (s.value < k.knee if k.axis == "mem" else s.value > k.knee)]
    return runs, (max if k.axis == "mem" else min)(fails, key=lambda s: s.value) if fails else None


def sentence(k: KneeFile) -> str:
    """The answer in one line: the knee with its rate and what bounded it, or where it passes nowhere."""
    where = f"{k.engine} {k.scenario} ({k.profile})" + (f" under {k.mem}" if k.mem and k.axis != "mem" else "") \
        + (f" at scale {k.scale:g}" if k.axis != "scale" else "")
    if k.inconclusive_at is not None:
        return f"{where}: inconclusive: the step at {_fmt(k.axis, k.inconclusive_at)} errored twice (see its cell)"
    if not k.converged:
        return f"{where}: no knee confirmed within {MAX_STEPS} steps; the steps show where it wavered"
    easiest = k.floor if k.axis != "mem" else k.ceiling
    if k.knee is None:
        return f"{where}: passes nowhere, not even at {_fmt(k.axis, easiest)}"
    runs, nearest = knee_runs(k)
    hardest = k.floor if k.axis == "mem" else k.ceiling
    reached = "" if nearest else f" (the search's bound {_fmt(k.axis, hardest)} passed: the knee may lie beyond)"
    rate = (f", {min(s.rows_per_s or 0 for s in runs):,.0f} rows/s" if k.axis == "rows" else "")
    p99 = max((s.p99_ms or 0) for s in runs)
    bound = f"; fails at {_fmt(k.axis, nearest.value)}: {', '.join(nearest.failed_on)}" if nearest else ""
    what = {"rows": "carries up to", "mem": "needs at least", "scale": "holds up to"}[k.axis]
    return f"{where} {what} {_fmt(k.axis, k.knee)}{rate} (p99 {p99:,.0f} ms){reached}{bound}"
