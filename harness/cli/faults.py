"""`harness faults` (make faults): the fault campaign over a block log, every engine under SIGKILL and a
simulated power cut, one crash run each (scenarios/log_faults.yaml), then one table and campaign.json."""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from harness.cli.args import overrides

MODES = ("kill", "power_cut")


def add_faults(sub) -> None:
    f = sub.add_parser("faults", help="a fault campaign over a block log: kills and power cuts, acknowledged "
                                      "blocks lost, replay and recovery times")
    f.add_argument("--engines", nargs="+", default=["sqlite", "postgres"])
    f.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    f.add_argument("--scenario", default="log_faults")
    f.add_argument("--profile", help="smoke | quick (default: the scenario's)")
    f.add_argument("--results", default="results", type=Path)
    f.add_argument("--data", default=None, type=Path)
    overrides(f)
    f.set_defaults(func=_cmd_faults, writes=True)


def _cmd_faults(args) -> int:
    from harness.cell import execute
    from harness.crash.campaign import campaign_row, clean, table
    from harness.results import load_result
    from harness.scenario.plan import resolve_plan
    cells = [(e, m) for e in args.engines for m in args.modes]
    plans = [resolve_plan(args.scenario, e, profile=args.profile, results_root=args.results, data_root=args.data,
                          overrides=[*args.overrides, f"workload.crash.mode={m}"]) for e, m in cells]
    t0, rows = time.perf_counter(), []
    for i, ((engine, mode), plan) in enumerate(zip(cells, plans), 1):
        print(f"[faults] {i}/{len(cells)}: {engine}, {mode}", file=sys.stderr)
        start = time.perf_counter()
        execute(plan.model_copy(update={"runtime": "local"}))
        result = Path(plan.run_dir) / "result.json"
        if not result.exists():
            print(f"[faults] {engine}, {mode}: no result ({plan.run_dir})", file=sys.stderr)
            continue
        rows.append(campaign_row(load_result(result), time.perf_counter() - start))
    out = args.results / f"faults-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps({"version": 1, "scenario": args.scenario, "profile": plans[0].profile,
                               "wall_s": round(time.perf_counter() - t0, 1), "cells": rows}, indent=1))
    print(table(rows))
    print(f"wall time {(time.perf_counter() - t0) / 60:.1f} min; {out}")
    return 0 if len(rows) == len(cells) and all(clean(r) for r in rows) else 1
