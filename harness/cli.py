"""harness run | validate — errors are one line (traceback with -v); exit codes as in docs/design.md."""
from __future__ import annotations

import argparse
import os
import sys
import traceback
from pathlib import Path

from harness.errors import EXIT_BAD_INPUT, EXIT_RUN_FAILED, ConfigError, HarnessError


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="harness", description="arkbench: one scenario, one engine, honest numbers")
    p.add_argument("-v", "--verbose", action="store_true", help="show tracebacks")
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run a scenario against an engine")
    r.add_argument("--engine", required=True)
    r.add_argument("--scenario", required=True, help="a name under scenarios/ or a path to a .yaml file")
    r.add_argument("--profile", help="smoke | quick | full (default: the scenario's default_profile)")
    r.add_argument("--mem", help="memory limit, e.g. 512m or 8g (enforced, or the run is refused)")
    r.add_argument("--scale", type=float, help="fraction of mendoza 1x (800K entities)")
    r.add_argument("--duration", type=float, help="measured phase, seconds")
    r.add_argument("--runtime", default="auto", choices=["auto", "local", "docker"],
                   help="auto: docker when a daemon answers and the engine's image is built, else local")
    r.add_argument("--results", default="results", type=Path)
    r.add_argument("--data", default=None, type=Path, help="where database files go (default ./data)")
    r.add_argument("--keep-data", action="store_true", help="keep the database files after the run")
    r.add_argument("--early-abort", action="store_true", help="stop once a threshold can no longer pass")
    r.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="overrides",
                   help="override a scenario field, e.g. engines.sqlite.cache_size=1GB (repeatable)")
    v = sub.add_parser("validate", help="validate scenario files")
    v.add_argument("paths", nargs="+", type=Path)
    b = sub.add_parser("bench-overhead", help="harness rows/s vs a hand-written loop, per engine")
    b.add_argument("--engines", nargs="+", default=None)
    b.add_argument("--scenario", default="p99_5x")
    b.add_argument("--profile", default="quick")
    b.add_argument("--duration", type=float)
    b.add_argument("--results", default="results", type=Path)
    b.add_argument("--repeats", type=int, default=3, help="harness/loop pairs per engine (median ratio)")
    b.add_argument("--data", default=None, type=Path,
                   help="where both sides' databases go (default: /dev/shm if it has 8 GiB free, else ./data)")
    br = sub.add_parser("bench-reads", help="harness read QPS vs a raw driver loop on the same queries, per engine")
    br.add_argument("--engines", nargs="+", default=None)
    br.add_argument("--scenario", default="read_mix_a")
    br.add_argument("--profile", default="quick")
    br.add_argument("--duration", type=float)
    br.add_argument("--threads", type=int, default=1, help="readers (the raw loop is one connection)")
    br.add_argument("--results", default="results", type=Path)
    br.add_argument("--repeats", type=int, default=3, help="harness/loop pairs per engine (median ratio)")
    br.add_argument("--data", default=None, type=Path,
                    help="where both sides' databases go (default: /dev/shm if it has 8 GiB free, else ./data)")
    s = sub.add_parser("sweep", help="every engine × memory × scale cell of one scenario; resumable")
    s.add_argument("--scenario", required=True)
    s.add_argument("--engines", nargs="+", required=True)
    s.add_argument("--mems", help='memory limits, e.g. "8g 16g 32g" (default: no limit)')
    s.add_argument("--scales", help='scales, e.g. "0.01 0.05" (default: the profile\'s)')
    _cell_args(s)
    s.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="overrides")
    s.add_argument("--fresh", action="store_true", help="set the earlier sweep of the same request aside; start anew")
    d = sub.add_parser("verdict", help="walk scenarios/decision.yaml to a verdict and its report; resumable")
    d.add_argument("--mems", help="memory limits (default: decision.yaml's for the profile)")
    d.add_argument("--scale", type=float, help="override every criterion's scale")
    d.add_argument("--decision", type=Path, default=None, help="a decision tree file (default scenarios/decision.yaml)")
    d.add_argument("--all-cells", action="store_true",
                   help="run the cells a failure at a larger MEM implies, and the criteria after a failed one")
    d.add_argument("--no-early-abort", action="store_true",
                   help="run every cell to its end (a verdict stops a cell once it cannot pass, by default)")
    d.add_argument("--drop-states", action="store_true", help="remove an engine's starting states once its step is done")
    _cell_args(d)
    c = sub.add_parser("ceiling", help="the highest read rate beside the scenario's writes; resumable")
    c.add_argument("--engine", required=True)
    c.add_argument("--scenario", default="combined")
    c.add_argument("--mem", help="memory limit of every step (default: none)")
    _cell_args(c)
    c.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="overrides")
    st = sub.add_parser("state", help="build (or find) the starting state of a scenario for an engine")
    st.add_argument("--engine", required=True)
    st.add_argument("--scenario", required=True)
    st.add_argument("--profile")
    st.add_argument("--scale", type=float)
    st.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="overrides")
    sl = sub.add_parser("states", help="list the cached starting states (STATES=dir); --clean removes them")
    sl.add_argument("--clean", action="store_true", help="remove the states named, or all of them")
    sl.add_argument("ids", nargs="*")
    sl.add_argument("--json", action="store_true", help="one JSON document instead of a table")
    bb = sub.add_parser("bench-build", help="bulk build vs row-by-row load rows/s per engine, and the clone")
    bb.add_argument("--engines", nargs="+", default=None)
    bb.add_argument("--scenario", default="p99_5x")
    bb.add_argument("--scale", type=float, default=0.05)
    bb.add_argument("--results", default="results", type=Path)
    bb.add_argument("--data", default="data", type=Path, help="where the builds go (removed afterwards)")
    rp = sub.add_parser("report", help="report.md and report.html for a run, sweep or verdict directory")
    rp.add_argument("run", type=Path)
    i = sub.add_parser("_runner", help=argparse.SUPPRESS)
    i.add_argument("plan", type=Path)
    return p


def _cell_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--profile")
    p.add_argument("--duration", type=float, help="measured phase, seconds")
    p.add_argument("--repeats", type=int, default=1, help="runs per cell; the report flags a spread >= 10%%")
    p.add_argument("--runtime", default="auto", choices=["auto", "local", "docker"])
    p.add_argument("--early-abort", action="store_true", help="stop a cell once a threshold can no longer pass")
    p.add_argument("--results", default="results", type=Path)
    p.add_argument("--data", default="data", help="where the cells' database files go")


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return _dispatch(args)
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


def _dispatch(args) -> int:
    if args.cmd in ("run", "sweep", "verdict", "ceiling", "bench-overhead", "bench-reads", "bench-build"):
        _writable(args.results, "--results")
        _writable(Path(args.data) if args.data else None, "--data")
    if args.cmd == "validate":
        from harness.scenario.load import validate_paths
        results = validate_paths(args.paths)
        if not results:
            print("error: no scenario files found", file=sys.stderr)
            return EXIT_BAD_INPUT
        for f, err in results:
            print(f"ok    {f}" if err is None else f"FAIL  {err}", file=sys.stdout if err is None else sys.stderr)
        return EXIT_BAD_INPUT if any(err for _, err in results) else 0
    if args.cmd == "bench-overhead":
        from harness import registry
        from harness.overhead import bench_overhead
        return bench_overhead(args.engines or list(registry.names()), args.scenario, args.profile,
                              args.duration, args.results, args.repeats, data_root=args.data)
    if args.cmd == "bench-reads":
        from harness import registry
        from harness.reads.bench import bench_reads
        return bench_reads(args.engines or list(registry.names()), args.scenario, args.profile, args.duration,
                           args.threads, args.results, args.repeats, data_root=args.data)
    if args.cmd == "bench-build":
        from harness import registry
        from harness.state.bench import bench_build
        return bench_build(args.engines or list(registry.names()), args.scenario, args.scale, args.results, args.data)
    if args.cmd == "state":
        return _state(args)
    if args.cmd == "states":
        return _states(args)
    if args.cmd in ("sweep", "verdict", "ceiling"):
        from harness.sweep import CellOptions, parse_list
        opts = CellOptions(profile=args.profile, duration_s=args.duration, runtime=args.runtime,
                           early_abort=args.early_abort, overrides=tuple(getattr(args, "overrides", ())),
                           data_root=args.data)
        if args.cmd == "ceiling":
            from harness.ceiling import ceiling
            if args.repeats != 1:
                raise ConfigError("REPEATS: a ceiling repeats its knee itself; give no REPEATS")
            return ceiling(args.scenario, args.engine, opts, args.results, mem=args.mem)
        mems = parse_list(args.mems, "MEMS")
        if args.cmd == "verdict":
            from harness.scenario.decision import DECISION_FILE
            from harness.verdict import verdict
            from dataclasses import replace
            return verdict(args.profile, [m for m in mems if m], replace(opts, early_abort=not args.no_early_abort),
                           args.results, repeats=args.repeats, scale=args.scale,
                           decision_path=args.decision or DECISION_FILE, all_cells=args.all_cells,
                           drop_states=args.drop_states)
        from harness.sweep import sweep
        return sweep(args.scenario, args.engines, mems, parse_list(args.scales, "SCALES", float), args.repeats,
                     opts, args.results, fresh=args.fresh)
    if args.cmd == "report":
        from harness.report import write_report
        for path in write_report(args.run):
            print(path)
        return 0
    if args.cmd == "_runner":
        from harness.runner.run import run
        from harness.scenario.plan import RunPlan
        return run(RunPlan.read(args.plan))
    from harness.runtime import execute
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
        _summary(result)
        print(result)            # the last line: where the result is
    return rc


def _state(args) -> int:
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


def _states(args) -> int:
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


def _summary(path: Path) -> None:
    from harness.results import load_result
    r = load_result(path)
    m, c = r.metrics, r.metrics.commit_latency_ms
    fmt = lambda v: "-" if v is None else f"{v:g}"  # noqa: E731
    print(f"{r.engine} {r.scenario}/{r.profile}: status {r.status}{' (' + r.error + ')' if r.error else ''}",
          file=sys.stderr)
    if c.count or not m.reads_by_kind:
        print(f"  commit ms p50 {fmt(c.p50)} p99 {fmt(c.p99)} max {fmt(c.max)} (n={c.count}), "
              f"rows/s {fmt(m.rows_per_s)} of {fmt(m.offered_rows_per_s)} offered, integrity {r.integrity.ok}",
              file=sys.stderr)
    if m.reads_by_kind:
        rl = m.read_latency_ms
        print(f"  reads {fmt(m.reads_per_s)}/s, ms p50 {fmt(rl.p50)} p95 {fmt(rl.p95)} p99 {fmt(rl.p99)} "
              f"max {fmt(rl.max)} (n={rl.count}), empty {m.reads_empty}, errors {m.read_errors}, "
              f"integrity {r.integrity.ok}", file=sys.stderr)
        print(f"  {'query':<22}{'count':>7}{'qps':>9}{'p50':>9}{'p95':>9}{'p99':>9}{'max':>9}{'rows':>8}{'empty':>7}",
              file=sys.stderr)
        for name, k in m.reads_by_kind.items():
            print(f"  {name:<22}{k.count:>7}{fmt(k.qps):>9}{fmt(k.p50):>9}{fmt(k.p95):>9}{fmt(k.p99):>9}"
                  f"{fmt(k.max):>9}{fmt(k.mean_rows):>8}{k.empty:>7}", file=sys.stderr)
    if r.engine_version:
        print(f"  engine {r.engine_version}", file=sys.stderr)
    if m.engine_counters:
        ec = m.engine_counters
        ratio = f" (page cache hit ratio {ec.page_cache_hit_ratio:g})" if ec.page_cache_hit_ratio is not None else ""
        print(f"  engine counters over the measured phase: {', '.join(f'{k} {v}' for k, v in ec.measured.items())}"
              f"{ratio}; at its end: {', '.join(f'{k} {v}' for k, v in ec.at_end.items()) or '-'}", file=sys.stderr)
    h = m.harness
    if h.inside_limit_bytes is not None and r.memory.data_limit_bytes_seen and \
            r.memory.runner_limit_bytes_seen == r.memory.data_limit_bytes_seen:     # else a client, outside MEM
        split = (f" (engine heap {h.engine_heap_bytes_end >> 20} MiB, harness {h.harness_bytes_end >> 20} MiB)"
                 if h.engine_heap_bytes_end is not None and h.harness_bytes_end is not None else "")
        print(f"  runner inside the {r.memory.data_limit_bytes_seen >> 20} MiB limit: {h.inside_limit_bytes >> 20} MiB RSS at "
              f"the measured phase's start, {(h.inside_limit_bytes_end or 0) >> 20} MiB at its end{split}", file=sys.stderr)
    for t in r.thresholds:
        print(f"  {'PASS' if t.passed else 'FAIL'} {t.expr}  (measured {fmt(t.value)}"
              f"{'; ' + t.error if t.error else ''})", file=sys.stderr)
    for w in r.warnings:
        print(f"  warning: {w}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
