"""The `harness` command: one subcommand per make target (run, sweep, verdict, ceiling, the benches, states,
report, validate); errors are one line (traceback with -v); exit codes as in docs/design.md."""
from __future__ import annotations

import argparse
import os
import sys
import traceback
from pathlib import Path

from harness.compare import add_command as add_compare
from harness.sweep import CellOptions, add_cell_args
from harness.errors import EXIT_BAD_INPUT, EXIT_RUN_FAILED, ConfigError, HarnessError


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="harness", description="arkbench: one scenario, one engine, honest numbers")
    p.add_argument("-v", "--verbose", action="store_true", help="show tracebacks")
    sub = p.add_subparsers(dest="cmd", required=True)
    for add in (_add_run, _add_validate, _add_benches, _add_sweep, _add_matrix, _add_verdict, _add_ceiling, _add_knee, _add_v1,
                _add_states, _add_report, add_compare, _add_experiments, _add_k8s):
        add(sub)
    i = sub.add_parser("_runner", help=argparse.SUPPRESS)
    i.add_argument("plan", type=Path)
    i.set_defaults(func=_cmd_runner)
    return p


def _overrides(p: argparse.ArgumentParser) -> None:
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="overrides",
                   help="override a scenario field, e.g. engines.sqlite.cache_size=1GB (repeatable)")


def _place_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--place", default="local", help="where the cells run: local (one after another, here) or swarm "
                                                     "(a Docker Swarm's nodes, one cell per node; docs/placement.md)")
    p.add_argument("--mixed-nodes", action="store_true",
                   help="report cells from unlike nodes in one table anyway (the report says so)")


def _add_k8s(sub) -> None:
    k = sub.add_parser("k8s-manifests", help="a sweep's or a verdict's cells as Kubernetes Indexed Jobs "
                                             "(kubectl apply -f); the walk's other arguments as for sweep or verdict")
    k.add_argument("--walk", choices=["sweep", "verdict"], default="sweep")
    k.add_argument("--scenario", help="sweep: the scenario")
    k.add_argument("--engines", nargs="+", help="sweep: the engines")
    k.add_argument("--mems", help="memory limits (a verdict: default decision.yaml's for the profile)")
    k.add_argument("--scales", help="sweep: scales")
    k.add_argument("--scale", type=float, help="verdict: every criterion's scale")
    k.add_argument("--decision", type=Path, default=None, help="verdict: a decision tree file")
    add_cell_args(k)
    _overrides(k)
    k.add_argument("--out", type=Path, default=Path("k8s"), help="where the manifests go (default k8s/)")
    k.add_argument("--registry", default="", help="prefix of the images' names, e.g. registry.example:5000/")
    k.add_argument("--storage-class", help="a ReadWriteMany storage class (default: the cluster's)")
    k.add_argument("--runner-cpus", default="2", help="each runner's (and server's) CPU request = limit")
    k.add_argument("--node-cpus", default="1", help="each cell's node side (the feed): CPU request = limit")
    k.add_argument("--node-memory", default="4Gi", help="each cell's node side: memory request = limit")
    k.add_argument("--parallelism", type=int, help="at most this many cells of a Job at once")
    k.set_defaults(func=_cmd_k8s)


def _add_run(sub) -> None:
    r = sub.add_parser("run", help="run a scenario against an engine")
    r.add_argument("--engine", required=True)
    r.add_argument("--scenario", required=True, help="a name under scenarios/ or a path to a .yaml file")
    r.add_argument("--profile", help="smoke | quick | ratio | full (default: the scenario's default_profile)")
    r.add_argument("--mem", help="memory limit, e.g. 512m or 8g (enforced, or the run is refused)")
    r.add_argument("--scale", type=float, help="fraction of mendoza 1x (800K entities)")
    r.add_argument("--duration", type=float, help="measured phase, seconds")
    r.add_argument("--runtime", default="auto", choices=["auto", "local", "docker"],
                   help="auto: docker when a daemon answers and the engine's image is built, else local")
    r.add_argument("--results", default="results", type=Path)
    r.add_argument("--data", default=None, type=Path, help="where database files go (default ./data)")
    r.add_argument("--keep-data", action="store_true", help="keep the database files after the run")
    r.add_argument("--early-abort", action="store_true", help="stop once a threshold can no longer pass")
    _overrides(r)
    r.set_defaults(func=_cmd_run, writes=True)


def _add_validate(sub) -> None:
    v = sub.add_parser("validate", help="validate scenario files")
    v.add_argument("paths", nargs="+", type=Path)
    v.set_defaults(func=_cmd_validate)


def _add_benches(sub) -> None:
    data_help = "where both sides' databases go (default: /dev/shm if it has 8 GiB free, else ./data)"
    for name, scenario, what, func in (
            ("bench-overhead", "p99_5x", "harness rows/s vs a hand-written loop, per engine", _cmd_bench_overhead),
            ("bench-reads", "read_mix_a", "harness read QPS vs a raw driver loop on the same queries, per engine",
             _cmd_bench_reads)):
        b = sub.add_parser(name, help=what)
        b.add_argument("--engines", nargs="+", default=None)
        b.add_argument("--scenario", default=scenario)
        b.add_argument("--profile", default="quick")
        b.add_argument("--duration", type=float)
        b.add_argument("--results", default="results", type=Path)
        b.add_argument("--repeats", type=int, default=3, help="harness/loop pairs per engine (median ratio)")
        b.add_argument("--data", default=None, type=Path, help=data_help)
        if name == "bench-reads":
            b.add_argument("--threads", type=int, default=1, help="readers (the raw loop is one connection)")
        b.set_defaults(func=func, writes=True)
    bb = sub.add_parser("bench-build", help="bulk build vs row-by-row load rows/s per engine, and the clone")
    bb.add_argument("--engines", nargs="+", default=None)
    bb.add_argument("--scenario", default="p99_5x")
    bb.add_argument("--scale", type=float, default=0.05)
    bb.add_argument("--results", default="results", type=Path)
    bb.add_argument("--data", default="data", type=Path, help="where the builds go (removed afterwards)")
    bb.set_defaults(func=_cmd_bench_build, writes=True)


def _add_sweep(sub) -> None:
    s = sub.add_parser("sweep", help="every engine × memory × scale cell of one scenario; resumable")
    s.add_argument("--scenario", required=True)
    s.add_argument("--engines", nargs="+", required=True)
    s.add_argument("--mems", help='memory limits, e.g. "8g 16g 32g" (default: no limit)')
    s.add_argument("--scales", help='scales, e.g. "0.01 0.05" (default: the profile\'s)')
    add_cell_args(s)
    _overrides(s)
    s.add_argument("--fresh", action="store_true", help="set the earlier sweep of the same request aside; start anew")
    _place_arg(s)
    s.set_defaults(func=_cmd_sweep)


def _add_matrix(sub) -> None:
    m = sub.add_parser("matrix", help="the optimisation matrix (scenarios/matrix.yaml) at one MEM; resumable")
    m.add_argument("--engine", required=True)
    m.add_argument("--scenario", default="p99_5x")
    m.add_argument("--mem", help="the memory limit every cell runs at (options sized from it need it)")
    m.add_argument("--options", nargs="+", help="only these options (default: all of the engine's)")
    add_cell_args(m)
    _overrides(m)
    m.set_defaults(func=_cmd_matrix)


def _add_experiments(sub) -> None:
    e = sub.add_parser("experiments", help="the reference's seed experiments (scenarios/experiments/), ours "
                                           "beside its ratios; resumable")
    e.add_argument("--only", nargs="+", help="these experiments only (file names without .yaml)")
    add_cell_args(e)
    e.set_defaults(func=_cmd_experiments)


def _add_verdict(sub) -> None:
    d = sub.add_parser("verdict", help="walk scenarios/decision.yaml to a verdict and its report; resumable")
    d.add_argument("--mems", help="memory limits (default: decision.yaml's for the profile)")
    d.add_argument("--scale", type=float, help="override every criterion's scale")
    d.add_argument("--decision", type=Path, default=None, help="a decision tree file (default scenarios/decision.yaml)")
    d.add_argument("--all-cells", action="store_true",
                   help="run the cells a failure at a larger MEM implies, and the criteria after a failed one")
    d.add_argument("--no-early-abort", action="store_true",
                   help="run every cell to its end (a verdict stops a cell once it cannot pass, by default)")
    d.add_argument("--drop-states", action="store_true", help="remove an engine's starting states once its step is done")
    d.add_argument("--knees", action="store_true", help="then each failing engine's write knee at each MEM it "
                   "failed, and its memory knee")
    add_cell_args(d)
    _place_arg(d)
    d.set_defaults(func=_cmd_verdict)


def _step_walk(sub, name: str, help: str, func):
    """A walk over steps of one engine at one MEM (ceiling, v1): --engine, --mem, the cell options, SET."""
    c = sub.add_parser(name, help=help)
    c.add_argument("--engine", required=True)
    c.add_argument("--mem", help="memory limit of every step (default: none)")
    add_cell_args(c)
    _overrides(c)
    c.set_defaults(func=func)
    return c


def _add_ceiling(sub) -> None:
    c = _step_walk(sub, "ceiling", "the highest read rate beside the scenario's writes; resumable", _cmd_ceiling)
    c.add_argument("--scenario", default="combined")


def _add_knee(sub) -> None:
    c = _step_walk(sub, "knee", "how far from passing: the knee along rows per block, MEM or database size; "
                   "resumable", _cmd_knee)
    c.add_argument("--scenario", default="p99_5x")
    c.add_argument("--axis", required=True, choices=["rows", "mem", "scale"])
    c.add_argument("--scale", type=float, help="the database's scale (AXIS=scale: where the search starts)")


def _add_v1(sub) -> None:
    c = _step_walk(sub, "v1", "the reference's V1 go/no-go on the Data Center model (scenarios/v1.yaml); resumable",
                   _cmd_v1)
    c.add_argument("--file", help="a V1 file instead of scenarios/v1.yaml")


def _add_states(sub) -> None:
    st = sub.add_parser("state", help="build (or find) the starting state of a scenario for an engine")
    st.add_argument("--engine", required=True)
    st.add_argument("--scenario", required=True)
    st.add_argument("--profile")
    st.add_argument("--scale", type=float)
    _overrides(st)
    st.set_defaults(func=_cmd_state)
    sl = sub.add_parser("states", help="list the cached starting states (STATES=dir); --clean removes them")
    sl.add_argument("--clean", action="store_true", help="remove the states named, or all of them")
    sl.add_argument("ids", nargs="*")
    sl.add_argument("--json", action="store_true", help="one JSON document instead of a table")
    sl.set_defaults(func=_cmd_states)


def _add_report(sub) -> None:
    rp = sub.add_parser("report", help="report.md and report.html for a run, sweep or verdict directory")
    rp.add_argument("run", type=Path)
    rp.add_argument("--mixed-nodes", action="store_true",
                    help="put cells from unlike nodes in one table anyway (the report says so)")
    rp.set_defaults(func=_cmd_report)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if getattr(args, "writes", False):
            _writable(args.results, "--results")
            _writable(Path(args.data) if args.data else None, "--data")
        return args.func(args)
    except HarnessError as e:
        if args.verbose:
            traceback.print_exc()
        print(f"error: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_RUN_FAILED
    except OSError as e:       # a file or folder the run needed: one line, like every other error
        if args.verbose:
            traceback.print_exc()
        print(f"error: {e.filename or ''}: {e.strerror or e}" if e.filename else f"error: {e}", file=sys.stderr)
        return EXIT_RUN_FAILED


def _writable(path: Path | None, flag: str) -> None:
    """Refuse before anything runs when results or data cannot be written where asked. Leaves nothing
    behind: folders it had to create for the probe are removed again."""
    if path is None:
        return
    created = [p for p in [path, *path.parents] if not p.exists()]
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / f".arkbench-write-probe-{os.getpid()}"
        probe.touch()
        probe.unlink()
    except OSError as e:
        raise ConfigError(f"{flag} {path}: cannot write there ({e.strerror or e})") from None
    finally:
        for p in created:                 # deepest first
            try:
                p.rmdir()
            except OSError:
                pass


def _engines(args) -> list[str]:
    from harness import registry
    return args.engines or list(registry.names())


def _cmd_validate(args) -> int:
    from harness.scenario.files import validate_paths
    results = validate_paths(args.paths)
    if not results:
        print("error: no scenario files found", file=sys.stderr)
        return EXIT_BAD_INPUT
    for f, err in results:
        print(f"ok    {f}" if err is None else f"FAIL  {err}", file=sys.stdout if err is None else sys.stderr)
    return EXIT_BAD_INPUT if any(err for _, err in results) else 0


def _cmd_bench_overhead(args) -> int:
    from harness.bench.overhead import bench_overhead
    return bench_overhead(_engines(args), args.scenario, args.profile, args.duration, args.results, args.repeats,
                          data_dir=args.data)


def _cmd_bench_reads(args) -> int:
    from harness.bench.reads import bench_reads
    return bench_reads(_engines(args), args.scenario, args.profile, args.duration, args.threads, args.results,
                       args.repeats, data_dir=args.data)


def _cmd_bench_build(args) -> int:
    from harness.bench.build import bench_build
    return bench_build(_engines(args), args.scenario, args.scale, args.results, args.data)


def _cmd_sweep(args) -> int:
    from harness.sweep import parse_list, sweep
    return sweep(args.scenario, args.engines, parse_list(args.mems, "MEMS"), parse_list(args.scales, "SCALES", float),
                 args.repeats, CellOptions.from_args(args), args.results, fresh=args.fresh)


def _cmd_matrix(args) -> int:
    from harness.matrix import matrix
    return matrix(args.engine, args.scenario, args.mem, args.options, CellOptions.from_args(args), args.results)


def _cmd_experiments(args) -> int:
    from harness.experiments import experiments
    return experiments(args.only, CellOptions.from_args(args), args.results)


def _cmd_verdict(args) -> int:
    from dataclasses import replace
    from harness.scenario.decision import DECISION_FILE
    from harness.sweep import parse_list
    from harness.verdict import verdict
    mems = [m for m in parse_list(args.mems, "MEMS") if m]
    return verdict(args.profile, mems, replace(CellOptions.from_args(args), early_abort=not args.no_early_abort),
                   args.results, repeats=args.repeats, scale=args.scale, decision_path=args.decision or DECISION_FILE,
                   all_cells=args.all_cells, drop_states=args.drop_states, knees=args.knees)


def _cmd_ceiling(args) -> int:
    from harness.ceiling import ceiling
    if args.repeats != 1:
        raise ConfigError("REPEATS: a ceiling repeats its knee itself; give no REPEATS")
    return ceiling(args.scenario, args.engine, CellOptions.from_args(args), args.results, mem=args.mem)


def _cmd_knee(args) -> int:
    from harness.knee import knee
    if args.repeats != 1:
        raise ConfigError("REPEATS: a knee search confirms its knee itself; give no REPEATS")
    return knee(args.scenario, args.engine, args.axis, CellOptions.from_args(args), args.results, mem=args.mem,
                scale=args.scale)


def _cmd_v1(args) -> int:
    from harness.scenario.v1 import load_v1
    from harness.v1 import v1_walk
    if args.repeats != 1:
        raise ConfigError("REPEATS: each search repeats its knee itself; give no REPEATS")
    v1 = load_v1(Path(args.file)) if args.file else None
    return v1_walk(args.engine, CellOptions.from_args(args), args.results, mem=args.mem, v1=v1)


def _cmd_k8s(args) -> int:
    from dataclasses import replace
    from harness.place import k8s
    from harness.sweep import parse_list, sweep_cells
    opts = replace(CellOptions.from_args(args), place="k8s")
    if args.walk == "sweep":
        if not args.scenario or not args.engines:
            raise ConfigError("k8s-manifests: a sweep needs SCENARIO and ENGINE(S)")
        _, root, runs = sweep_cells(args.scenario, args.engines, parse_list(args.mems, "MEMS"),
                                    parse_list(args.scales, "SCALES", float), args.repeats, opts, args.results)
    else:
        from harness.scenario.decision import DECISION_FILE
        from harness.verdict import prepare
        from harness.verdict.walk import Walk
        mems = [m for m in parse_list(args.mems, "MEMS") if m]
        pre = prepare(args.profile, mems, replace(opts, early_abort=True), args.results, args.repeats, args.scale,
                      args.decision or DECISION_FILE, here=False)
        root = pre.root
        runs = Walk(pre.tree, pre.mems, pre.criteria, pre.opts, root, args.repeats, args.scale, all_cells=True).every_cell()
    cluster = k8s.Cluster(registry=args.registry, storage_class=args.storage_class, runner_cpus=args.runner_cpus,
                          node_cpus=args.node_cpus, node_memory=args.node_memory, parallelism=args.parallelism)
    path = k8s.write(runs, root, args.out, cluster)
    if crash := sum(1 for cr in runs if cr.plan.workload.crash):
        print(f"k8s-manifests: {crash} crash cells are not placed (they kill and restart their engine themselves): "
              "the same walk run here runs them", file=sys.stderr)
    print(f"k8s-manifests: {len(runs) - crash} cells of {root.name}: `kubectl apply -f {path}`; copy the results volume's "
          f"{root.name}/ into {args.results}/ and run the same walk again to collect them", file=sys.stderr)
    print(path)
    return 0


def _cmd_report(args) -> int:
    from harness.report import write_report
    for path in write_report(args.run, mixed_nodes=args.mixed_nodes):
        print(path)
    return 0


def _cmd_runner(args) -> int:
    from harness.runner.run import run
    from harness.scenario.plan import RunPlan
    return run(RunPlan.read(args.plan))


def _cmd_run(args) -> int:
    from harness.cell import execute
    from harness.report.summary import print_summary
    from harness.runtime.docker import choose_runtime
    from harness.scenario.plan import resolve_plan
    plan = resolve_plan(args.scenario, args.engine, profile=args.profile, scale=args.scale,
                        duration_s=args.duration, mem=args.mem, results_root=args.results, data_root=args.data,
                        keep_data=args.keep_data, overrides=args.overrides, early_abort=args.early_abort)
    runtime, why = choose_runtime(args.runtime, plan)
    print(why, file=sys.stderr)
    plan = plan.model_copy(update={"runtime": runtime})
    rc = execute(plan)
    result = Path(plan.run_dir) / "result.json"
    if result.exists():
        print_summary(result)
        print(result)            # the last line: where the result is
    return rc


def _cmd_state(args) -> int:
    from harness.scenario.plan import resolve_plan
    from harness.state.build import ensure
    plan = resolve_plan(args.scenario, args.engine, profile=args.profile, scale=args.scale, overrides=args.overrides)
    d, man, built_now = ensure(plan)
    print(f"{man.id}: {'built now' if built_now else 'cached'}; {man.rows} rows "
          f"({', '.join(f'{t} {n}' for t, n in man.row_counts.items())}), {man.data_bytes / 2**30:.2f} GiB on disk, "
          f"built in {man.build_s:.0f} s at {man.rows_per_s:.0f} rows/s ({man.method}; model {man.model_bytes_per_entity:g} "
          f"B/entity); {man.engine_version}", file=sys.stderr)
    print(d)               # the last line: the state's directory
    return 0


def _cmd_states(args) -> int:
    import json
    from harness.state import store
    root = store.root_dir()
    if args.clean:
        gone = store.remove(root, args.ids)
        for i in gone:
            print(f"removed {root / i}")
        if not gone:
            print(f"no states under {root}")
        return 0
    entries = store.listing(root)
    if args.json:
        print(json.dumps({"root": str(root), "states": entries}, indent=2))
        return 0
    if not entries:
        print(f"no states under {root}")
    for e in entries:
        print(f"{e['id']:<60} {e['bytes'] / 2**30:8.2f} GiB  {'complete' if e['complete'] else 'INCOMPLETE'}"
              f"  {e['rows'] or '-'} rows  built {e['built_utc'] or '-'}")
    print(f"{len(entries)} states, {sum(e['bytes'] for e in entries) / 2**30:.2f} GiB under {root}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
