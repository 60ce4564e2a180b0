"""The sub-commands that walk many cells, each resumable: sweep, matrix, experiments, verdict, and the searches
(ceiling, knee, v1); and the Kubernetes manifests of a sweep's or a verdict's cells."""
from __future__ import annotations

import sys
from pathlib import Path

from harness.cli.args import make_command, overrides, place_arg
from harness.errors import ConfigError
from harness.units import parse_size_bytes
from harness.walks.sweep import CellOptions, add_cell_args


def add_sweep(sub) -> None:
    s = sub.add_parser("sweep", help="every engine × memory × scale cell of one scenario; resumable")
    s.add_argument("--scenario", required=True)
    s.add_argument("--engines", nargs="+", required=True)
    s.add_argument("--mems", help='memory limits, e.g. "8g 16g 32g" (default: no limit)')
    s.add_argument("--scales", help='scales, e.g. "0.01 0.05" (default: the profile\'s)')
    add_cell_args(s)
    overrides(s)
    s.add_argument("--fresh", action="store_true", help="set the earlier sweep of the same request aside; start anew")
    s.add_argument("--drop-states", action="store_true", help="remove each starting state after its last cell, "
                   "which moves it in; where no clone fits beside a state, every cell moves it in (the next builds "
                   "it again)")
    place_arg(s)
    s.set_defaults(func=_cmd_sweep)


def _cmd_sweep(args) -> int:
    from harness.walks.sweep import parse_list, sweep
    return sweep(args.scenario, args.engines, parse_list(args.mems, "MEMS"), parse_list(args.scales, "SCALES", float),
                 args.repeats, CellOptions.from_args(args), args.results, fresh=args.fresh,
                 drop_states=args.drop_states)


def add_matrix(sub) -> None:
    m = sub.add_parser("matrix", help="the optimisation matrix (scenarios/matrix.yaml) at one MEM; resumable")
    m.add_argument("--engine", help="one engine's matrix")
    m.add_argument("--engines", nargs="+", help="several engines' matrices, then one table side by side")
    m.add_argument("--scenario", default="p99_5x")
    m.add_argument("--mem", help="the memory limit every cell runs at (options sized from it need it)")
    m.add_argument("--options", nargs="+", help="only these options (default: all of the engine's)")
    m.add_argument("--drop-states", action="store_true",
                   help="remove an option's own starting states after its last cell (which moves it in), and every "
                        "state the matrix used once it is done")
    add_cell_args(m)
    overrides(m)
    m.set_defaults(func=_cmd_matrix)


def _cmd_matrix(args) -> int:
    if bool(args.engine) == bool(args.engines):
        raise ConfigError("matrix: give ENGINE (one matrix) or ENGINES (several, side by side)")
    if args.engines:
        from harness.walks.matrices import matrices
        if args.options:
            raise ConfigError("OPTIONS names one engine's options: give ENGINE, not ENGINES")
        return matrices(args.engines, args.scenario, args.mem, CellOptions.from_args(args), args.results,
                        args.drop_states)
    from harness.walks.matrix import matrix
    return matrix(args.engine, args.scenario, args.mem, args.options, CellOptions.from_args(args), args.results,
                  args.drop_states)


def add_experiments(sub) -> None:
    e = sub.add_parser("experiments", help="the reference's seed experiments (scenarios/experiments/), ours "
                                           "beside its ratios; resumable")
    e.add_argument("--only", nargs="+", help="these experiments only (file names without .yaml)")
    add_cell_args(e)
    e.set_defaults(func=_cmd_experiments)


def _cmd_experiments(args) -> int:
    from harness.walks.experiments import experiments
    return experiments(args.only, CellOptions.from_args(args), args.results)


def add_verdict(sub) -> None:
    d = sub.add_parser("verdict", help="walk scenarios/decision.yaml to a verdict and its report; resumable")
    d.add_argument("--mems", help="memory limits (default: decision.yaml's for the profile)")
    d.add_argument("--scale", type=float, help="override every criterion's scale")
    d.add_argument("--decision", type=Path, default=None, help="a decision tree file (default scenarios/decision.yaml)")
    d.add_argument("--all-cells", action="store_true",
                   help="run the cells a failure at a larger MEM implies, and the criteria after a failed one")
    d.add_argument("--no-early-abort", action="store_true",
                   help="run every cell to its end (a verdict stops a cell once it cannot pass, by default)")
    d.add_argument("--drop-states", action="store_true", help="remove an engine's starting states once its step is "
                   "done; where no clone fits beside a state, every cell moves it in (the next builds it again)")
    d.add_argument("--durability", choices=["commit", "checkpoint"],
                   help="every cell at this durability (default: decision.yaml's durability)")
    d.add_argument("--knees", action="store_true", help="then each failing engine's write knee at each MEM it "
                   "failed, and its memory knee")
    add_cell_args(d)
    place_arg(d)
    d.set_defaults(func=_cmd_verdict)


def _cmd_verdict(args) -> int:
    from dataclasses import replace
    from harness.scenario.decision import DECISION_FILE
    from harness.walks.sweep import parse_list
    from harness.walks.verdict import verdict
    mems = [m for m in parse_list(args.mems, "MEMS") if m]
    return verdict(args.profile, mems, replace(CellOptions.from_args(args), early_abort=not args.no_early_abort),
                   args.results, repeats=args.repeats, scale=args.scale, decision_path=args.decision or DECISION_FILE,
                   all_cells=args.all_cells, drop_states=args.drop_states, knees=args.knees,
                   durability=args.durability)


def add_reproduce(sub) -> None:
    r = sub.add_parser("reproduce", help="a published verdict's answers measured again in this sitting, judged level "
                                         "by level; kept under the published folder; resumable")
    r.add_argument("published", type=Path, help="a folder `make publish` wrote: docs/results/<name>")
    r.add_argument("--runtime", default="auto", choices=["auto", "local", "docker"])
    r.add_argument("--results", default="results", type=Path)
    r.add_argument("--data", default="data", help="where the cells' database files go")
    r.add_argument("--rewrite", action="store_true", help="measure nothing: write the folder's record (verdict.json's "
                   "answers, README, report.md's answer table) again from the sittings it keeps")
    r.set_defaults(func=_cmd_reproduce, writes=True)


def _cmd_reproduce(args) -> int:
    from harness.walks.reproduce import reproduce, rewrite
    if args.rewrite:
        rewrite(args.published)
        print(args.published / "README.md")
        return 0
    return reproduce(args.published, CellOptions(runtime=args.runtime, data_root=args.data, early_abort=True),
                     args.results)


def _step_walk(sub, name: str, help: str, func):
    """A walk over steps of one engine at one MEM (ceiling, v1): --engine, --mem, the cell options, SET."""
    c = sub.add_parser(name, help=help)
    c.add_argument("--engine", required=True)
    c.add_argument("--mem", help="memory limit of every step (default: none)")
    add_cell_args(c)
    overrides(c)
    c.set_defaults(func=func)
    return c


def _no_repeats(args, why: str) -> None:
    """A walk over steps decides its own repeats: REPEATS is refused, saying why."""
    if args.repeats != 1:
        raise ConfigError(f"REPEATS: {why}; give no REPEATS")


def add_ceiling(sub) -> None:
    c = _step_walk(sub, "ceiling", "the highest read rate beside the scenario's writes; resumable", _cmd_ceiling)
    c.add_argument("--scenario", default="combined")


def _cmd_ceiling(args) -> int:
    from harness.walks.ceiling import ceiling
    _no_repeats(args, "a ceiling repeats its knee itself")
    return ceiling(args.scenario, args.engine, CellOptions.from_args(args), args.results, mem=args.mem,
                   command=make_command("ceiling", args))


def add_reads(sub) -> None:
    c = _step_walk(sub, "reads", "the reference's read benchmark, reads alone: per mix and connections the highest "
                   "offered rate with p99 < 100 ms and 95% of it met; resumable", _cmd_reads)
    c.add_argument("--mixes", help='the mixes, e.g. "a b c dc" (the default: the reference\'s three and the DC\'s)')
    c.add_argument("--connections", help='reader connections, e.g. "1 10" (the default: the reference\'s matrix)')


def _cmd_reads(args) -> int:
    from harness.walks.reads import CONNECTIONS, MIXES, reads
    _no_repeats(args, "each read ceiling repeats its knee itself")
    mixes = tuple(args.mixes.split()) if args.mixes else MIXES
    try:
        connections = tuple(int(n) for n in args.connections.split()) if args.connections else CONNECTIONS
    except ValueError:
        raise ConfigError(f"CONNECTIONS={args.connections!r}: whole numbers of reader connections, separated by "
                          "spaces") from None
    if not connections or min(connections) < 1:
        raise ConfigError(f"CONNECTIONS={args.connections!r}: each at least 1")
    return reads(args.engine, CellOptions.from_args(args), args.results, mixes=mixes, connections=connections,
                 mem=args.mem, command=make_command("reads", args))


def add_writes(sub) -> None:
    c = _step_walk(sub, "writes", "the reference's max writes: at each scale and MEM, the most rows per block every "
                   "line of the scenario holds at; resumable", _cmd_writes)
    c.add_argument("--scenario", default="p99_5x")
    c.add_argument("--points", required=True, help='each <scale>:<MEM>, e.g. "1:1284m 2:2568m 5:6420m 5:8g"')
    _start_rows(c)
    c.add_argument("--drop-states", action="store_true", help="every step moves its state in instead of copying "
                   "it (built again for the next step): a 5x state and its copy do not fit this disk")
    _continue_steps(c)


def _cmd_writes(args) -> int:
    from harness.walks.writes import parse_points, writes
    _no_repeats(args, "each knee confirms itself")
    if args.mem:
        raise ConfigError("MEM: `make writes` gives each point its own MEM: POINTS=\"<scale>:<MEM> ...\"")
    return writes(args.scenario, args.engine, CellOptions.from_args(args), args.results, parse_points(args.points),
                  drop_states=args.drop_states, command=make_command("writes", args), start_rows=args.start_rows)


def add_capacity(sub) -> None:
    c = _step_walk(sub, "capacity", "the largest multiple of the offered load at which every line of the scenario "
                   "holds, measured on the configuration itself; resumable", _cmd_capacity)
    c.add_argument("--scenario", default="p99_5x")


def _cmd_capacity(args) -> int:
    from harness.walks.capacity_run import run_capacity
    _no_repeats(args, "a capacity search brackets its own steps")
    return run_capacity(args.scenario, args.engine, CellOptions.from_args(args), args.results, mem=args.mem,
                        command=make_command("capacity", args))


def add_curve(sub) -> None:
    c = _step_walk(sub, "curve", "the degradation curve: the scenario's figures against the database's size at one "
                   "data-to-memory ratio, 10x projected; resumable", _cmd_curve)
    c.add_argument("--scenario", default="p99_5x")
    c.add_argument("--scales", help='the scales (fractions of 1x), e.g. "0.125 0.25 0.5 1 2 3 5" (the default)')
    c.add_argument("--ratio", type=float, help="data bytes per byte of MEM at every scale (default: decision.yaml's "
                   "tightest ratio, the reference's 8 GB at 5x)")
    c.add_argument("--mem-1x", help="MEM = scale x this at every scale instead (the verdict's smallest level at 1x): "
                   "a design whose layout is smaller measured at the reference data's ratio")


def _cmd_curve(args) -> int:
    from harness.walks.curve import curve
    if args.repeats != 1 or args.mem:
        raise ConfigError("REPEATS, MEM: a curve runs each scale once, at MEM = its state's size / RATIO; give "
                          "neither")
    try:
        scales = [float(x) for x in args.scales.split()] if args.scales else None
    except ValueError:
        raise ConfigError(f"SCALES={args.scales!r}: numbers (fractions of 1x), separated by spaces") from None
    if scales is not None and (not scales or min(scales) <= 0):
        raise ConfigError(f"SCALES={args.scales!r}: each scale must be above 0")
    if args.ratio is not None and args.ratio <= 0:
        raise ConfigError(f"RATIO={args.ratio:g}: data bytes per byte of memory, above 0")
    if args.mem_1x is not None:
        if args.ratio is not None:
            raise ConfigError("RATIO, MEM_1X: each sets every point's MEM; give one")
        try:
            parse_size_bytes(args.mem_1x)
        except ValueError as e:
            raise ConfigError(f"MEM_1X: {e}") from None
    return curve(args.scenario, args.engine, CellOptions.from_args(args), args.results, scales=scales,
                 ratio=args.ratio, command=make_command("curve", args), mem_1x=args.mem_1x)


def _start_rows(c) -> None:
    c.add_argument("--start-rows", type=float, help="a rows knee's first step, rows per block (default: the "
                   "scenario's); its range and its lines stay the scenario's")


def _continue_steps(c) -> None:
    c.add_argument("--continue-steps", action="store_true", help="with --drop-states: each step starts from the "
                   "database the step before left instead of building its state again; a confirmation from a fresh "
                   "build (harness/walks/knee_continue.py)")


def add_knee(sub) -> None:
    c = _step_walk(sub, "knee", "how far from passing: the knee along rows per block, MEM or database size; "
                   "resumable", _cmd_knee)
    c.add_argument("--scenario", default="p99_5x")
    c.add_argument("--axis", required=True, choices=["rows", "mem", "scale"])
    c.add_argument("--scale", type=float, help="the database's scale (AXIS=scale: where the search starts)")
    _start_rows(c)
    c.add_argument("--drop-states", action="store_true", help="every step moves its state in instead of copying "
                   "it (one state on disk at a time: a scale knee reaches twice as far)")
    _continue_steps(c)


def _cmd_knee(args) -> int:
    from harness.walks.knee import knee
    _no_repeats(args, "a knee search confirms its knee itself")
    return knee(args.scenario, args.engine, args.axis, CellOptions.from_args(args), args.results, mem=args.mem,
                scale=args.scale, drop_states=args.drop_states, command=make_command("knee", args),
                start_rows=args.start_rows)


def add_v1(sub) -> None:
    c = _step_walk(sub, "v1", "the reference's V1 go/no-go on the Data Center model (scenarios/v1.yaml); resumable",
                   _cmd_v1)
    c.add_argument("--file", help="a V1 file instead of scenarios/v1.yaml")


def _cmd_v1(args) -> int:
    from harness.scenario.v1 import load_v1
    from harness.walks.v1 import v1_walk
    _no_repeats(args, "each search repeats its knee itself")
    v1 = load_v1(Path(args.file)) if args.file else None
    return v1_walk(args.engine, CellOptions.from_args(args), args.results, mem=args.mem, v1=v1,
                   command=make_command("v1", args))


def add_k8s(sub) -> None:
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
    overrides(k)
    k.add_argument("--out", type=Path, default=Path("k8s"), help="where the manifests go (default k8s/)")
    k.add_argument("--registry", default="", help="prefix of the images' names, e.g. registry.example:5000/")
    k.add_argument("--storage-class", help="a ReadWriteMany storage class (default: the cluster's)")
    k.add_argument("--runner-cpus", default="2", help="each runner's (and server's) CPU request = limit")
    k.add_argument("--node-cpus", default="1", help="each cell's node side (the feed): CPU request = limit")
    k.add_argument("--node-memory", default="4Gi", help="each cell's node side: memory request = limit")
    k.add_argument("--parallelism", type=int, help="at most this many cells of a Job at once")
    k.set_defaults(func=_cmd_k8s)


def _cmd_k8s(args) -> int:
    from dataclasses import replace
    from harness.place import k8s
    from harness.walks.sweep import parse_list, sweep_cells
    opts = replace(CellOptions.from_args(args), place="k8s")
    if args.walk == "sweep":
        if not args.scenario or not args.engines:
            raise ConfigError("k8s-manifests: a sweep needs SCENARIO and ENGINE(S)")
        _, root, runs = sweep_cells(args.scenario, args.engines, parse_list(args.mems, "MEMS"),
                                    parse_list(args.scales, "SCALES", float), args.repeats, opts, args.results)
    else:
        from harness.scenario.decision import DECISION_FILE
        from harness.walks.verdict import prepare
        from harness.walks.verdict.walk import Walk
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
