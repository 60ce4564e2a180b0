"""A finished degradation curve made readable without the code (`make publish RUN=results/curve-...`): report.md
and its plots, a PNG of each figure's chart, a screenshot of report.html, curve.json and every point's result.json
gzipped under points/, beside a README with the machine, the commit, the command and the curve in a table whose
projected rows say so."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import matplotlib.pyplot as plt

from harness.errors import ConfigError
from harness.report.publish import copy_report, require_report, scrubber, take_screenshot, write_cells
from harness.report.success.curve import curve_rows
from harness.report.success.curve_sittings import CURVE_FILE, earlier, make_room, n, section
from harness.report.success.curve_report import _projected, basis, chart, figures, harness_caveat, measured
from harness.results import load_curve, load_result
from harness.results.curve import CurveFile


def publish_curve(run: Path, dest_root: Path, name: str | None) -> Path:
    c = _finished(run)
    first = next((r for p in c.points if (r := load_result(run / p.cell / "result.json")) is not None), None)
    env = first.environment if first is not None else {}
    dest = dest_root / (name or f"{(env.get('started_utc') or c.updated_utc)[:10]}-curve-{c.engine}")
    dest.mkdir(parents=True, exist_ok=True)
    make_room(dest, c)            # another sitting's curve there kept under sittings/, this one's replaced
    scrub = scrubber(run)
    copy_report(run, dest)
    (dest / CURVE_FILE).write_text(scrub((run / CURVE_FILE).read_text()))
    write_cells(run, dest, [SimpleNamespace(scenario=s, dir=d) for s, _, d in (p.cell.partition("/") for p in c.points)],
                scrub, under="points")
    charts = [png for f, what in figures(c.points).items()
              if (png := _png(c, f, what, dest / "plots" / f"curve-{f}.png")) is not None]
    shot = dest / "report.png" if take_screenshot(run / "report.html", dest / "report.png") else None
    (dest / "README.md").write_text(readme(c, env, charts, shot, earlier(dest)))
    return dest


def _finished(run: Path) -> CurveFile:
    c = load_curve(run / CURVE_FILE)
    if c is None:
        raise ConfigError(f"{run}: holds no curve.json")
    if not c.complete:
        raise ConfigError(f"{run / 'curve.json'}: complete is false: run the same `make curve` again to finish it")
    require_report(run)
    return c


def _png(c: CurveFile, figure: str, what: str, path: Path) -> Path | None:
    pts = measured(c.points, figure, under="points/")
    if not pts:
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    fig = chart(pts, [_projected(q, pts) for q in c.projections if q.figure == figure], what)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path


def readme(c: CurveFile, env: dict, charts: list[Path], shot: Path | None,
           kept: list[tuple[str, CurveFile]] = ()) -> str:
    lines = [f"# The degradation curve of {c.engine}, {c.scenario} (`{c.profile}`), at one data-to-memory ratio", "",
             f"- Made by `{c.command}`" + (f" in {c.wall_s / 60:.0f} min" if c.wall_s else ""),
             f"- Machine: {env.get('cpu_model', '?')}, {env.get('cpus_usable', '?')} usable cores, "
             f"{(env.get('ram_bytes') or 0) / 2**30:.0f} GiB RAM, kernel {env.get('kernel', '?')}, runtime "
             f"{env.get('runtime', '?')}",
             f"- Commit: `{env.get('git_commit') or '?'}`",
             f"- Every point: its own starting state, {basis(c)}, the scenario's cell in "
             "full (never stopped early)"] + ([f"- Caveat: {said}"] if (said := harness_caveat(c.points)) else []) + ["",
             "| scale | state GiB | MEM | status | service p50 ms | ack p99 ms | queryable p99 ms | rows/s | "
             "applier busy | run |", "|---:|---:|---:|---|---:|---:|---:|---:|---:|---|"]
    lines += [f"| {p.scale:g}x | {p.size_gib:,.2f} | {p.mem} | {p.status} | {n(p.service_p50_ms)} | {n(p.ack_p99_ms)} | "
              f"{n(p.queryable_p99_ms)} | {n(p.rows_per_s)} | {'-' if p.busy is None else f'{p.busy:.0%}'} | "
              f"[{p.sitting}](points/{p.cell}) |" for p in c.points]
    for f, what in figures(c.points).items():
        pts = measured(c.points, f, under="points/")
        proj = [_projected(q, pts) for q in c.projections if q.figure == f]
        if not proj:
            continue
        lines += ["", f"**{what}**", "", "| scale | state GiB | figure | what it is |", "|---:|---:|---:|---|"]
        lines += ["| " + " | ".join(r) + " |" for r in curve_rows(pts, proj, "ms")]
        lines += [""] + [q.says for q in c.projections if q.figure == f]
    lines += section(c, list(kept))
    lines += [""] + [f"![{p.stem}](plots/{p.name})" for p in charts]
    lines += ["", "[report.md](report.md), [curve.json](curve.json) (what a script reads: `projections[].projected` is "
              "always true), every point's result under [points/](points) (gzipped)."]
    if shot:
        lines += ["", f"report.html as headless Chromium draws it: [{shot.name}]({shot.name})."]
    return "\n".join(lines) + "\n"
