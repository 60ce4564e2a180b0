"""`make experiments`: the reference's seed experiments (scenarios/experiments/) as sweep cells, one per arm,
and one report that sets each of our ratios beside the reference's, with what of this machine explains a
difference: its fsync floor and disk write bandwidth, next to the reference's own setup. Resumable."""
from __future__ import annotations

import sys
from pathlib import Path

from harness.environment import utc_now
from harness.errors import EXIT_RUN_FAILED, ConfigError
from harness.results import RunResult, load_result, write_json
from harness.scenario.experiment import Experiment, experiment_files, load_experiment
from harness.walks.sweep import Cell, CellOptions, SweepInterrupted, plan_cells, run_cells, sweep_dir_for

EXPERIMENTS_VERSION = 1


def figure(r: RunResult | None, name: str) -> float | None:
    if r is None or r.status not in ("passed", "failed"):
        return None
    m = r.metrics
    return {"rows_per_s": m.rows_per_s, "commit_p50_ms": m.commit_latency_ms.p50,
            "commit_p99_ms": m.commit_latency_ms.p99}[name]


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 4) if a is not None and b else None


def table(name: str, exp: Experiment, results: dict[str, RunResult | None]) -> dict:
    """Each arm's figure, its ratio to the baseline (and, on a ladder, its cost over the rung before), and
    where the reference measured the same comparison, both ratios against the reference's baseline arm."""
    ours = {arm: figure(results.get(arm), exp.figure) for arm in exp.arms}
    ref = exp.reference
    rows, before = [], None
    for arm, spec in exp.arms.items():
        row = {"arm": arm, "says": spec.says, "status": results[arm].status if results.get(arm) else "not run",
               "value": ours[arm], "vs_baseline": _ratio(ours[arm], ours[exp.baseline])}
        if exp.ladder and before is not None:
            step = _ratio(ours[arm], ours[before])
            row["step_cost"] = round(1 - step, 4) if step is not None else None
        if ref and arm in ref.values and arm != ref.baseline:
            row["ours_vs_ref_baseline"] = _ratio(ours[arm], ours[ref.baseline])
            row["reference_ratio"] = _ratio(ref.values[arm], ref.values[ref.baseline])
            row["ours_over_reference"] = _ratio(row["ours_vs_ref_baseline"], row["reference_ratio"])
        rows.append(row)
        before = arm
    out = {"experiment": name, "description": exp.description, "figure": exp.figure, "baseline": exp.baseline,
           "rows": rows, "reference": ref.model_dump() if ref else None}
    costs = [r for r in rows if r.get("step_cost") is not None]
    if costs:
        dear = max(costs, key=lambda r: r["step_cost"])
        out["dearest"] = {"arm": dear["arm"], "says": dear["says"], "step_cost": dear["step_cost"]}
    return out


def experiments(names: list[str] | None, opts: CellOptions, results_root: Path) -> int:
    exps = {f.stem: load_experiment(f) for f in experiment_files(names)}
    spec = {"experiments": sorted(exps), "opts": opts.asked()}
    root = sweep_dir_for(results_root, "experiments", opts.profile or "default", spec)
    root.mkdir(parents=True, exist_ok=True)
    cells, arm_of = [], {}
    for name, exp in exps.items():
        for arm, a in exp.arms.items():
            c = Cell(exp.scenario, exp.engine, None, None, overrides=tuple(exp.set + a.set), tag=f"{name}-{arm}")
            cells.append(c)
            arm_of[c.tag] = (name, arm)
    try:
        runs = plan_cells(cells, opts, root, 1)
    except ConfigError as e:
        raise ConfigError(f"experiments: {e}") from None
    print(f"[experiments] {root}: {len(exps)} experiments, {len(runs)} arms", file=sys.stderr, flush=True)
    try:
        run_cells(runs, root / "sweep.json", {"kind": "experiments", "spec": spec, "dir": str(root)})
    except SweepInterrupted as e:
        print(f"[experiments] interrupted in cell {e}; run the same command again to resume", file=sys.stderr)
        return EXIT_RUN_FAILED
    results: dict[str, dict[str, RunResult | None]] = {n: {} for n in exps}
    env = None
    for cr in runs:
        name, arm = arm_of[cr.cell.tag]
        r = load_result(cr.dir / "result.json")
        results[name][arm] = r
        env = env or (r.environment if r else None)
    tables = [table(n, e, results[n]) for n, e in exps.items()]
    out = {"version": EXPERIMENTS_VERSION, "kind": "experiments", "dir": str(root), "updated_utc": utc_now(),
           "profile": opts.profile, "machine": machine(env), "experiments": tables}
    write_json(root / "experiments.json", out)
    text = markdown(out)
    (root / "experiments.md").write_text(text)
    print(text)
    print(root / "experiments.json")
    return 0 if all(r["status"] in ("passed", "failed") for t in tables for r in t["rows"]) else EXIT_RUN_FAILED


def machine(env: dict | None) -> dict:
    """What of this machine explains a ratio that differs from the reference's."""
    if not env:
        return {}
    return {"cpu_model": env.get("cpu_model"), "cpus_usable": env.get("cpus_usable"),
            "filesystem": env.get("filesystem"), "fsync_floor": env.get("fsync_floor"),
            "disk_write": env.get("disk_write"), "disk_random_read": env.get("disk_random_read")}


def _f(v, spec=",.0f") -> str:
    return "-" if v is None else format(v, spec)


def markdown(out: dict) -> str:
    m = out["machine"]
    fs, disk, rd = m.get("fsync_floor") or {}, m.get("disk_write") or {}, m.get("disk_random_read") or {}
    lines = ["## The reference's experiments, here", "",
             f"This machine: {m.get('cpu_model')}, {m.get('cpus_usable')} CPUs; data on "
             f"{(m.get('filesystem') or {}).get('fstype')} ({(m.get('filesystem') or {}).get('device')}); "
             f"fsync of 4 KiB p50 {_f(fs.get('p50_us'), ',.0f')} µs, p99 {_f(fs.get('p99_us'), ',.0f')} µs; "
             f"writes synced once: sequential {_f(disk.get('sequential_write_mib_per_s'), ',.0f')} MiB/s, "
             f"random 4 KiB {_f(disk.get('random_write_mib_per_s'), ',.0f')} MiB/s; a random 4 KiB read from the "
             f"device p50 {_f(rd.get('p50_us'), ',.0f')} µs, p99 {_f(rd.get('p99_us'), ',.0f')} µs.", ""]
    for t in out["experiments"]:
        ref = t["reference"]
        lines += [f"### {t['experiment']}: {t['description']}", "",
                  f"| arm | status | {t['figure']} | vs {t['baseline']} |"
                  + (" rung cost |" if t.get("dearest") else "")
                  + (f" ours vs {ref['baseline']} | reference vs {ref['baseline']} | ours / reference |" if ref else ""),
                  "|---|---|---:|---:|" + ("---:|" if t.get("dearest") else "") + ("---:|---:|---:|" if ref else "")]
        for r in t["rows"]:
            line = (f"| {r['arm']}: {r['says']} | {r['status']} | {_f(r['value'])} | {_f(r['vs_baseline'], '.3f')} |"
                    + (f" {_f(r.get('step_cost'), '.1%')} |" if t.get("dearest") else ""))
            if ref:
                line += (f" {_f(r.get('ours_vs_ref_baseline'), '.3f')} | {_f(r.get('reference_ratio'), '.3f')} |"
                         f" {_f(r.get('ours_over_reference'), '.2f')} |")
            lines.append(line)
        if t.get("dearest"):
            d = t["dearest"]
            lines += ["", f"Dearest rung: {d['arm']} ({d['says']}), {d['step_cost']:.1%} of the rows/s before it."]
        if ref:
            lines += ["", f"Reference: {ref['source']}; {ref['setup']}; its figure: {ref['figure']}."]
        lines.append("")
    return "\n".join(lines)
