"""The sections of the two read-rate walks: a ceiling search (its sentence, steps and curve) and V1's go/no-go
(its frontier of write rate against read rate)."""
from __future__ import annotations

from harness.report import plots
from harness.report.blocks import Block, _f, plots_block
from harness.report.cell_tables import pct, reads_by_kind_table
from harness.report.collect import ReportData
from harness.scenario.thresholds import parse_threshold
from harness.units import format_bytes


def ceiling_blocks(data: ReportData) -> list[Block]:
    """The sentence, every step, the curve with its knee, and the knee's reads by query kind."""
    meta = data.meta
    doc = [Block("verdict", meta.get("sentence") or "the search has not finished; run the same make ceiling "
                                                   "again to resume it.")]
    doc.append(Block("p", f"Writes: {_writes_text(meta)}. Reads: {meta['readers']} reader(s)"
                          f"{' (one per core here)' if meta.get('readers_auto') else ''}, mix "
                          f"{meta['mix']}. A step passes when its run passes: " + "; ".join(meta["criteria"])
                          + ". Every step starts from the same cloned state; the knee is run twice."))
    if meta.get("threshold_results"):
        doc.append(Block("list", items=[f"{'PASS' if t['passed'] else 'FAIL'} {t['expr']} (measured {t['value']})"
                                        for t in meta["threshold_results"]]))
    rows = [[i, f"{s['offered_qps']:,.0f}", s["repeat"], s["status"], _f(s["achieved_qps"]), _f(s["read_p50_ms"], 3),
             _f(s["read_p99_ms"], 3), _f(s["write_p99_ms"]), _f(s["write_rows_per_s"], 0),
             pct(s.get("apply_busy_share")), format_bytes(s["db_bytes"]), s["reads_empty"], s.get("reads_late", "-"),
             "; ".join(s.get("failed_on") or []) or "-"] for i, s in enumerate(meta["steps"], 1)]
    doc += [Block("h2", "Steps"), Block("table", headers=["step", "offered QPS", "run", "status", "achieved QPS",
                                                         "read p50 ms", "read p99 ms", "write p99 ms", "rows/s written",
                                                         "applier busy", "db size at end", "empty reads", "late reads",
                                                         "failed on"],
                                        rows=rows)]
    knee = (meta.get("knee") or {}).get("knee_read_qps")
    doc.append(plots_block(plots.ceiling_curve(meta["steps"], knee, _curve_limits(meta["criteria"]),
                                               f"{meta['engine']}: p99 against the offered read rate"),
                           "ceiling-curve", "Left: read and write p99 per step (open markers: failed steps), the "
                           "criteria dotted, the knee in green. Right: the share of the offered rate read, and its "
                           "criterion."))
    at_knee = [c for c in data.cells if knee and c.result.plan.get("readers", {}).get("rate_per_s") == knee]
    if (t := reads_by_kind_table(at_knee)) is not None:
        doc += [Block("h2", "Reads at the knee, by query kind"), t]
    return doc


def _curve_limits(criteria: list[str]) -> dict[str, float]:
    """The lines a ceiling's curve draws: the tightest write and read p99 bounds and the read-rate floor."""
    parsed = [parse_threshold(t) for t in criteria]
    out = {}
    for key, metric, pick in (("write_ms", "commit_ms", min), ("read_ms", "read_ms", min),
                              ("read_share_pct", "reads", max)):
        found = [t.limit for t in parsed if t.metric == metric and (t.of_offered or metric != "reads")]
        if found:
            out[key] = pick(found)
    return out


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
             "-" if p.get("readers_cpu_share") is None else f"{p['readers_cpu_share']:.0%}",
             f"{p.get('answers_checked', 0) - p.get('answers_wrong', 0):,} / {p.get('answers_checked', 0):,}",
             p["steps"], p["search"]] for p in meta["frontier"]]
    doc += [Block("h2", "Frontier"),
            Block("p", "Per write rate, the knee's figures (the worse of its two runs); where no read rate passed, "
                       "those of the lowest one tried, which failed."),
            Block("table", headers=["writes offered (rows/s)", "reads/s", "read p99 ms", "write p99 ms",
                                    "rows/s achieved", "bounded by", "readers' CPU (of every core)",
                                    "answers right / checked", "steps",
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
