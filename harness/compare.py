"""`harness compare A B` (pyperf's compare_to): two runs, sweeps or matrix runs side by side, figure by figure,
with B's value over A's. Where both sides hold repeats of a cell, Welch's t-test at 95% says whether the
difference is significant; with one value a side it says so instead of guessing."""
from __future__ import annotations

import argparse
import json
import re
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from harness.errors import ConfigError
from harness.results import RunResult, load_result, read_json
from harness.stats import significant
from harness.units import format_figure


@dataclass(frozen=True)
class Figure:
    name: str
    unit: str
    get: Callable[[RunResult], float | None]
    lower_is_better: bool
    latency: bool = False


def _io(attr: str):
    return lambda r: getattr(r.metrics.io, attr) if r.metrics.io else None


def _log(get):
    """A block log's figure (metrics.block_log), None for an engine alone."""
    return lambda r: get(r.metrics.block_log) if r.metrics.block_log else None


FIGURES = (
    Figure("commit p50", "ms", lambda r: r.metrics.commit_latency_ms.p50, True, True),
    Figure("commit p99", "ms", lambda r: r.metrics.commit_latency_ms.p99, True, True),
    Figure("commit max", "ms", lambda r: r.metrics.commit_latency_ms.max, True, True),
    Figure("service p50", "ms", lambda r: r.metrics.service_time_ms.p50, True, True),
    Figure("committed rows/s", "", lambda r: r.metrics.rows_per_s, False),
    Figure("read p99", "ms", lambda r: r.metrics.read_latency_ms.p99 if r.metrics.read_latency_ms else None,
           True, True),
    Figure("reads/s", "", lambda r: r.metrics.reads_per_s, False),
    Figure("write amplification", "x", _io("write_amplification"), True),
    Figure("device reads/s", "", _io("read_iops"), True),
    Figure("resident at end", "%", lambda r: r.metrics.io.residency.share_end
           if r.metrics.io and r.metrics.io.residency else None, False),
    Figure("bloat ratio", "x", lambda r: r.metrics.bloat_ratio, True),
    Figure("WAL max", "B", lambda r: r.metrics.wal_bytes_max, True),
    # behind a block log: commit is the acknowledgement; these say whether its applier keeps up, and how far behind
    # the acknowledgement a reader finds the index
    Figure("applier busy", "%", _log(lambda b: b.apply_utilisation), True),
    Figure("apply lag p99", "blocks", _log(lambda b: b.apply_lag_blocks.p99), True),
    Figure("index behind the ack, p99", "ms", _log(lambda b: b.apply_lag_ms.p99), True, True),
    Figure("drain after the clock", "s", _log(lambda b: b.drain_s), True, True),
    Figure("ack sync, mean", "ms", _log(lambda b: b.ack_phases_ms.get("sync")), True, True),
)


def side(paths: list[Path]) -> dict[str, list[RunResult]]:
    """One side of a comparison: the runs under each path, those of the same cell together (repeats)."""
    out: dict[str, list[RunResult]] = {}
    for p in paths:
        for key, runs in samples(p).items():
            # a run that broke or was killed measured nothing to compare
            out.setdefault(key, []).extend(r for r in runs if r.status in ("passed", "failed"))
    return {k: v for k, v in out.items() if v}


def samples(path: Path) -> dict[str, list[RunResult]]:
    """The runs under `path` by cell: a run folder (or its result.json), a sweep's or a matrix's folder
    (repeats of one cell together: their names differ only in -rN)."""
    path = path.resolve()
    if path.name == "result.json":
        path = path.parent
    if (path / "result.json").exists():
        r = load_result(path / "result.json")
        return {f"{r.scenario}/{r.engine}": [r]}
    sweep = read_json(path / "sweep.json")
    if not sweep:
        raise ConfigError(f"{path}: neither a run (result.json) nor a sweep, matrix or verdict (sweep.json)")
    out: dict[str, list[RunResult]] = {}
    for cell in sweep.get("cells", []):
        r = load_result(path / cell["scenario"] / cell["dir"] / "result.json")
        if r is not None:
            out.setdefault(f"{cell['scenario']}/{re.sub(r'-r[0-9]+$', '', cell['dir'])}", []).append(r)
    if not out:
        raise ConfigError(f"{path}: its sweep.json lists no cell with a result yet")
    return out


def _verdict(f: Figure, a: list[float], b: list[float]) -> str:
    if not a or not b:
        return "-"
    sig = significant(a, b)
    if sig is None:
        return "n=1: no test"
    if not sig:
        return "not significant"
    better = (statistics.mean(b) < statistics.mean(a)) == f.lower_is_better
    return ("faster" if better else "slower") if f.latency else ("better" if better else "worse")


def compare(a_paths: list[Path], b_paths: list[Path]) -> list[dict]:
    """One entry per cell both sides have (or the two runs, when each side is one cell)."""
    a, b = side(a_paths), side(b_paths)
    pairs = [(k, a[k], b[k]) for k in a if k in b]
    if not pairs and len(a) == 1 and len(b) == 1:
        (ka, ra), (kb, rb) = next(iter(a.items())), next(iter(b.items()))
        pairs = [(ka if ka == kb else f"{ka} vs {kb}", ra, rb)]
    if not pairs:
        raise ConfigError(f"A and B have no cell in common (A: {', '.join(a)}; B: {', '.join(b)})")
    out = []
    for key, ra, rb in pairs:
        rows = []
        for f in FIGURES:
            va = [v for v in map(f.get, ra) if v is not None]
            vb = [v for v in map(f.get, rb) if v is not None]
            if not any(va) and not any(vb):          # a figure the runs do not have (a read-only run's rows)
                continue
            ma, mb = (statistics.median(v) if v else None for v in (va, vb))
            rows.append({"figure": f.name, "unit": f.unit, "a": ma, "b": mb, "n_a": len(va), "n_b": len(vb),
                         "ratio": round(mb / ma, 3) if ma and mb is not None else None,
                         "verdict": _verdict(f, va, vb)})
        out.append({"cell": key, "a_runs": [r.run_id for r in ra], "b_runs": [r.run_id for r in rb], "figures": rows})
    return out


def render(cmp: list[dict], a_name: str, b_name: str, markdown: bool) -> str:
    lines = []
    for c in cmp:
        if markdown:
            lines += [f"### {c['cell']}", "", f"A: {a_name} ({len(c['a_runs'])} run(s)); "
                      f"B: {b_name} ({len(c['b_runs'])} run(s)); medians, B/A, Welch's t-test at 95%", "",
                      "| figure | A | B | B/A | verdict |", "|---|---:|---:|---:|---|"]
            lines += [f"| {r['figure']} | {format_figure(r['a'], r['unit'])} | {format_figure(r['b'], r['unit'])} | "
                      f"{'-' if r['ratio'] is None else format(r['ratio'], '.3f') + 'x'} | {r['verdict']} |"
                      for r in c["figures"]]
            lines.append("")
        else:
            lines.append(f"{c['cell']}: A {len(c['a_runs'])} run(s), B {len(c['b_runs'])} run(s)")
            lines += [f"  {r['figure']:26s} {format_figure(r['a'], r['unit']):>14s} -> {format_figure(r['b'], r['unit']):>14s}  "
                      f"{'-' if r['ratio'] is None else format(r['ratio'], '.3f') + 'x':>8s}  {r['verdict']}"
                      for r in c["figures"]]
    return "\n".join(lines) + "\n"


def add_command(sub) -> None:
    c = sub.add_parser("compare", help="two runs, sweeps or matrix runs side by side, figure by figure (B/A)")
    c.add_argument("a", help="a run, sweep or matrix folder; several, comma-separated, are one side's repeats")
    c.add_argument("b", help="the same for B")
    c.add_argument("--markdown", type=Path, help="also write the comparison as Markdown to this file")
    c.add_argument("--json", action="store_true", help="print the comparison as JSON instead")
    c.add_argument("--window", help="two runs over START:END seconds of their measured phases (0:600; 3000: to "
                   "the end), from their per-block files, each figure with its trend")
    c.add_argument("--window-b", help="B's window where it differs from A's (0: for the whole phase)")
    c.set_defaults(func=_command)


def _command(args: argparse.Namespace) -> int:
    if args.window or args.window_b:
        return _windows_command(args)
    a, b = ([Path(x) for x in arg.split(",") if x] for arg in (args.a, args.b))
    cmp = compare(a, b)
    print(json.dumps(cmp, indent=2) if args.json else render(cmp, args.a, args.b, markdown=False), end="")
    if args.markdown:
        args.markdown.write_text(render(cmp, args.a, args.b, markdown=True))
    return 0


def _windows_command(args: argparse.Namespace) -> int:
    from harness.compare_window import compare_windows, render_windows
    from harness.windows import parse_window
    window_a = parse_window(args.window or "0:")
    cmp = compare_windows(Path(args.a), Path(args.b), window_a, parse_window(args.window_b or args.window or "0:"))
    print(json.dumps(cmp, indent=2) if args.json else render_windows(cmp, markdown=False), end="")
    if args.markdown:
        args.markdown.write_text(render_windows(cmp, markdown=True))
    return 0
