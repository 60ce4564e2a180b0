"""What the report says, in order: first line the scale and duration caveat, then the verdict and the path
through the tree, a table per scenario (engine × memory), the plots, warnings, and every cell's environment."""
from __future__ import annotations

from harness.report import plots
from harness.report.collect import CellData, ReportData, group_stats
from harness.report.blocks import Block, _f, plots_block
from harness.report.knee_report import knee_blocks, verdict_knee_blocks
from harness.report.phase_table import phase_table
from harness.report.tuning_table import tuning_blocks
from harness.report.io_tables import index_residency_table, io_table
from harness.report.summary import kills_table
from harness.scenario.thresholds import parse_threshold
from harness.stats import NOISY_SPREAD, summarize
from harness.units import format_bytes


def first_line(data: ReportData) -> Block:
    if data.kind == "verdict":
        cav = data.meta.caveats
        if cav:
            return Block("caveat", "this verdict was reached at a smaller scale or a shorter duration than its "
                                   "criteria ask, so it does not yet answer them: " + "; ".join(cav) + ".")
        return Block("p", "Reached at the scale and duration the criteria ask for.")
    if data.kind == "v1":
        m = data.meta
        if m["share"] < 1:
            return Block("caveat", f"measured on {m['entities']:,} entities, {m['share']:g} of V1's: a smaller "
                                   "database than V1 asks, so a go here is not yet V1's (PROFILE=ratio loads them all).")
        return Block("p", "Measured on V1's whole database.")
    scales = sorted({c.result.scale for c in data.cells})
    if all(c.result.crash for c in data.cells):
        kills = sorted({len(c.result.crash.kills) for c in data.cells})
        return Block("caveat", f"measured at scale {', '.join(f'{s:g}' for s in scales)} of mendoza 1x (800K "
                               f"entities) with {', '.join(map(str, kills))} kills per cell: what a restart holds does "
                               "not depend on the scale, how long it takes does.")
    secs = sorted({c.measure_s for c in data.cells})
    return Block("caveat", f"measured at scale {', '.join(f'{s:g}' for s in scales)} of mendoza 1x (800K entities) "
                           f"with {', '.join(f'{s:g}' for s in secs)} s measured; the reference's criterion is p99 "
                           "< 500 ms at 5x for an hour. Compare data-to-memory ratios, not sizes.")


def verdict_blocks(meta) -> list[Block]:
    v = meta.verdict
    if not v:
        return [Block("alarm", "the walk did not finish; run the same make verdict again to resume it.")]
    out = [*answer_blocks(meta), *([Block("alarm", v.note)] if v.note else []),
           Block("p", f"Profile {meta.profile}, memory limits {', '.join(meta.mems)} (walked largest first), "
                      f"{meta.repeats} run(s) per cell. At each limit, the answer is the first engine of the tree "
                      "whose every threshold of every criterion held there, with integrity intact."
                      + (f" The walk took {meta.walk_s / 60:.0f} min; {meta.cells_implied} engine × limit cell(s) of the "
                         "matrix were implied, not run." if meta.walk_s is not None else "")),
           Block("h2", "Path through the decision tree")]
    for step in meta.steps:
        failing = [f"{c.scenario} @ {c.mem}{_cell_variant(c)}: {t.expr} measured {_f(t.value, 3)}"
                   + (f" ({t.error})" if t.error else "") + (" (early abort)" if t.early_abort else "")
                   for c in step.cells for t in c.thresholds if not t.passed]
        dead = [f"{c.scenario} @ {c.mem}{_cell_variant(c)}: {c.status}" + (f" ({c.error.strip().splitlines()[0]})" if c.error else "")
                for c in step.cells if c.status not in ("passed", "failed")]
        out.append(Block("p", f"{step.engine}{_with(step.set)}: {step.outcome.upper()}"
                              + (f" → {step.decision}" if step.passed else "")))
        if failing or dead:
            out.append(Block("list", items=dead + failing))
        if step.cells_unrun:
            out.append(Block("p", f"{step.cells_unrun} run(s) of {step.engine} (criterion × limit × repeat) implied by "
                                  "a failure at a larger limit, not made (ALL_CELLS=1 makes them)."))
        if step.version_note:
            out.append(Block("p", step.version_note + "."))
        if step.control:
            c = step.control
            out.append(Block("p", f"Control ({c.why}): {c.engine}{_with(c.set)} on the same cells: "
                                  f"{c.outcome.upper()}."))
            out.append(Block("list", items=[f"{x.scenario} @ {x.mem}: p99 {_f(x.p99_ms)} ms, {x.status}"
                                            for x in c.cells]))
    return out + library_versions_blocks(meta)


def _cell_variant(rec) -> str:
    """A walk's cell record as the path names it: its option or SET items, and its repeat."""
    return (f" [{rec.variant}]" if rec.variant else "") + (f" #{rec.repeat}" if rec.repeat > 1 else "")


_OUTCOME = {"pass": "✔ pass", "fail": "✘ fail", "implied": "✘ implied", "error": "! error", "not run": "–"}


def answer_blocks(meta) -> list[Block]:
    """The per-MEM answers and the engine × MEM matrix, first: what the reader came for."""
    if not meta.answers:                      # a verdict.json before version 3: one answer for every MEM
        return [Block("verdict", f"Verdict: {meta.verdict.decision}")]
    items = [f"at {a.mem}{f' ({a.at_reference})' if a.at_reference else ''}: "
             + (f"{a.decision}" if a.status != "inconclusive" else f"inconclusive: {a.why}")
             + (f"; only with a trade-off: {'; '.join(a.trade_offs)}" if a.trade_offs else "") for a in meta.answers]
    engines = list(dict.fromkeys(c.engine for c in meta.matrix))
    cell = {(c.engine, c.mem): c for c in meta.matrix}
    rows = [[e, *(_OUTCOME[cell[(e, m)].outcome] + (f" (tuned: {cell[(e, m)].tuned_with})" if cell[(e, m)].tuned_with
                                                        else "") if (e, m) in cell else "–" for m in meta.mems)]
            for e in engines]
    diag = [f"{e} @ {m}: {cell[(e, m)].diagnosis}" for e in engines for m in meta.mems
            if (e, m) in cell and cell[(e, m)].diagnosis]
    return [Block("verdict", "Verdict per memory level"), Block("list", items=items),
            Block("table", headers=["engine", *meta.mems], rows=rows),
            *([Block("p", "Why the cells that did not pass did not:"), Block("list", items=diag)] if diag else []),
            *([Block("p", f"Implied cells rest on one assumption: {meta.monotonicity}.")]
              if meta.cells_implied and meta.monotonicity else [])]


def _with(settings: dict) -> str:
    return f" with {', '.join(f'{k}={v}' for k, v in settings.items())}" if settings else ""


def library_versions_blocks(meta) -> list[Block]:
    """compare_versions' engines side by side: the library each ran (or would run) and where that is from."""
    if not meta.library_versions:
        return []
    of = meta.versions_of
    rows = [[v.engine + _with(v.set), v.version or "-", v.library, v.driver,
             "measured in this verdict" if v.source == "measured" else "installed here, not run"]
            for v in meta.library_versions]
    return [Block("h2", f"The {of} each engine runs"),
            Block("table", headers=["engine", of, "library", "driver", "from"], rows=rows),
            *([Block("list", items=[n + "." for n in meta.version_notes])] if meta.version_notes else [])]


def _thresholds_text(c: CellData) -> str:
    return "; ".join(f"{'✔' if t.passed else '✘'} {t.expr} = {_f(t.value, 2)}" + (f" ({t.error})" if t.error else "")
                     + (f" ({t.note})" if t.note else "")
                     for t in c.result.thresholds)


def scenario_table(data: ReportData, scenario: str) -> tuple[Block, list[str]]:
    headers = ["engine", "memory (policy: engine cache)", "start", "durability", "scale", "status", "p50 ms",
               "p99 ms", "max ms", "rows/s", "bloat", "WAL peak", "checkpoints", "harness inside the limit",
               "repeats (p99 spread)", "thresholds"]
    rows, noisy = [], []
    for group in data.groups(scenario):
        c = group[0]
        st = group_stats(group)
        m = c.result.metrics
        spread = st["p99"]["spread"]
        if len(group) == 1:
            rep = "1 (noise not measured)"
        else:
            rep = f"{len(group)} ({spread:.0%}{' NOISY' if st['noisy'] else ''})" if spread is not None else str(len(group))
        if st["noisy"]:
            noisy.append(f"{scenario} {c.name} {c.mem_label}: p99 spread {_pct(st['p99']['spread'])}, "
                         f"rows/s spread {_pct(st['rows_per_s']['spread'])} over {len(group)} repeats")
        p99 = st["p99"]["median"] if len(group) > 1 else c.commit_ms.p99
        rate = st["rows_per_s"]["median"] if len(group) > 1 else m.rows_per_s
        status = "/".join(sorted({g.status for g in group}))
        if c.result.early_abort:
            status += " (early abort)"
        # over repeats: the median p50 and p99, the worst max
        p50 = summarize([g.commit_ms.p50 for g in group])["median"] if len(group) > 1 else c.commit_ms.p50
        worst = max((g.commit_ms.max for g in group if g.commit_ms.max is not None), default=None)
        rows.append([c.name, memory_given(c), start_text(c.result.load or {}), durability_text(c.result.plan),
                     f"{c.result.scale:g}", status, _f(p50),
                     _f(p99), _f(worst), _f(rate, 0), _f(m.bloat_ratio, 2),
                     format_bytes(m.wal_bytes_max), m.checkpoints if m.checkpoints is not None else "-",
                     _share(c), rep, _thresholds_text(c)])
    return Block("table", headers=headers, rows=rows), noisy


def memory_given(c: CellData) -> str:
    """The limit, the policy, and the engine's own cache under it."""
    m = c.result.memory
    cache = f": cache {format_bytes(m.engine_cache_bytes)}" if m.engine_cache_bytes else ""
    return f"{c.mem_label} ({m.policy}{cache})" if m.data_limit_bytes else c.mem_label


def start_text(load: dict) -> str:
    """Cold (the clone evicted) or preloaded inside the limit, with what stayed resident."""
    if load.get("preload"):
        return (f"preloaded in {_f(load.get('preload_s'))} s, {format_bytes(load.get('resident_bytes_after_preload'))} "
                f"of {format_bytes(load.get('preload_bytes'))} resident")
    return "cold" if load.get("method") == "state" else "-"


def durability_text(plan: dict) -> str:
    """What a commit guarantees at the run's settings (engine.toml [durability]), its first clause."""
    return (plan.get("durability") or "-").split(":")[0]


def _share(c: CellData) -> str:
    """The harness's own memory inside the limit, beside the limit (a server engine's runner is outside)."""
    h = c.result.metrics.harness
    if h.inside_limit_bytes is None:
        return "-"
    if c.result.memory.runner_limit_bytes_seen != c.result.memory.data_limit_bytes_seen:
        return "0 (client outside MEM)"
    out = f"{format_bytes(h.inside_limit_bytes)} → {format_bytes(h.inside_limit_bytes_end)} of {c.mem_label}"
    if h.engine_heap_bytes_end is not None and h.harness_bytes_end is not None:
        out += f" (engine {format_bytes(h.engine_heap_bytes_end)}, harness {format_bytes(h.harness_bytes_end)})"
    return out


def _pct(v) -> str:
    return "-" if v is None else f"{v:.0%}"


def starting_database(load: dict) -> str:
    """How the cell's database was made: a cloned state (its build, the clone) or the organic load; then
    the ageing blocks."""
    if load.get("method") == "state":
        out = (f"state built by {load.get('build_method')} load in {_f(load.get('build_s'), 0)} s, cloned "
               f"({load.get('clone_method')}) in {_f(load.get('clone_s'))} s, page cache evicted")
    elif load:
        out = f"organic load (row by row) in {_f(load.get('seconds'), 0)} s"
    else:
        return "-"
    return out + (f"; aged {load['age_blocks']} blocks ({load.get('age_rows')} rows)" if load.get("age_blocks") else "")


def memory_text(m) -> str:
    """The limit, how it was enforced, the policy and the engine's cache under it; a server's client's own."""
    out = f"{format_bytes(m.data_limit_bytes_seen)} ({m.enforcement}), {m.policy}"
    if m.sized_settings:
        out += ": " + ", ".join(f"{k}={v}" for k, v in m.sized_settings.items())
    if m.runner_limit_bytes_seen != m.data_limit_bytes_seen:
        out += f"; client {format_bytes(m.runner_limit_bytes_seen)}"
    return out


def environment_table(cells: list[CellData]) -> Block:
    headers = ["cell", "node", "engine (driver)", "settings read back", "memory limit (enforced by)", "runtime / image", "CPU",
               "RAM", "fsync p50/p99 µs", "disk write MiB/s seq/random", "random 4 KiB read p50/p99 µs",
               "scale / entities", "starting database", "harness"]
    rows = []
    for c in cells:
        r, env = c.result, c.result.environment
        fs, disk, rd = env.get("fsync_floor") or {}, env.get("disk_write") or {}, env.get("disk_random_read") or {}
        limit = memory_text(r.memory)
        settings = ", ".join(f"{k}={v}" for k, v in r.engine_settings.items())
        version = "; ".join([r.engine_version or "-", *(f"{k} {v}" for k, v in r.engine_related_versions.items())])
        rows.append([f"{c.scenario}/{c.run_dir.name}", env.get("node") or env.get("hostname") or "-", version,
                     settings or "-", limit,
                     f"{r.runtime} {(r.image_id or '')[:19]}".strip(),
                     f"{env.get('cpu_model', '?')} × {env.get('cpus_usable', env.get('cpu_count', '?'))}",
                     format_bytes(env.get("ram_bytes")), f"{_f(fs.get('p50_us'))} / {_f(fs.get('p99_us'))}",
                     f"{_f(disk.get('sequential_write_mib_per_s'), 0)} / {_f(disk.get('random_write_mib_per_s'), 0)}",
                     f"{_f(rd.get('p50_us'))} / {_f(rd.get('p99_us'))}",
                     f"{r.scale:g} / {r.plan.get('load_entities', '-')}", starting_database(r.load or {}),
                     f"{env.get('harness_version')} {(env.get('git_commit') or '')[:12]}"])
    return Block("table", headers=headers, rows=rows)


def reads_by_kind_table(cells: list[CellData]) -> Block | None:
    """Per cell with readers, its mix's latency by query kind (from each query's intended start)."""
    rows = []
    for c in cells:
        m = c.result.metrics
        mix = c.result.plan.get("readers", {}).get("mix")
        for kind, k in (m.reads_by_kind or {}).items():
            rows.append([c.label, mix if isinstance(mix, str) else "custom", kind, k.count, _f(k.qps),
                         _f(k.p50, 3), _f(k.p95, 3), _f(k.p99, 3), _f(k.max, 3), _f(k.mean_rows, 2), k.empty,
                         "-" if k.checked is None else f"{k.checked - (k.wrong or 0)}/{k.checked}"])
    if not rows:
        return None
    return Block("table", headers=["cell", "mix", "query", "count", "QPS", "p50 ms", "p95 ms", "p99 ms", "max ms",
                                   "rows", "empty", "right / checked"], rows=rows)


def ceiling_blocks(data: ReportData) -> list[Block]:
    """The sentence, every step, the curve with its knee, and the knee's reads by query kind."""
    meta = data.meta
    doc = [Block("verdict", meta.get("sentence") or "the search has not finished; run the same make ceiling "
                                                   "again to resume it.")]
    doc.append(Block("p", f"Writes: {_writes_text(meta)}. Reads: {meta['readers']} reader(s), mix "
                          f"{meta['mix']}. A step passes when its run passes: " + "; ".join(meta["criteria"])
                          + ". Every step starts from the same cloned state; the knee is run twice."))
    if meta.get("threshold_results"):
        doc.append(Block("list", items=[f"{'PASS' if t['passed'] else 'FAIL'} {t['expr']} (measured {t['value']})"
                                        for t in meta["threshold_results"]]))
    rows = [[i, f"{s['offered_qps']:,.0f}", s["repeat"], s["status"], _f(s["achieved_qps"]), _f(s["read_p50_ms"], 3),
             _f(s["read_p99_ms"], 3), _f(s["write_p99_ms"]), _f(s["write_rows_per_s"], 0),
             format_bytes(s["db_bytes"]), s["reads_empty"], s.get("reads_late", "-"),
             "; ".join(s.get("failed_on") or []) or "-"] for i, s in enumerate(meta["steps"], 1)]
    doc += [Block("h2", "Steps"), Block("table", headers=["step", "offered QPS", "run", "status", "achieved QPS",
                                                         "read p50 ms", "read p99 ms", "write p99 ms", "rows/s written",
                                                         "db size at end", "empty reads", "late reads", "failed on"],
                                        rows=rows)]
    knee = (meta.get("knee") or {}).get("knee_read_qps")
    limits = [parse_threshold(t).limit for t in meta["criteria"] if parse_threshold(t).metric == "commit_ms"]
    doc.append(plots_block(plots.ceiling_curve(meta["steps"], knee, min(limits, default=None),
                                               f"{meta['engine']}: p99 against the offered read rate"),
                           "ceiling-curve", "Left: read and write p99 per step (open markers: failed steps), the "
                           "write criterion dotted, the knee in green. Right: reads achieved against offered."))
    at_knee = [c for c in data.cells if knee and c.result.plan.get("readers", {}).get("rate_per_s") == knee]
    if (t := reads_by_kind_table(at_knee)) is not None:
        doc += [Block("h2", "Reads at the knee, by query kind"), t]
    return doc


def _writes_text(meta) -> str:
    w = meta.get("writes")
    return "none (read-only)" if not w else f"a block of {w['rows_per_block']} rows every {w['block_interval_ms']:g} ms"


def v1_blocks(meta: dict) -> list[Block]:
    """The go/no-go, what was asked, the frontier as a table and a plot, and where each search's own report is."""
    need = meta["go_needs"]
    doc = [Block("verdict", meta.get("sentence") or "the walk has not finished; run the same make v1 again to "
                                                    "resume it."),
           Block("p", f"{meta['engine']}{' under ' + meta['mem'] if meta.get('mem') else ''}, profile "
                      f"{meta['profile']}: {meta['entities']:,} entities of the Data Center model "
                      f"({meta['share']:g} of V1's), blocks every {meta['block_interval_ms']:g} ms. At each write "
                      f"rate a ceiling search of the checked DC read mix; a step passes when every criterion holds "
                      f"and no answer is wrong: " + "; ".join(meta["criteria"]) + f". Go needs "
                      f"{need['write_rows_per_s']:,.0f} rows/s written with {need['read_qps']:,.0f} reads/s.")]
    rows = [[f"{p['write_rows_per_s']:,.0f}", _v1_reads(p), _f(p["read_p99_ms"], 3), _f(p["write_p99_ms"]),
             _f(p["write_rows_per_s_achieved"], 0), "; ".join(p["bounded_by"]) or "-",
             f"{p.get('answers_checked', 0) - p.get('answers_wrong', 0):,} / {p.get('answers_checked', 0):,}",
             p["steps"], p["search"]] for p in meta["frontier"]]
    doc += [Block("h2", "Frontier"),
            Block("p", "Per write rate, the knee's figures (the worse of its two runs); where no read rate passed, "
                       "those of the lowest one tried, which failed."),
            Block("table", headers=["writes offered (rows/s)", "reads/s", "read p99 ms", "write p99 ms",
                                    "rows/s achieved", "bounded by", "answers right / checked", "steps",
                                    "search (its own report)"], rows=rows)]
    if meta["frontier"]:
        doc.append(plots_block(plots.v1_frontier(meta["frontier"], need, f"{meta['engine']}: V1 frontier"),
                               "v1-frontier", "Each write rate's highest passing read rate (filled: a knee; open: "
                               "the search's top rate passed; x: no read rate passed); the shaded corner is what "
                               "V1 asks."))
    return doc


def _v1_reads(p: dict) -> str:
    if p["read_qps"] is not None:
        return f"{p['read_qps']:,.0f}" + ("" if p["reached"] else " (top rate, no knee)")
    low = p.get("lowest") or {}
    if not low:
        return "none"
    late = f", {low['reads_late']:,} due never started" if low.get("reads_late") else ""
    return f"none ({low['offered_qps']:,.0f} offered: {_f(low.get('achieved_qps'))}/s achieved in the window{late})"


def build(data: ReportData) -> list[Block]:
    title = {"verdict": "arkbench verdict", "sweep": "arkbench sweep", "run": "arkbench run",
             "ceiling": "arkbench ceiling", "v1": "arkbench V1 go/no-go", "knee": "arkbench knee"}[data.kind]
    doc = [first_line(data), Block("h1", f"{title}: {data.dir.name}")]
    if data.kind == "v1":
        return doc + v1_blocks(data.meta)
    if data.kind == "verdict":
        doc += verdict_blocks(data.meta) + tuning_blocks(data.meta, data.cells) + verdict_knee_blocks(data.dir)
    if not data.cells:
        doc.append(Block("alarm", "no cell of this directory has a result yet."))
        return doc
    if data.kind == "ceiling":
        doc += ceiling_blocks(data)
    if data.kind == "knee":
        doc += knee_blocks(data)
    body, noisy = [], []
    for scenario in data.scenarios() if data.kind not in ("ceiling", "knee") else ():   # their steps are their table
        cells = [c for c in data.cells if c.scenario == scenario]
        if any(c.result.crash for c in cells):
            body += [Block("h2", f"Scenario {scenario}: crash durability and recovery"), *crash_blocks(cells, scenario)]
            continue
        table, n = scenario_table(data, scenario)
        noisy += n
        body += [Block("h2", f"Scenario {scenario}"), table]
        body.append(plots_block(plots.latency_cdf(cells, f"{scenario}: commit latency by percentile"),
                                f"{scenario}-cdf", "Commit latency percentile distribution per cell "
                                "(from each measured block, intended start to commit)."))
        if any(c.data_limit_bytes for c in cells):
            body.append(plots_block(plots.p99_vs_memory(cells, f"{scenario}: p99 against the memory limit"),
                                    f"{scenario}-p99-vs-memory", "p99 commit latency per engine and memory limit; "
                                    "an x on the axis is a cell that was OOM-killed or did not finish."))
        body.append(plots_block(plots.sizes_over_time(cells, f"{scenario}: database and WAL size"),
                                f"{scenario}-sizes", "Database (solid) and WAL (dashed) size over the whole run."))
        if (t := reads_by_kind_table(cells)) is not None:
            body += [Block("h3", "Reads by query kind"), t]
        for title, table_of in (("Where a block's time went (mean per measured block; '-': not timed apart)",
                                 phase_table),
                                ("I/O over the measured phase (device: the data's whole disk)", io_table),
                                ("Page-cache residency per table and index", index_residency_table)):
            if (t := table_of(cells)) is not None:
                body += [Block("h3", title), Block("table", headers=t[0], rows=t[1])]
        if len({c.result.scale for c in cells if c.result.metrics.read_latency_ms}) > 1:
            body.append(plots_block(plots.reads_vs_size(cells, f"{scenario}: reads against database size"),
                                    f"{scenario}-reads-vs-size", "Read p99 and reads per second per engine "
                                    "against the database's size at the run's end: the degradation curve."))
        body.append(Block("h3", "Commit latency over time"))
        for c in cells:
            body.append(plots_block(plots.latency_over_time(c), f"{scenario}-{c.run_dir.name}-latency",
                                    f"{c.label}: every measured block, checkpoint events, WAL size."))
    if noisy:
        doc.append(Block("alarm", f"noisy results (repeat spread ≥ {NOISY_SPREAD:.0%}): " + "; ".join(noisy)))
    doc += body
    warnings = [f"{c.scenario}/{c.run_dir.name}: {w}" for c in data.cells for w in c.result.warnings]
    if warnings:
        doc += [Block("h2", "Warnings from the runs"), Block("list", items=warnings)]
    doc += [Block("h2", "Environment of every cell"), environment_table(data.cells),
            Block("p", "Each cell's result.json, plan.yaml, blocks.csv and timeseries.csv sit in its directory "
                       "under this one.")]
    return doc


def crash_blocks(cells: list[CellData], scenario: str) -> list[Block]:
    """A crash scenario's section: durability beside recovery per cell, each cell's kills, and recovery by
    WAL size where the scenario aimed at sizes."""
    headers = ["engine", "memory", "durability", "survives", "promised on this kill", "status", "kills (landed in)",
               "acknowledged", "acked lost", "never sent", "corrupt", "recovery s p50", "recovery s max",
               "thresholds"]
    rows = []
    for c in cells:
        x = c.result.crash
        if x is None:           # died before its first life
            rows.append([c.name, c.mem_label, durability_text(c.result.plan), "-", "-", c.status, "-", "-", "-",
                         "-", "-", "-", "-", _thresholds_text(c)])
            continue
        rows.append([c.name, c.mem_label, durability_text(c.result.plan), x.survives, "yes" if x.promised else "no",
                     c.status + (f" ({c.result.error})" if c.result.error else ""),
                     f"{len(x.kills)} ({', '.join(f'{k} {n}' for k, n in sorted(x.landed.items()))})",
                     x.acknowledged_blocks, x.lost_acked_blocks, x.unacked_blocks, x.corrupt_restarts,
                     _f(x.recovery_s.p50, 3), _f(x.recovery_s.max, 3), _thresholds_text(c)])
    out = [Block("p", "Each kill is a SIGKILL of the engine's whole process tree, aimed inside a commit, inside a "
                      "checkpoint or anywhere; each restart evicts the page cache, opens the engine on the same files "
                      "and finds which block its rows hold against the model. A process kill leaves the OS page "
                      "cache, so it shows no loss that only a power cut causes."),
           Block("table", headers=headers, rows=rows)]
    wal = [(c, k) for c in cells if c.result.crash for k in c.result.crash.kills if k.aimed_at.startswith("wal ")]
    if wal:
        out += [Block("h3", "Recovery time by WAL size"),
                Block("table", headers=["engine", "WAL aimed at", "WAL at the kill", "recovery s", "WAL MB/s replayed",
                                        "open s", "first commit s"],
                      rows=[[c.name, k.aimed_at[4:], format_bytes(k.wal_bytes), _f(k.recovery_s, 3),
                             _f(k.wal_bytes / 1e6 / k.recovery_s, 0) if k.wal_bytes and k.recovery_s else "-",
                             _f(k.open_s, 3), _f(k.first_commit_s, 3)] for c, k in wal]),
                plots_block(plots.recovery_by_wal(cells, f"{scenario}: recovery time by WAL size"),
                            f"{scenario}-recovery-by-wal", "Seconds from open to the first successful read after a "
                            "SIGKILL and a cold restart, against the WAL recovery replays.")]
    for c in cells:
        if c.result.crash and c.result.crash.kills:
            headers, rows = kills_table(c.result.crash)
            out += [Block("h3", f"Kills of {c.label}"), Block("table", headers=headers, rows=rows)]
    return out
