"""`make v1 ENGINE=<e> [MEM=] [PROFILE=quick]`: the reference's V1 go/no-go (scenarios/v1.yaml). For each write
rate, lowest first, a ceiling search (harness/walks/ceiling.py) of the DC read rate under v1's criteria, on a
database of the profile's share of the 621K entities; the frontier is every write rate's highest passing
read rate. A write rate whose lowest read rate fails ends the walk: a higher one would fail too. Go when
some write rate of at least go.write_rows_per_s carried at least go.read_qps.

The searches nest in v1's folder (resumable: the same command again resumes where it stopped); v1.json
holds the frontier and the answer, which names the machine it was measured on."""
from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

from harness.walks.ceiling import ceiling, search_dir
from harness.environment import utc_now
from harness.errors import EXIT_RUN_FAILED, EXIT_THRESHOLD_FAILED, ConfigError
from harness.results import read_json, write_json
from harness.scenario.plan import resolve_plan
from harness.scenario.v1 import DATA_CENTRES, V1, load_v1
from harness.walks.sweep import CellOptions, sweep_dir_for

V1_VERSION = 1
V1_FILE_NAME = "v1.json"


def _log(msg: str) -> None:
    print(f"[v1] {msg}", file=sys.stderr, flush=True)


def _yaml_list(items) -> str:
    return "[" + ", ".join(str(i) for i in items) + "]"


def step_overrides(v1: V1, share: float, write_rows_per_s: float, block_interval_ms: float) -> list[str]:
    """One write rate's search as SET items: the entities' share, the block size that makes the rate at the
    scenario's cadence, the criteria and the read rates."""
    fraction, scale = v1.dc_entities(share)
    # V1's DC count, not the scenario's (its profiles load two): the fraction is of these DCs
    return [f"workload.dc.data_centres={DATA_CENTRES}", f"workload.dc.fraction={fraction:.6g}",
            f"load.scale={scale:.6g}",
            f"workload.rows_per_block={max(1, round(write_rows_per_s * block_interval_ms / 1000))}",
            f"thresholds={_yaml_list(v1.criteria)}", f"ceiling.steps_qps={_yaml_list(f'{q:g}' for q in v1.read_qps)}",
            f"ceiling.max_qps={v1.max_read_qps:g}", *([f"readers.mix={v1.mix}"] if v1.mix else [])]


def v1_walk(engine: str, opts: CellOptions, results_root: Path, mem: str | None = None,
            v1: V1 | None = None, command: str | None = None) -> int:
    """command: the make command that asked for it, kept in v1.json (what a published figure names)."""
    v1 = v1 or load_v1()
    profile = opts.profile or "quick"
    if profile not in v1.profiles:
        raise ConfigError(f"PROFILE={profile}: v1.yaml has profiles {', '.join(v1.profiles)}")
    share = v1.profiles[profile].share
    base = resolve_plan(v1.scenario, engine, profile=profile, mem=mem, overrides=list(opts.overrides))
    interval = base.workload.block_interval_ms
    if not interval:
        raise ConfigError(f"{base.scenario_file}: workload.block_interval_ms: v1 steps a write rate, so the "
                          "scenario needs a cadence")
    opts = dataclasses.replace(opts, profile=profile)
    root = sweep_dir_for(results_root, "v1", engine, {"engine": engine, "mem": mem, "opts": opts.asked(),
                                                       "v1": v1.model_dump()})
    root.mkdir(parents=True, exist_ok=True)
    out = {"version": V1_VERSION, "kind": "v1", "engine": engine, "mem": mem, "profile": profile, "share": share,
           "entities": round(share * v1.entities), "scenario": v1.scenario, "criteria": v1.criteria,
           "go_needs": v1.go.model_dump(), "block_interval_ms": interval, "started_utc": utc_now(),
           "command": command, "frontier": [], "complete": False}
    _log(f"{root}: {engine}, {out['entities']:,} entities ({share:g} of {v1.entities:,}), writes "
         f"{', '.join(f'{w:,.0f}' for w in v1.write_rows_per_s)} rows/s, reads from "
         f"{', '.join(f'{q:,.0f}' for q in v1.read_qps)} QPS up to {v1.max_read_qps:,.0f}")
    for w in v1.write_rows_per_s:
        step_opts = dataclasses.replace(opts, overrides=opts.overrides + tuple(step_overrides(v1, share, w, interval)))
        _log(f"writes at {w:,.0f} rows/s: the read ceiling")
        rc = ceiling(v1.scenario, engine, step_opts, root, mem=mem)
        found = read_json(search_dir(v1.scenario, engine, step_opts, root, mem) / "ceiling.json")
        if found is None or not found.get("complete"):
            write_json(root / V1_FILE_NAME, out)
            _log(f"the search at {w:,.0f} rows/s did not finish (exit {rc}); run the same command again to resume")
            return EXIT_RUN_FAILED
        search = search_dir(v1.scenario, engine, step_opts, root, mem)
        out["frontier"].append(frontier_point(w, found, search, root))
        out["measured_on"] = out.get("measured_on") or measured_on(search, found)
        write_json(root / V1_FILE_NAME, out)
        if found.get("knee") is None:
            _log(f"no read rate passed beside {w:,.0f} rows/s: the walk ends")
            break
    out.update(complete=True, finished_utc=utc_now(), **answer(out["frontier"], v1))
    out["sentence"] += (f"; measured on {out.get('measured_on') or 'this machine'}, not a promise for other hardware"
                        + bigger_machine(out["frontier"], base.capabilities.server))
    write_json(root / V1_FILE_NAME, out)
    from harness.report import write_report
    _, html = write_report(root)
    _log(out["sentence"])
    print(root / V1_FILE_NAME)
    print(html)
    return 0 if out["go"] else EXIT_THRESHOLD_FAILED


def measured_on(search: Path, found: dict) -> str | None:
    """The machine in a few words, from a step's environment: the answer holds for it, not for another."""
    for step in found.get("steps") or []:
        env = (read_json(search / step["cell"] / "result.json") or {}).get("environment") or {}
        if env:
            disk, fs = env.get("disk_write") or {}, env.get("fsync_floor") or {}
            return (f"{env.get('cpu_model', '?')} x {env.get('cpus_usable', '?')} cores, "
                    f"{(env.get('ram_bytes') or 0) / 2**30:.0f} GiB RAM, synced writes "
                    f"{disk.get('sequential_write_mib_per_s', '?')} MiB/s, fsync p50 {fs.get('p50_us', '?')} us")
    return None


def frontier_point(write_rows_per_s: float, found: dict, search: Path, root: Path) -> dict:
    """A write rate's point: its knee's figures, or where none passed, those of the lowest read rate tried;
    and every answer its steps checked."""
    k = found.get("knee") or {}
    steps = found.get("steps") or []
    point = {"write_rows_per_s": write_rows_per_s, "read_qps": k.get("knee_read_qps"), "reached": k.get("reached"),
             "read_p99_ms": k.get("knee_read_p99_ms"), "write_p99_ms": k.get("knee_write_p99_ms"),
             "write_rows_per_s_achieved": k.get("write_rows_per_s"), "bounded_by": k.get("bounded_by") or [],
             "readers_cpu_share": k.get("readers_cpu_share"),
             "steps": len(steps), "search": str(search.relative_to(root)), "answers_checked": 0, "answers_wrong": 0}
    if not k and steps:
        low = min(steps, key=lambda s: s["offered_qps"])
        point.update(read_p99_ms=low["read_p99_ms"], write_p99_ms=low["write_p99_ms"],
                     write_rows_per_s_achieved=low["write_rows_per_s"], bounded_by=low["failed_on"],
                     readers_cpu_share=low.get("readers_cpu_share"),
                     lowest={"offered_qps": low["offered_qps"], "achieved_qps": low["achieved_qps"],
                             "reads_late": low.get("reads_late")})
    for s in steps:
        kinds = ((read_json(search / s["cell"] / "result.json") or {}).get("metrics") or {}).get("reads_by_kind") or {}
        point["answers_checked"] += sum(v.get("checked") or 0 for v in kinds.values())
        point["answers_wrong"] += sum(v.get("wrong") or 0 for v in kinds.values())
    return point


READERS_CPU_BOUND = 0.7      # the readers' share of every core at a knee from which more cores would carry more


def bigger_machine(frontier: list[dict], server: bool = False) -> str:
    """What more cores would change, from the readers' CPU share at the knees: near all of it, the readers were
    the bound; well below, the engine was (its locks, its I/O), which cores do not lift. Where no read rate
    passed, only the readers' share at the lowest one tried (the writer's is not here, so no conclusion). Not
    for a server's clients: their queries run in its processes, so their own share says nothing of it."""
    if server:
        return ("; the readers are the server's clients, their queries run in its processes: their own CPU share "
                "does not tell what more cores would change")
    knees = [p["readers_cpu_share"] for p in frontier if p.get("readers_cpu_share") is not None and p["read_qps"]]
    lowest = [p["readers_cpu_share"] for p in frontier if p.get("readers_cpu_share") is not None]
    if not knees:       # the writer shared the cores too, and its share is not here: the readers' alone, said
        return (f"; no read rate passed: at the lowest tried the readers used {max(lowest):.0%} of every core, "
                "beside the writer") if lowest else ""
    top = max(knees)
    if top >= READERS_CPU_BOUND:
        return (f"; at the knee the readers used {top:.0%} of every core: a machine with more cores would carry "
                "more reads")
    return (f"; at the knee the readers used at most {top:.0%} of the cores: the engine, not the readers' CPU, "
            "set it, so more cores alone would not carry many more reads")


def answer(frontier: list[dict], v1: V1) -> dict:
    """go, and the sentence: the best pair at or above go's write rate, or why none."""
    need = v1.go
    ok = [p for p in frontier if p["read_qps"] is not None and p["write_rows_per_s"] >= need.write_rows_per_s
          and p["read_qps"] >= need.read_qps]
    if ok:
        best = max(ok, key=lambda p: (p["write_rows_per_s"], p["read_qps"]))
        floor = "" if best["reached"] else " (the search's top rate: not its knee)"
        return {"go": True, "sentence": f"go: {best['write_rows_per_s']:,.0f} rows/s written with "
                                        f"{best['read_qps']:,.0f} checked DC reads/s{floor} meet every criterion "
                                        f"(V1 needs {need.write_rows_per_s:,.0f} and {need.read_qps:,.0f})"}
    passing = [p for p in frontier if p["read_qps"] is not None]
    if passing:
        best = max(passing, key=lambda p: (p["write_rows_per_s"], p["read_qps"]))
        return {"go": False, "sentence": f"no-go: at most {best['read_qps']:,.0f} reads/s beside "
                                         f"{best['write_rows_per_s']:,.0f} rows/s; V1 needs {need.read_qps:,.0f} "
                                         f"beside {need.write_rows_per_s:,.0f}"}
    first = frontier[0] if frontier else None
    why = f" (bounded by {', '.join(first['bounded_by'])})" if first and first["bounded_by"] else ""
    return {"go": False, "sentence": f"no-go: no read rate passed beside {v1.write_rows_per_s[0]:,.0f} rows/s{why}"}
