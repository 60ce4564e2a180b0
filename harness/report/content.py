"""What the report says, in order: first line the scale and duration caveat, then the verdict and the path
through the tree (verdict_blocks.py), a table per scenario (engine × memory), the plots, warnings, and every
cell's environment (cell_tables.py); a ceiling's and V1's sections are walk_blocks.py's."""
from __future__ import annotations

from harness.report import plots
from harness.report.answer_table import answer_cell
from harness.report.collect import CellData, ReportData, group_stats
from harness.report.blocks import Block, _f, plots_block
from harness.report.cell_tables import (durability_text, environment_table, harness_share, memory_given, pct,
                                        reads_by_kind_table, start_text, thresholds_text)
from harness.report.minutes import minutes, minutes_table
from harness.report.knee_report import knee_blocks, verdict_knee_blocks
from harness.report.success.curve_report import curve_blocks
from harness.report.phase_table import phase_table
from harness.report.tuning_table import tuning_blocks
from harness.report.verdict_blocks import verdict_blocks
from harness.report.walk_blocks import ceiling_blocks, v1_blocks
from harness.report.io_tables import index_residency_table, io_table
from harness.report.summary import bounds_text, kills_table
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
    if _at_target(data.cells):
        return Block("p", f"Measured at the scale and for the duration its criterion asks (scenarios/decision.yaml): "
                          f"scale {', '.join(f'{s:g}' for s in scales)}, {', '.join(f'{s:g}' for s in secs)} s measured.")
    return Block("caveat", f"measured at scale {', '.join(f'{s:g}' for s in scales)} of mendoza 1x (800K entities) "
                           f"with {', '.join(f'{s:g}' for s in secs)} s measured; the reference's criterion is p99 "
                           "< 500 ms at 5x for an hour. Compare data-to-memory ratios, not sizes.")


def _at_target(cells: list[CellData]) -> bool:
    """Whether every cell ran at the scale and for the hour its scenario's criterion targets (a scenario no
    criterion names: the reference's headline, the first criterion's)."""
    from harness.scenario.decision import load_decision
    criteria = load_decision().criteria
    return all(next((k.target for k in criteria if k.scenario == c.result.scenario), criteria[0].target)
               .met_by(c.result.scale, c.measure_s) for c in cells)


def scenario_table(data: ReportData, scenario: str) -> tuple[Block, list[str]]:
    headers = ["engine", "memory (policy: engine cache)", "start", "durability", "scale", "status", "p50 ms",
               "p99 ms", "p99's one-sided 95% bounds", "max ms", "rows/s", "bloat", "WAL peak", "checkpoints", "harness inside the limit",
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
            noisy.append(f"{scenario} {c.name} {c.mem_label}: p99 spread {pct(st['p99']['spread'])}, "
                         f"rows/s spread {pct(st['rows_per_s']['spread'])} over {len(group)} repeats")
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
                     _f(p99), (bounds_text(c.commit_ms.p99_bounds, c.commit_ms.count) or "-") if len(group) == 1 else "-",
                     _f(worst), _f(rate, 0), _f(m.bloat_ratio, 2),
                     format_bytes(m.wal_bytes_max), m.checkpoints if m.checkpoints is not None else "-",
                     harness_share(c), rep, thresholds_text(c)])
    return Block("table", headers=headers, rows=rows), noisy


def answer_plots(data: ReportData) -> list[Block]:
    """Each level's answer, its first criterion's cell minute by minute (acknowledgement, apply lag, busy share)."""
    by_name = {f"{c.scenario}/{c.run_dir.name}": c for c in data.cells}
    out = []
    for a in data.meta.answers:
        cell = answer_cell(data.meta, a)
        c = next((by_name[n] for n in (cell.cells if cell is not None else []) if n in by_name), None)
        if c is not None and c.blocks():
            out.append(plots_block(plots.answer_over_minutes(c), f"answer-{a.mem}",
                                   f"The answer at {a.mem}, minute by minute: {c.label}."))
    return out


def build(data: ReportData) -> list[Block]:
    title = {"verdict": "arkbench verdict", "sweep": "arkbench sweep", "run": "arkbench run",
             "ceiling": "arkbench ceiling", "v1": "arkbench V1 go/no-go", "knee": "arkbench knee",
             "curve": "arkbench degradation curve"}[data.kind]
    doc = [first_line(data), Block("h1", f"{title}: {data.dir.name}")]
    if data.kind == "v1":
        return doc + v1_blocks(data.meta)
    if data.kind == "verdict":
        doc += verdict_blocks(data.meta) + answer_plots(data) + tuning_blocks(data.meta, data.cells) + \
            verdict_knee_blocks(data.dir)
    if not data.cells:
        doc.append(Block("alarm", "no cell of this directory has a result yet."))
        return doc
    if data.kind == "ceiling":
        doc += ceiling_blocks(data)
    if data.kind == "knee":
        doc += knee_blocks(data)
    if data.kind == "curve":
        doc += curve_blocks(data.meta)
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
        body += _over_time(scenario, cells)
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
                         "-", "-", "-", "-", thresholds_text(c)])
            continue
        rows.append([c.name, c.mem_label, durability_text(c.result.plan), x.survives, "yes" if x.promised else "no",
                     c.status + (f" ({c.result.error})" if c.result.error else ""),
                     f"{len(x.kills)} ({', '.join(f'{k} {n}' for k, n in sorted(x.landed.items()))})",
                     x.acknowledged_blocks, x.lost_acked_blocks, x.unacked_blocks, x.corrupt_restarts,
                     _f(x.recovery_s.p50, 3), _f(x.recovery_s.max, 3), thresholds_text(c)])
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


def _over_time(scenario: str, cells: list) -> list[Block]:
    """Each cell's latency over time, and a design's deciding figures per minute: an hour's trend at a glance."""
    out = [Block("h3", "Commit latency over time")]
    for c in cells:
        out.append(plots_block(plots.latency_over_time(c), f"{scenario}-{c.run_dir.name}-latency",
                               f"{c.label}: every measured block, checkpoint events, WAL size."))
        rows = minutes(c)           # read once, drawn and tabled: an hour's read.hlog holds ~3,700 intervals
        if any(r.lag_p99_blocks is not None or r.read_p99_ms is not None for r in rows):
            table = minutes_table(c, rows)
            out += [plots_block(plots.answer_over_minutes(c, rows), f"{scenario}-{c.run_dir.name}-minutes",
                                f"{c.label}, minute by minute: the acknowledgement's p99 and, where the cell has "
                                "them, the queryable's, the reads', the apply lag and the applier's busy share."),
                    Block("p", f"{c.label}, minute by minute (each figure that minute's own):"), table]
    return out
