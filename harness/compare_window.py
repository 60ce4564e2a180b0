"""`harness compare A B --window 0:600 [--window-b 0:]`: two runs side by side over windows of their measured
phases (harness/windows.py), figure by figure, B over A, with each figure's trend over its window. How well a
1x stand-in predicts the 5x hour is this table: its 600 s beside the hour's first 600 s, and beside the hour."""
from __future__ import annotations

from pathlib import Path

from harness.units import format_figure as _fmt
from harness.errors import ConfigError
from harness.windows import Window, series, trend_per_h


def _run_dir(path: Path) -> Path:
    path = path.resolve()
    path = path.parent if path.name == "result.json" else path
    if not any((path / f).exists() for f in ("blocks.csv", "blocks.csv.gz")):
        raise ConfigError(f"{path}: --window reads one run's folder (its blocks.csv); a sweep's holds many")
    return path


def compare_windows(a: Path, b: Path, window_a: Window, window_b: Window) -> dict:
    (sa, la), (sb, lb) = (series(_run_dir(p), w) for p, w in ((a, window_a), (b, window_b)))
    by_name = {s.name: s for s in sb}
    rows = []
    for s in sa:
        other = by_name.get(s.name)
        va, vb = s.value, other.value if other else None
        ta, tb = trend_per_h(s, la), trend_per_h(other, lb) if other else None
        rows.append({"figure": s.name, "unit": s.unit, "read_as": s.agg, "a": va, "b": vb,
                     "ratio": round(vb / va, 3) if va and vb is not None else None,
                     "trend_a_per_h": _trend(ta), "trend_b_per_h": _trend(tb)})
    return {"a": {"run": str(a), "window": window_a.label, "seconds": round(la, 1)},
            "b": {"run": str(b), "window": window_b.label, "seconds": round(lb, 1)}, "figures": rows}


def _trend(t) -> dict | None:
    return None if t is None else {"slope": round(t[0], 6), "significant": t[1]}


def _fmt_trend(t: dict | None, unit: str) -> str:
    if t is None:
        return "-"
    v = t["slope"]
    return f"{'+' if v >= 0 else ''}{_fmt(v, unit)}/h{'' if t['significant'] else ' (ns)'}"


def render_windows(cmp: dict, markdown: bool) -> str:
    head = (f"A: {cmp['a']['run']} over {cmp['a']['window']} ({cmp['a']['seconds']:g} s); "
            f"B: {cmp['b']['run']} over {cmp['b']['window']} ({cmp['b']['seconds']:g} s). Trend: least squares "
            "over 30 s windows, per hour; (ns): its 95% interval holds 0")
    if markdown:
        lines = [head, "", "| figure | read as | A | B | B/A | A's trend | B's trend |",
                 "|---|---|---:|---:|---:|---:|---:|"]
        lines += [f"| {r['figure']} | {r['read_as']} | {_fmt(r['a'], r['unit'])} | {_fmt(r['b'], r['unit'])} | "
                  f"{'-' if r['ratio'] is None else format(r['ratio'], '.3f') + 'x'} | "
                  f"{_fmt_trend(r['trend_a_per_h'], r['unit'])} | {_fmt_trend(r['trend_b_per_h'], r['unit'])} |"
                  for r in cmp["figures"]]
    else:
        lines = [head]
        lines += [f"  {r['figure']:28s} {_fmt(r['a'], r['unit']):>12s} -> {_fmt(r['b'], r['unit']):>12s}  "
                  f"{'-' if r['ratio'] is None else format(r['ratio'], '.3f') + 'x':>8s}  "
                  f"trend {_fmt_trend(r['trend_a_per_h'], r['unit'])} -> {_fmt_trend(r['trend_b_per_h'], r['unit'])}"
                  for r in cmp["figures"]]
    return "\n".join(lines) + "\n"
