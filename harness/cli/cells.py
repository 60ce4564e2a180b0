"""The sub-commands about one cell or one thing: run (and the runner a runtime starts), validate, the benches,
a starting state and the list of them, and a report."""
from __future__ import annotations

import sys
from pathlib import Path

from harness.cli.args import make_command, overrides
from harness.errors import EXIT_BAD_INPUT


def add_run(sub) -> None:
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
    r.add_argument("--drop-states", action="store_true", help="move the starting state into the run instead of "
                   "copying it (it is built again by the next run that needs it)")
    overrides(r)
    r.set_defaults(func=_cmd_run, writes=True)


def _cmd_run(args) -> int:
    from harness.cell import execute
    from harness.cell_states import check_walk_disk, drop_all
    from harness.report.summary import print_summary
    from harness.runtime.docker import choose_runtime
    from harness.scenario.plan import resolve_plan
    plan = resolve_plan(args.scenario, args.engine, profile=args.profile, scale=args.scale,
                        duration_s=args.duration, mem=args.mem, results_root=args.results, data_root=args.data,
                        keep_data=args.keep_data, overrides=args.overrides, early_abort=args.early_abort)
    runtime, why = choose_runtime(args.runtime, plan)
    print(why, file=sys.stderr)
    plan = plan.model_copy(update={"runtime": runtime, "take_state": args.drop_states,
                                   "take_base_state": args.drop_states, "command": make_command("run", args)})
    check_walk_disk([plan], args.drop_states, "run", takes=args.drop_states)
    rc = execute(plan)
    if args.drop_states:            # an aged state's base, where the aged state was on disk already
        drop_all([plan], "run")
    result = Path(plan.run_dir) / "result.json"
    if result.exists():
        print_summary(result)
        print(result)            # the last line: where the result is
    return rc


def cmd_runner(args) -> int:
    from harness.runner.run import run
    from harness.scenario.plan import RunPlan
    return run(RunPlan.read(args.plan))


def add_validate(sub) -> None:
    v = sub.add_parser("validate", help="validate scenario files")
    v.add_argument("paths", nargs="+", type=Path)
    v.set_defaults(func=_cmd_validate)
    s = sub.add_parser("schema", help="write the scenario files' JSON Schema (scenarios/schema.json) from the models")
    s.add_argument("--out", type=Path, help="where (default scenarios/schema.json)")
    s.add_argument("--check", action="store_true", help="write nothing; exit 2 if the file is not current")
    s.set_defaults(func=_cmd_schema)


def _cmd_validate(args) -> int:
    from harness.scenario.files import validate_paths
    results = validate_paths(args.paths)
    if not results:
        print("error: no scenario files found", file=sys.stderr)
        return EXIT_BAD_INPUT
    for f, err in results:
        print(f"ok    {f}" if err is None else f"FAIL  {err}", file=sys.stdout if err is None else sys.stderr)
    return EXIT_BAD_INPUT if any(err for _, err in results) else 0


def add_benches(sub) -> None:
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


def _engines(args) -> list[str]:
    from harness import registry
    return args.engines or list(registry.names())


def _cmd_schema(args) -> int:
    from harness.scenario.schema import SCHEMA_FILE, schema_text, write_schema
    path = args.out or SCHEMA_FILE
    if args.check:
        if not path.is_file() or path.read_text() != schema_text():
            print(f"error: {path} is not the models' schema: run make schema", file=sys.stderr)
            return EXIT_BAD_INPUT
        print(f"ok    {path}")
        return 0
    print(write_schema(path))
    return 0


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


def add_states(sub) -> None:
    st = sub.add_parser("state", help="build (or find) the starting state of a scenario for an engine")
    st.add_argument("--engine", required=True)
    st.add_argument("--scenario", required=True)
    st.add_argument("--profile")
    st.add_argument("--scale", type=float)
    overrides(st)
    st.set_defaults(func=_cmd_state)
    sl = sub.add_parser("states", help="list the cached starting states (STATES=dir); --clean removes them")
    sl.add_argument("--clean", action="store_true", help="remove the states named, or all of them")
    sl.add_argument("ids", nargs="*")
    sl.add_argument("--json", action="store_true", help="one JSON document instead of a table")
    sl.set_defaults(func=_cmd_states)


def _cmd_state(args) -> int:
    from harness.scenario.plan import resolve_plan
    from harness.state.build import ensure
    plan = resolve_plan(args.scenario, args.engine, profile=args.profile, scale=args.scale, overrides=args.overrides)
    if _one_fits(plan):
        plan = plan.model_copy(update={"take_base_state": True})
    d, man, built_now = ensure(plan)
    print(f"{man.id}: {'built now' if built_now else 'cached'}; {man.rows} rows "
          f"({', '.join(f'{t} {n}' for t, n in man.row_counts.items())}), {man.data_bytes / 2**30:.2f} GiB on disk, "
          f"built in {man.build_s:.0f} s at {man.rows_per_s:.0f} rows/s ({man.method}; model {man.model_bytes_per_entity:g} "
          f"B/entity); {man.engine_version}", file=sys.stderr)
    print(d)               # the last line: the state's directory
    return 0


def _one_fits(plan) -> bool:
    """An aged state whose base and copy the disk cannot hold side by side (5x here): it takes its base by rename,
    said."""
    from harness.state import aged, sizes, store
    if not aged.wanted(plan):
        return False
    root, base = store.root_dir(), store.inputs_for(plan)
    found = store.find(root, base)
    size = found[1].data_bytes if found else sizes.estimate_bytes(root, base)
    if (1 if found else 2) * size + (1 << 30) <= store.free_bytes(root):
        return False
    print(f"[state] the disk holds one state of about {size / 2**30:.1f} GiB, not two: the aged state takes its base "
          "by rename (the base is gone after)", file=sys.stderr)
    return True


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
        print(f"{e['id']:<60} {e['bytes'] / 2**30:8.2f} GiB{' packed' if e['packed'] else ''}  "
              f"{'complete' if e['complete'] else 'INCOMPLETE'}"
              f"  {e['rows'] or '-'} rows  built {e['built_utc'] or '-'}")
    print(f"{len(entries)} states, {sum(e['bytes'] for e in entries) / 2**30:.2f} GiB under {root}")
    return 0


def add_report(sub) -> None:
    rp = sub.add_parser("report", help="report.md and report.html for a run, sweep or verdict directory")
    rp.add_argument("run", type=Path)
    rp.add_argument("--mixed-nodes", action="store_true",
                    help="put cells from unlike nodes in one table anyway (the report says so)")
    rp.set_defaults(func=_cmd_report)
    pb = sub.add_parser("publish", help="a finished verdict's, read ceiling's, curve's or run's report.md, its figures' files, "
                                        "plots and a screenshot under docs/results/<name>/, with the machine, date "
                                        "and commit")
    pb.add_argument("run", type=Path)
    pb.add_argument("--to", type=Path, default=Path("docs/results"), help="the folder the published folder goes in")
    pb.add_argument("--name", help="its folder's name (default: <date>-<profile>)")
    pb.set_defaults(func=_cmd_publish)
    sc = sub.add_parser("success", help="the reference's five questions as one table, read from the runs published "
                                        "in DIR/<question>-<system>/")
    sc.add_argument("dir", type=Path)
    sc.set_defaults(func=_cmd_success)


def _cmd_success(args) -> int:
    from harness.report.success.assemble import write
    print(write(args.dir))
    return 0


def _cmd_report(args) -> int:
    from harness.report import write_report
    for path in write_report(args.run, mixed_nodes=args.mixed_nodes):
        print(path)
    return 0


def _cmd_publish(args) -> int:
    from harness.report.publish import publish
    from harness.report.publish_bias import BIAS_FILE, publish_bias
    from harness.report.publish_ceiling import publish_ceiling
    from harness.report.publish_run import publish_run
    from harness.report.success.publish_curve import publish_curve
    from harness.report.success.publish_reads import publish_reads
    from harness.report.success.publish_v1 import publish_v1
    from harness.report.success.publish_writes import publish_writes
    # what the folder holds says what it is: a walk's verdict, a read ceiling's search, reads alone, max writes, V1,
    # a curve, the store's bias, or one run
    kind = next((how for f, how in (("verdict.json", publish), ("ceiling.json", publish_ceiling),
                                    ("reads.json", publish_reads), ("writes.json", publish_writes),
                                    ("v1.json", publish_v1), ("curve.json", publish_curve), (BIAS_FILE, publish_bias),
                                    ("result.json", publish_run))
                 if (args.run / f).exists()), publish)
    print(kind(args.run, args.to, args.name))
    return 0
