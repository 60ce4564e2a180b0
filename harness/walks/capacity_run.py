"""`make capacity ENGINE= SCENARIO= [MEM=] [PROFILE=] [SET=]`: one configuration's capacity on its own, as the
verdict measures a candidate's (walks/capacity.py): its scenario in full at the offered load, then steps of
SCREEN_BLOCKS measured blocks with the same blocks due more often, every line applied (an absolute rate's raised
with the load), until the largest multiple that holds is bracketed to within 10%. Resumable: a step already run is
found, not run again. capacity.json holds the cell at 1x, every step and the host."""
from __future__ import annotations

import sys
import time
from dataclasses import replace
from pathlib import Path

from harness.environment import utc_now
from harness.errors import EXIT_RUN_FAILED, EXIT_THRESHOLD_FAILED, ConfigError
from harness.records import Cell
from harness.results import load_result, write_json
from harness.results.base import Model
from harness.results.headroom import Capacity, Host
from harness.scenario.plan import resolve_plan
from harness.walks import capacity as cap
from harness.scenario.thresholds import scaled_thresholds
from harness.walks.sweep import CellOptions, SweepInterrupted, plan_cells, run_cell, sweep_dir_for

CAPACITY_FILE = "capacity.json"
SCREEN_BLOCKS = 60          # a step's measured blocks: decision.yaml's screen_blocks, 2 minutes at a 2 s cadence


class CapacityFile(Model):
    version: int = 1
    kind: str = "capacity"
    scenario: str
    engine: str
    profile: str | None
    mem: str | None
    overrides: list[str] = []
    command: str | None = None                  # the make command that asked for it
    base_cell: str                              # <scenario>/<dir>: the scenario in full at the offered load
    base_status: str | None = None
    base_busy: float | None = None
    capacity: Capacity | None = None
    sentence: str = ""
    wall_s: float | None = None
    updated_utc: str


def _log(msg: str) -> None:
    print(f"[capacity] {msg}", file=sys.stderr, flush=True)


def run_capacity(scenario: str, engine: str, opts: CellOptions, results_root: Path, mem: str | None = None,
                 command: str | None = None) -> int:
    t0 = time.monotonic()
    probe = resolve_plan(scenario, engine, profile=opts.profile, mem=mem, overrides=list(opts.overrides))
    interval_ms = probe.workload.block_interval_ms
    if not interval_ms:
        raise ConfigError(f"{probe.scenario_file}: workload.block_interval_ms: a capacity needs a cadence")
    root = sweep_dir_for(results_root, "capacity", f"{Path(scenario).stem}-{engine}",
                         {"scenario": scenario, "engine": engine, "mem": mem, "opts": opts.asked()})
    root.mkdir(parents=True, exist_ok=True)
    bound = probe.block_log.utilisation_bound if probe.block_log is not None else None
    try:
        [base] = plan_cells([Cell(scenario, engine, mem, None)], opts, root, 1)
        base.record = run_cell(base, "at the offered load")
        r1 = load_result(base.dir / "result.json")
        busy = r1.metrics.block_log.apply_utilisation if r1 is not None and r1.metrics.block_log else None
        out = CapacityFile(scenario=probe.scenario, engine=engine, profile=probe.profile, mem=mem,
                           overrides=list(opts.overrides), command=command, base_cell=f"{probe.scenario}/{base.dir.name}",
                           base_status=base.record.status, base_busy=busy, updated_utc=utc_now())
        _log(f"{engine} {probe.scenario} at the offered load: {base.record.status}"
             + (f", applier {busy:.0%} busy" if busy is not None else ""))

        def measure(m: float):
            step_s = interval_ms / 1000 / m
            cell = Cell(scenario, engine, mem, None, 1, (f"workload.block_interval_ms={interval_ms / m:g}",
                                                         f"phases.measure_s={SCREEN_BLOCKS * step_s:g}"),
                        cap.load_tag("", m))
            [cr] = plan_cells([cell], replace(opts, thresholds=scaled_thresholds(probe.thresholds, m)), root, 1)
            cr.record = run_cell(cr, f"{m:.2f}x the load")
            step = cap.step_of(m, load_result(cr.dir / "result.json"), f"{probe.scenario}/{cr.dir.name}",
                               cap.Growth.of(r1))
            _log(step.says())
            return step
        got = cap.search(measure, cap.first_multiple(busy, bound), bound)
    except SweepInterrupted as e:
        _log(f"interrupted in {e}; run the same command again to resume")
        return EXIT_RUN_FAILED
    env = r1.environment if r1 is not None else {}
    got = got.model_copy(update={"of": engine, "mem": mem, "sitting": utc_now()[:10], "code": env.get("git_commit"),
                                 "host": Host.of(env)})
    said = (f"{engine} {probe.scenario} ({probe.profile}){' under ' + mem if mem else ''}: carries {got.figure()} "
            f"the offered load" + (f" ({got.binding()})" if got.binding() else "") + f"; {len(got.steps)} step{'s' if len(got.steps) != 1 else ''}")
    out = out.model_copy(update={"capacity": got, "sentence": said, "wall_s": round(time.monotonic() - t0, 1),
                                 "updated_utc": utc_now()})
    write_json(root / CAPACITY_FILE, out)
    _log(said)
    for s in got.steps:
        _log(f"  {s.multiple:.2f}x: {'pass' if s.passed else 'FAIL'}; busy {_pct(s.busy)}, lag p99 {s.lag_p99_blocks}"
             f" blocks, p99 {s.p99_ms} ms, queryable p99 {s.queryable_p99_ms} ms{'; ' + s.why if s.why else ''}")
    print(root / CAPACITY_FILE)
    return 0 if got.multiple is not None and got.multiple >= 1 else EXIT_THRESHOLD_FAILED


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v:.0%}"
