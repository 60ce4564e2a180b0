"""A finished read ceiling made readable without the code (`make publish RUN=results/ceiling-...`): its report.md
and plots, a screenshot of report.html, ceiling.json, and every step's result.json gzipped under
steps/<scenario>/<cell>/ (what a reader checks a step's figure against), beside a README with the machine, the
commit, the knee in one sentence and every step in a table."""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from harness.errors import ConfigError
from harness.report.publish import copy_report, require_report, scrubber, take_screenshot, write_cells
from harness.results import load_result


def publish_ceiling(run: Path, dest_root: Path, name: str | None) -> Path:
    c = _finished(run)
    dest = dest_root / (name or f"{c['started_utc'][:10]}-ceiling-{c['scenario']}-{c['profile']}")
    dest.mkdir(parents=True, exist_ok=True)
    scrub = scrubber(run)
    copy_report(run, dest)
    (dest / "ceiling.json").write_text(scrub((run / "ceiling.json").read_text()))
    cells = [SimpleNamespace(scenario=scenario, dir=cell)      # a step's cell is "<scenario>/<cell dir>"
             for scenario, _, cell in (s["cell"].partition("/") for s in c["steps"])]
    write_cells(run, dest, cells, scrub, under="steps")
    results = [load_result(run / cell.scenario / cell.dir / "result.json") for cell in cells]
    first = next((r for r in results if r is not None), None)
    shot = dest / "report.png" if take_screenshot(run / "report.html", dest / "report.png") else None
    (dest / "README.md").write_text(readme(c, first, [answers_checked([r]) for r in results], shot))
    return dest


def _finished(run: Path) -> dict:
    path = run / "ceiling.json"
    c = json.loads(path.read_text())
    if not c.get("complete"):
        raise ConfigError(f"{path}: complete is false: the search has not ended; run the same `make ceiling` again "
                          "to resume it")
    require_report(run)
    return c


def answers_checked(results) -> str:
    """The answers of the runs behind a figure, checked against the model: "n/m right", or "not checkable" where
    no kind of the mix has a model answer (only the kinds with engines/queries.yaml `check` have), never a zero
    that reads as a pass."""
    counts = answer_counts(results)
    if counts is None:        # a run that measured no read (OOM-killed, an error) checked nothing either
        return "not checkable" if any(r is not None and r.metrics and r.metrics.reads_by_kind for r in results) \
            else "none measured"
    n, wrong = counts
    return f"{n - wrong:,}/{n:,} right"


def answer_counts(results) -> tuple[int, int] | None:
    """(answers checked, wrong) over the runs' kinds that have a model answer; None where none has."""
    kinds = [k for r in results if r is not None and r.metrics for k in (r.metrics.reads_by_kind or {}).values()
             if k.checked is not None]
    if not kinds:
        return None
    return sum(k.checked for k in kinds), sum(k.wrong or 0 for k in kinds)


def _fig(v, fmt: str = ",.4g") -> str:
    return "-" if v is None else format(v, fmt)


def _readers_where(r) -> str:
    """An embedded engine's readers are the application's: the runner's processes, inside the limit with it."""
    if r is None or r.memory.enforcement == "none":
        return ""
    return " inside the limit" if r.memory.runner_limit_bytes else " outside the limit"


def readme(c: dict, first, checked: list[str], shot: Path | None) -> str:
    env = first.environment if first is not None else {}
    gib = (env.get("ram_bytes") or 0) / 2**30
    w = c.get("writes") or {}
    lines = [
        f"# The read ceiling of {c['engine']} beside {c['scenario']}'s writes (`{c['profile']}`)", "",
        f"- Machine: {env.get('cpu_model', '?')}, {env.get('cpus_usable', '?')} usable cores, {gib:.0f} GiB RAM, "
        f"kernel {env.get('kernel', '?')}",
        f"- Commit: `{env.get('git_commit') or '?'}` (arkbench {env.get('harness_version', '?')}); "
        f"{c['started_utc']} to {c.get('finished_utc', '?')}",
        f"- Scale {c['scale']:g}, MEM {c.get('mem') or 'none'}, {c['readers']} readers{_readers_where(first)}, "
        f"mix `{c['mix']}`; writes every {_fig(w.get('block_interval_ms'), ',.0f')} ms x "
        f"{_fig(w.get('rows_per_block'), ',.0f')} rows",
        f"- Every step's criteria: {', '.join(f'`{t}`' for t in c['criteria'])}", "",
        f"**{c['sentence']}**", "",
        "| step | offered QPS | achieved QPS | read p50 ms | read p99 ms | empty answers | answers checked | "
        "write p99 ms | rows/s | applier busy | readers' CPU share | passed | failed on |",
        "|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---|---|"]
    for i, (s, ck) in enumerate(zip(c["steps"], checked), 1):
        lines.append(f"| {i}{' (repeat)' if s['repeat'] > 1 else ''} | {s['offered_qps']:,.0f} | "
                     f"{_fig(s['achieved_qps'], ',.0f')} | {_fig(s['read_p50_ms'])} | {_fig(s['read_p99_ms'])} | "
                     f"{_fig(s['reads_empty'], ',')} | {ck} | {_fig(s['write_p99_ms'])} | "
                     f"{_fig(s['write_rows_per_s'], ',.0f')} | {_fig(s.get('apply_busy_share'), '.0%')} | "
                     f"{_fig(s.get('readers_cpu_share'), '.2f')} | {'yes' if s['passed'] else 'NO'} | "
                     f"{'; '.join(s['failed_on']) or '-'} |")
    lines += ["", "[report.md](report.md) (every step, the reads by query kind at the knee), "
              "[ceiling.json](ceiling.json) (what a script reads), every step's result under [steps/](steps) "
              "(gzipped)."]
    if shot:
        lines += ["", f"report.html as headless Chromium draws it: [{shot.name}]({shot.name})."]
    return "\n".join(lines) + "\n"
