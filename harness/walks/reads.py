"""`make reads ENGINE= [PROFILE=ratio|full] [MIXES="a b c dc"] [CONNECTIONS="1 10"] [MEM=]`: the reference's read
benchmark (its "Benchmark Protocol" and test matrix), reads alone. For each mix and each number of connections, a
read ceiling (walks/ceiling.py) over scenarios/read_mix_<mix>.yaml: the offered rate stepped from 100 QPS to the
reference's 10K (the scenario's ceiling section), each step the protocol's own counts, 1,000 queries of warm-up
and 10,000 measured at that rate, then 5 s of cool-down; a step passes where p99 < 100 ms and at least 95% of the
offered rate is met. The profile sets the size: ratio 1x, full 5x (the DC mix: 2 and 11 data centres). Each
search is a ceiling of its own (resumable, its knee repeated, its report); reads.json keeps one row per mix and
connections: the knee, its p99, what bounded it, and whether the answers were checked. The reference's mixes A, B
and C have no model answer ("not checkable", never a zero); the Data Center's scheduler mix (dc) has, and every
one of its answers is checked."""
from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

from harness.environment import utc_now
from harness.errors import EXIT_RUN_FAILED, ConfigError
from harness.report.publish_ceiling import answers_checked
from harness.report.success.publish_reads import READS_FILE
from harness.results import load_result, write_json
from harness.results.headroom import Host
from harness.scenario.plan import resolve_plan
from harness.walks.ceiling import CEILING_FILE, ceiling, search_dir
from harness.walks.sweep import CellOptions, sweep_dir_for

READS_VERSION = 2     # 2: the walk's settings (overrides), which a table of several sittings' searches shares
MIXES = ("a", "b", "c", "dc")    # the reference's three mixes, and the DC's, whose answers are checked
CONNECTIONS = (1, 10)            # its test matrix: 1 and 10 connections


def _log(msg: str) -> None:
    print(f"[reads] {msg}", file=sys.stderr, flush=True)


def scenario_of(mix: str) -> str:
    return f"read_mix_{mix}"


def searches(opts: CellOptions, mixes, connections) -> list[tuple[str, int, CellOptions]]:
    """Each (mix, connections, the options of its ceiling): the connections a setting of the scenario, so every
    search is an ordinary `make ceiling SCENARIO=read_mix_<mix> SET="readers.threads=<n>"`."""
    return [(mix, n, replace(opts, overrides=(*opts.overrides, f"readers.threads={n}")))
            for mix in mixes for n in connections]


def protocol(engine: str, opts: CellOptions, mix: str, mem: str | None) -> dict:
    """What each step of a mix offers: its queries and the rates tried, from the resolved scenario."""
    plan = resolve_plan(scenario_of(mix), engine, profile=opts.profile, mem=mem, overrides=list(opts.overrides))
    if plan.workload.writes:
        raise ConfigError(f"{plan.scenario_file}: workload.writes is true: `make reads` measures reads alone")
    p = plan.phases
    return {"warmup_queries": p.warmup_queries, "measure_queries": p.measure_queries, "cooldown_s": p.cooldown_s,
            "steps_qps": plan.ceiling.steps_qps, "max_qps": plan.ceiling.max_qps, "criteria": plan.thresholds,
            "scale": plan.scale}


def reads(engine: str, opts: CellOptions, results_root: Path, mixes=MIXES, connections=CONNECTIONS,
          mem: str | None = None, command: str | None = None) -> int:
    """Every mix x connections' ceiling, one after another; reads.json after each (an interrupted walk loses
    nothing: run the same command again and each finished search is read back, not run)."""
    todo = searches(opts, mixes, connections)
    protocols = {mix: protocol(engine, o, mix, mem) for mix, _, o in todo}
    spec = {"engine": engine, "mem": mem, "mixes": list(mixes), "connections": list(connections), "opts": opts.asked()}
    root = sweep_dir_for(results_root, "reads", engine, spec)
    root.mkdir(parents=True, exist_ok=True)
    out = {"version": READS_VERSION, "kind": "reads", "engine": engine, "mem": mem, "profile": opts.profile,
           "overrides": list(opts.overrides), "command": command, "protocol": protocols, "rows": [], "started_utc": utc_now(), "complete": False}
    _log(f"{root}: {len(todo)} searches ({', '.join(mixes)} x {', '.join(map(str, connections))} connections)")
    spans: list[str] = []
    for i, (mix, n, o) in enumerate(todo, 1):
        _log(f"search {i}/{len(todo)}: mix {mix}, {n} connection{'s' * (n > 1)}")
        ceiling(scenario_of(mix), engine, o, results_root, mem=mem)
        done = search_dir(scenario_of(mix), engine, o, results_root, mem) / CEILING_FILE
        c = json.loads(done.read_text()) if done.exists() else {}
        if not c.get("complete"):
            _log(f"mix {mix}, {n} connections: interrupted; run the same command again to resume")
            return EXIT_RUN_FAILED
        out["rows"].append(row_of(mix, n, c, done.parent))
        # the searches' own times: a walk resumed over finished searches measured nothing then
        out["started_utc"] = min(out["started_utc"], c["started_utc"])
        spans.append(c.get("finished_utc") or c["started_utc"])
        write_json(root / READS_FILE, out)
    out["complete"], out["finished_utc"] = True, max(spans, default=utc_now())
    write_json(root / READS_FILE, out)
    for r in out["rows"]:
        _log(r["sentence"])
    print(root / READS_FILE)
    return 0


def row_of(mix: str, connections: int, c: dict, search: Path) -> dict:
    """One row of the reference's table from a finished ceiling: the knee (None: not even the lowest rate
    held), whether its answers were checked, and the host its runs measured on."""
    k = c.get("knee") or {}
    # no knee: what failed at the lowest rate tried bounds it, and its answers say whether they were checked (12-06's
    # DC rows said "not checkable" and named no bound, of 225 answers checked and a p99 of 102 s)
    lowest = min((s["offered_qps"] for s in c["steps"]), default=None)
    if k:
        at = [s for s in c["steps"] if s["offered_qps"] == k["knee_read_qps"] and s["passed"]]
        bounded_by = k.get("bounded_by", [])
    else:
        at = [s for s in c["steps"] if s["offered_qps"] == lowest]
        bounded_by = list(dict.fromkeys(f for s in at for f in s.get("failed_on") or []))
    results = [r for s in at if (r := load_result(search / s["cell"] / "result.json")) is not None]
    return {"mix": mix, "connections": connections, "scale": c["scale"], "knee_read_qps": k.get("knee_read_qps"),
            "reached": k.get("reached"), "achieved_qps": k.get("achieved_qps"),
            "read_p99_ms": k.get("knee_read_p99_ms"), "bounded_at_qps": k.get("bounded_at_qps", lowest),
            "bounded_by": bounded_by, "answers": answers_checked(results),
            "host": Host.of(results[0].environment).model_dump() if results else None,
            "sitting": (c.get("finished_utc") or c["started_utc"])[:10],
            "boot_id": results[0].environment.get("boot_id") if results else None,   # merge.sitting_of
            "search": search.name, "sentence": f"mix {mix}, {connections} connections: {c['sentence']}"}
