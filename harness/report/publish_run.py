"""One run made readable without the code (`make publish RUN=results/<run>`): the 5x hour is one cell, not a
walk. Under docs/results/<name>/runs/<run id>/: its report.md and plots, a screenshot of report.html, its
result.json and per-block and per-second files gzipped (what `make compare --window` reads), and a README with
the machine, the commit, what it ran and every threshold beside its value. Several runs may share a folder;
the folder's own README (the answer they make together) is the author's."""
from __future__ import annotations

import gzip
from pathlib import Path

from harness.errors import ConfigError
from harness.report.publish import copy_report, require_report, scrubber, take_screenshot
from harness.results import RunResult, load_result

DATA_FILES = ("blocks.csv", "design.csv", "timeseries.csv")
# every latency as recorded, from its intended start: HdrHistogram's interval logs (its HistogramLogProcessor and
# harness.results.hlog read them, gzipped or not), so a reader can take any percentile of any minute again
HLOG_FILES = ("commit.hlog", "read.hlog")


def publish_run(run: Path, dest_root: Path, name: str | None) -> Path:
    r = _finished(run)
    dest = dest_root / (name or f"{r.environment.get('started_utc', '')[:10]}-{r.scenario}-{r.profile}") \
        / "runs" / r.run_id
    dest.mkdir(parents=True, exist_ok=True)
    scrub = scrubber(run)
    copy_report(run, dest)
    text = scrub((run / "result.json").read_text())
    data_dir = r.plan.get("data_dir")
    if data_dir and Path(data_dir).is_absolute():
        text = text.replace(str(Path(data_dir).parent), "data")
    (dest / "result.json.gz").write_bytes(gzip.compress(text.encode(), mtime=0))
    (dest / "plan.yaml").write_text(scrub((run / "plan.yaml").read_text()))
    for f in DATA_FILES + HLOG_FILES:
        if (run / f).is_file():
            (dest / f"{f}.gz").write_bytes(gzip.compress((run / f).read_bytes(), mtime=0))
    shot = dest / "report.png" if take_screenshot(run / "report.html", dest / "report.png") else None
    (dest / "README.md").write_text(readme(r, shot))
    return dest


def _finished(run: Path) -> RunResult:
    r = load_result(run / "result.json")
    if r is None:
        raise ConfigError(f"{run / 'result.json'}: missing or unreadable: RUN= must be a run's or a verdict's "
                          "directory")
    require_report(run)
    return r


def readme(r: RunResult, shot: Path | None) -> str:
    env, plan, m = r.environment, r.plan, r.metrics
    gib = (env.get("ram_bytes") or 0) / 2**30
    phases = plan.get("phases") or {}
    limit = (r.memory.data_limit_bytes or 0) / 2**20
    lines = [
        f"# {r.scenario} on {r.engine}: {r.status}", "",
        f"- Machine: {env.get('cpu_model', '?')}, {env.get('cpus_usable', '?')} usable cores, {gib:.0f} GiB RAM, "
        f"kernel {env.get('kernel', '?')}, {_filesystem(env)}",
        f"- Commit: `{env.get('git_commit') or '?'}` (arkbench {env.get('harness_version', '?')}); started "
        f"{env.get('started_utc', '?')}",
        f"- Command: `{plan.get('command') or '?'}`",
        f"- Cell: profile `{r.profile}`, scale {r.scale:g} ({plan.get('load_entities', '?'):,} entities), MEM "
        f"{limit:,.0f} MiB ({r.memory.enforcement}), runtime {r.runtime}, warm-up {phases.get('warmup_s', '?')} s, "
        f"measured {phases.get('measure_s', '?')} s, schema `{(plan.get('workload') or {}).get('schema', '?')}`"
        + (f", behind a block log ({plan['block_log'].get('group_blocks', '?')} block(s) a transaction)"
           if plan.get("block_log") else ""),
        f"- The machine while it ran: {_watch(env.get('watch') or {})}",
        f"- Engine: {r.engine_library or r.engine_version or '?'}",
        f"- Integrity: {'intact' if r.integrity.ok else 'NOT intact' if r.integrity.ok is False else 'not checked'}"
        f" ({r.integrity.method or '?'})",
        f"- Committed {m.rows or 0:,} rows at {m.rows_per_s or 0:,.0f} rows/s", "",
        "| threshold | measured | passed | trend over the phase |", "|---|---:|---|---|"]
    lines += [f"| `{t.expr}` | {'-' if t.value is None else format(t.value, ',.4g')} | "
              f"{'yes' if t.passed else 'NO'} | {t.trend.says() if t.trend else '-'} |" for t in r.thresholds]
    lines += ["", "[report.md](report.md) (latency over time, minute by minute, I/O, residency), "
              "[result.json.gz](result.json.gz) (what a script reads), [plan.yaml](plan.yaml), and the per-block "
              "and per-second files (" + ", ".join(f"{f}.gz" for f in DATA_FILES) + ") that `make compare "
              "WINDOW=` reads; every latency as recorded, in HdrHistogram's interval logs ("
              + ", ".join(f"{f}.gz" for f in HLOG_FILES) + ", where the run wrote them)."]
    if shot:
        lines += ["", f"report.html as headless Chromium draws it: [{shot.name}]({shot.name})."]
    return "\n".join(lines) + "\n"


def _filesystem(env: dict) -> str:
    fs = env.get("filesystem") or {}
    return f"{fs.get('fstype', '?')} on {fs.get('device', '?')}" if isinstance(fs, dict) else str(fs)


def _watch(w: dict) -> str:
    """harness/environment's watch: CPU outside the cell's processes, the fsync floor at its end."""
    if not w:
        return "not watched"
    fsync = w.get("fsync_floor_end") or {}
    return (f"{w.get('outside_cpu_cores', '?')} cores of CPU outside the cell over its {w.get('wall_s', 0):,.0f} s"
            + (f"; fsync p50 {fsync['p50_us']:g} µs at its end" if fsync.get("p50_us") is not None else ""))
