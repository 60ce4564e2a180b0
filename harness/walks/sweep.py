"""`make sweep`: every cell (scenario × engine × memory × scale × repeat) one after another, each in its own
container or cgroup-limited process, each loading the same seeded starting database from nothing.

Resumable. A sweep lives in a directory named by what was asked, so asking again finds it. A cell's
identity is a hash of its resolved plan and the engine build that runs it (the image id, or the harness
commit and installed packages for RUNTIME=local). A cell complete under the same identity is skipped; a
partial one (interrupted, crashed, machine restarted) or one whose identity changed is moved aside, never
deleted, and run again. A failed or OOM cell is a result: it is recorded and the sweep goes on."""
from __future__ import annotations

import hashlib
import json
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from harness import cell_states
from harness.errors import EXIT_RUN_FAILED, ConfigError
from harness.environment import utc_now
from harness.records import Cell, CellRun, SweepInterrupted, begin_cell, completed, end_cell, read_cell
from harness.results import DONE_STATUSES, CellRecord, SweepFile, load_result, write_json
from harness.scenario.plan import RunPlan, resolve_plan


@dataclass(frozen=True)
class CellOptions:
    """What every cell of a sweep shares, beside its own engine, memory and scale."""
    profile: str | None = None
    duration_s: float | None = None
    overrides: tuple[str, ...] = ()
    thresholds: tuple[str, ...] | None = None
    early_abort: bool = False
    runtime: str = "auto"
    keep_data: bool = False
    data_root: str = "data"
    place: str = "local"              # harness/place/: this machine, one cell after another, or a swarm's nodes
    mixed_nodes: bool = False         # report cells from unlike nodes in one table (report/nodes.py)
    take_states: bool = False         # every cell moves its state in (DROP_STATES=1, no room for a clone)
    continue_steps: bool = False      # (CONTINUE=1) a knee's steps on the database the step before left

    def asked(self) -> dict:
        """What names the sweep (and its directory): not where files go, nor what places the cells (a sweep
        begun on one placement resumes on another: a cell's identity is its plan and images)."""
        return {k: v for k, v in self.__dict__.items()
                if k not in ("keep_data", "data_root", "place", "mixed_nodes", "take_states", "continue_steps")}

    @classmethod
    def from_args(cls, args) -> "CellOptions":
        """From the command line of a walk over cells (add_cell_args)."""
        return cls(profile=args.profile, duration_s=args.duration, runtime=args.runtime,
                   early_abort=args.early_abort, overrides=tuple(getattr(args, "overrides", ())),
                   data_root=args.data, place=getattr(args, "place", "local"),
                   mixed_nodes=getattr(args, "mixed_nodes", False), continue_steps=getattr(args, "continue_steps", False))


def add_cell_args(p) -> None:
    """The command-line arguments every walk over cells takes (sweep, matrix, verdict, ceiling, experiments)."""
    p.add_argument("--profile")
    p.add_argument("--duration", type=float, help="measured phase, seconds")
    p.add_argument("--repeats", type=int, default=1, help="runs per cell; the report flags a spread >= 10%%")
    p.add_argument("--runtime", default="auto", choices=["auto", "local", "docker"])
    p.add_argument("--early-abort", action="store_true", help="stop a cell once a threshold can no longer pass")
    p.add_argument("--results", default="results", type=Path)
    p.add_argument("--data", default="data", help="where the cells' database files go")
    p.set_defaults(writes=True)


# ---- identity --------------------------------------------------------------------------------------

# what an attempt does with its state, not what it measures: a step on a continued state says so in its result
_PER_ATTEMPT = ("run_id", "run_dir", "data_dir", "keep_data", "take_state", "take_base_state", "continue_from",
                "keep_continued")


def engine_build(plan: RunPlan) -> str:
    """What, beside the plan, decides the numbers: the images, or the code and packages run locally."""
    if plan.runtime == "docker":
        from harness.runtime.docker import image_id, images_needed
        return "image:" + ",".join(str(image_id(t)) for t in images_needed(plan))
    from importlib import metadata

    from harness.provenance import code_digest, harness_version
    dists = sorted(f"{d.metadata['Name']}=={d.version}" for d in metadata.distributions())
    # the measuring code's digest, not the commit: a change to a walk, the report or the docs keeps cells
    return f"local:{harness_version()}:{code_digest(plan.engine)}:{_sha(dists)[:16]}"


def cell_identity(plan: RunPlan, build: str) -> str:
    dump = {k: v for k, v in plan.model_dump(mode="json", by_alias=True).items() if k not in _PER_ATTEMPT}
    return _sha([dump, build])[:20]


def _sha(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


def sweep_dir_for(results_root: Path, kind: str, label: str, spec: dict) -> Path:
    """The same request always maps to the same directory; that is what makes re-running resume."""
    return (results_root / f"{kind}-{label}-{_sha(spec)[:8]}").resolve()


# ---- cells -----------------------------------------------------------------------------------------

def cell_name(cell: Cell, plan: RunPlan, repeats: int) -> str:
    name = f"{cell.engine}{'-' + cell.tag if cell.tag else ''}-{cell.mem or 'nolimit'}-s{plan.scale:g}"
    return f"{name}-r{cell.repeat}" if repeats > 1 else name


def plan_cells(cells: list[Cell], opts: CellOptions, root: Path, repeats: int) -> list[CellRun]:
    """Resolve every cell before any runs, so a bad MEM or setting stops the sweep before it starts."""
    from harness.runtime.docker import choose_runtime
    runs, builds, names = [], {}, set()
    data_root = Path(opts.data_root).resolve() / root.name
    for c in cells:
        plan = resolve_plan(c.scenario, c.engine, profile=opts.profile, scale=c.scale, duration_s=opts.duration_s,
                            mem=c.mem, keep_data=opts.keep_data, overrides=[*opts.overrides, *c.overrides],
                            thresholds=list(opts.thresholds) if opts.thresholds is not None else None,
                            early_abort=opts.early_abort)
        if opts.place == "local":
            runtime, _ = choose_runtime(opts.runtime, plan)
        else:
            from harness.place import placed_runtime
            runtime = placed_runtime(opts.place, opts.runtime, plan)
        name = cell_name(c, plan, repeats)
        if (c.scenario, name) in names:
            raise ConfigError(f"two cells would share the name {c.scenario}/{name}; check MEMS and SCALES for repeats")
        names.add((c.scenario, name))
        plan = plan.model_copy(update={"run_dir": str(root / c.scenario / name), "runtime": runtime,
                                       "data_dir": str(data_root / c.scenario / name),
                                       "take_state": opts.take_states, "take_base_state": opts.take_states})
        key = (c.engine, runtime, plan.capabilities)
        builds.setdefault(key, engine_build(plan))
        runs.append(CellRun(c, plan, cell_identity(plan, builds[key]), root / c.scenario / name))
    return runs


def run_cell(cr: CellRun, label: str) -> CellRecord:
    from harness.cell import execute
    rec = begin_cell(cr, label)
    if rec.state == "complete":
        return rec
    try:
        rc = execute(cr.plan)
    except KeyboardInterrupt:
        raise SweepInterrupted(cr.dir.name) from None
    result = load_result(cr.dir / "result.json")
    if result is not None and result.error == "interrupted":
        raise SweepInterrupted(cr.dir.name)
    return end_cell(cr, rec, rc, label)


def starting_state(records: list[CellRecord]) -> dict:
    """Did every cell of a scenario and scale start from the same database? The model's digest after the
    load must be one, and each engine's row counts after its load must be the model's (a load that lost
    rows, say to an OOM-killed bulk insert, shows here)."""
    groups: dict[str, dict] = {}
    for rec in records:
        if rec.load_digest is None:
            continue
        g = groups.setdefault(f"{rec.scenario}@{rec.scale:g}", {"cells": 0, "digests": set(), "differ": []})
        g["cells"] += 1
        g["digests"].add(json.dumps(rec.load_digest, sort_keys=True))
        model_counts = {t: int(v.split(":")[0]) for t, v in rec.load_digest.items()}
        if rec.load_row_counts not in (None, model_counts):
            g["differ"].append(rec.dir)
    return {k: {"cells": g["cells"], "same": len(g["digests"]) == 1 and not g["differ"],
                **({"row_counts_differ": g["differ"]} if g["differ"] else {})} for k, g in groups.items()}


def write_sweep_json(path: Path, meta: dict, runs: list[CellRun]) -> SweepFile:
    cells = [cr.record for cr in runs if cr.record]
    statuses = [c.status for c in cells if c.state == "complete"]
    out = SweepFile(**meta, updated_utc=utc_now(), cells_total=len(runs), cells_complete=len(statuses),
                    status_counts={s: statuses.count(s) for s in DONE_STATUSES if s in statuses},
                    starting_state=starting_state(cells), cells=cells)
    write_json(path, out)
    return out


def run_cells(runs: list[CellRun], sweep_json: Path, meta: dict, stop=None, place: str = "local") -> SweepFile:
    """Run (or skip) each cell in order, rewriting sweep.json after each one; return its last content.
    stop(record) -> True ends the walk there: the cells after it are left unrun (no record). Placed on a
    swarm, the cells run side by side, one per node, and all of them run (stop is not consulted)."""
    from harness.place import why_here
    everything, out = runs, None
    here = [cr for cr in runs if why_here(place, cr.plan)]
    if place == "k8s" and len(here) < len(runs):
        raise ConfigError("PLACE=k8s: arkbench does not drive a cluster; `make k8s-manifests` writes the walk's "
                          "Jobs, `kubectl apply -f` runs them, and this command, run again with PLACE=local on the "
                          "results copied back, finds their cells complete (docs/placement.md)")
    if place == "swarm" and len(here) < len(runs):
        from harness.place.swarm import run_swarm
        out = run_swarm([cr for cr in runs if not why_here(place, cr.plan)], lambda: write_sweep_json(sweep_json, meta, everything))
        runs = here
    if place != "local" and here:
        print(f"[sweep] {len(here)} cells run here, not placed: {why_here(place, here[0].plan)}", file=sys.stderr)
    for i, cr in enumerate(runs, 1):
        try:
            cr.record = run_cell(cr, f"{i}/{len(runs)}")
        except SweepInterrupted:
            rec = read_cell(cr.dir / "cell.json")
            cr.record = rec.model_copy(update={"state": "partial"}) if rec else None
            write_sweep_json(sweep_json, meta, everything)
            raise
        out = write_sweep_json(sweep_json, meta, everything)
        if stop is not None and stop(cr.record):
            break
    return out


def sweep_cells(scenario: str, engines: list[str], mems: list[str | None], scales: list[float | None], repeats: int,
                opts: CellOptions, results_root: Path) -> tuple[dict, Path, list[CellRun]]:
    """(what names the sweep, its directory, its cells planned): before anything runs."""
    if repeats < 1:
        raise ConfigError(f"REPEATS: must be >= 1, got {repeats}")
    spec = {"scenario": scenario, "engines": engines, "mems": mems, "scales": scales, "repeats": repeats,
            "opts": opts.asked()}
    root = sweep_dir_for(results_root, "sweep", Path(scenario).stem, spec)
    cells = [Cell(scenario, e, m, s, r) for e in engines for m in mems for s in scales for r in range(1, repeats + 1)]
    try:
        return spec, root, plan_cells(cells, opts, root, repeats)
    except ConfigError as e:
        raise ConfigError(f"sweep: {e}") from None


def sweep(scenario: str, engines: list[str], mems: list[str | None], scales: list[float | None], repeats: int,
          opts: CellOptions, results_root: Path, fresh: bool = False, drop_states: bool = False) -> int:
    """drop_states: each state goes after its last cell, which moves it in (cell_states.py)."""
    spec, root, runs = sweep_cells(scenario, engines, mems, scales, repeats, opts, results_root)
    if fresh and root.exists():
        shutil.move(str(root), f"{root}.{time.strftime('%Y%m%d-%H%M%S')}")
    root.mkdir(parents=True, exist_ok=True)
    todo = [cr for cr in runs if completed(cr) is None]
    print(f"[sweep] {root}: {len(runs)} cells" + (f", {len(runs) - len(todo)} already complete (resuming)"
                                                  if len(todo) < len(runs) else ""), file=sys.stderr, flush=True)
    if opts.place == "local":       # where a clone does not fit, each cell moves its state in when its turn comes
        cell_states.check_walk_disk([cr.plan for cr in todo], drop_states, "sweep")
    meta = {"kind": "sweep", "spec": spec, "dir": str(root)}
    try:
        stop = cell_states.dropper(runs, keep_first=False, who="sweep") if drop_states else None
        out = run_cells(runs, root / "sweep.json", meta, stop=stop, place=opts.place)
    except SweepInterrupted as e:
        print(f"[sweep] interrupted in cell {e}; run the same command again to resume", file=sys.stderr)
        return EXIT_RUN_FAILED
    if drop_states:
        cell_states.drop_all([cr.plan for cr in runs], "sweep")
    _print_table(out.cells)
    if repeats > 1:
        write_json(root / "spread.json", _print_spread(root, out.cells))
    for k, v in out.starting_state.items():
        if not v["same"]:
            print(f"warning: cells of {k} did not start from the same database (see sweep.json)", file=sys.stderr)
    from harness.report import write_report
    _, html = write_report(root, mixed_nodes=opts.mixed_nodes)
    print(root / "sweep.json")
    print(html)
    return 0 if all(c.status in ("passed", "failed", "oom") for c in out.cells) else EXIT_RUN_FAILED


def _print_table(cells: list[CellRecord]) -> None:
    fmt = lambda v: "-" if v is None else f"{v:g}"  # noqa: E731
    for c in cells:
        print(f"{c.scenario:14s} {c.dir:28s} {c.status or '-':7s} p99 {fmt(c.p99_ms):>9s} ms"
              f"  rows/s {fmt(c.rows_per_s):>9s}", file=sys.stderr)


def _print_spread(root: Path, cells: list[CellRecord]) -> dict:
    """Over each cell's repeats: min, median and max of its service p50 and commit p99, and their spread
    ((max - min) / median), the run-to-run noise a threshold's confirmation band is chosen from."""
    from harness.stats import summarize
    groups: dict[str, list] = {}
    for c in cells:
        r = load_result(root / c.scenario / c.dir / "result.json") if c.status in ("passed", "failed") else None
        key = f"{c.scenario} {c.engine}{' ' + c.variant if c.variant else ''} {c.mem or 'no MEM'} scale {c.scale:g}"
        groups.setdefault(key, []).append(r.metrics if r is not None else None)
    out = {}
    print("[sweep] over the repeats, min / median / max (spread = (max - min) / median):", file=sys.stderr)
    for key, ms in groups.items():
        done = [m for m in ms if m is not None]
        out[key] = {"runs": len(ms), "measured": len(done),
                    "service_p50_ms": summarize([m.service_time_ms.p50 for m in done]),
                    "commit_p99_ms": summarize([m.commit_latency_ms.p99 for m in done])}
        line = "; ".join(f"{label} {_min_median_max(out[key][name])}" for label, name in
                         (("service p50", "service_p50_ms"), ("p99", "commit_p99_ms")))
        print(f"  {key}: {len(done)} of {len(ms)} runs measured; {line}", file=sys.stderr)
    return out


def _min_median_max(s: dict) -> str:
    if not s["n"]:
        return "-"
    spread = f" ms ({s['spread']:.0%})" if s["spread"] is not None else " ms"
    return f"{s['min']:,.0f} / {s['median']:,.0f} / {s['max']:,.0f}{spread}"


def parse_list(text: str | None, what: str, cast=str) -> list:
    if text is None or not text.strip():
        return [None]
    try:
        return [cast(x) for x in text.replace(",", " ").split()]
    except ValueError:
        raise ConfigError(f"{what}: cannot read {text!r}; give a space-separated list") from None

