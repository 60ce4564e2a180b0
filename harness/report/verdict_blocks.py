"""A verdict's own sections: the answer per memory level and the engine × MEM matrix first, then the path
through the decision tree (each step's failing thresholds, its control), then the library each engine ran."""
from __future__ import annotations

from harness.report.answer_table import (FULL_HEADERS, HEADERS, alternative_line, answer_rows, full_rows,
                                         readers_line)
from harness.report.blocks import Block, _f
from harness.report.verdict_cells import cost_blocks
from harness.results.headroom import fragile


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
            out.append(Block("p", f"Control ({c.why}): {c.engine}{_with(c.set)}"
                                  f"{''.join(f' and {o}' for o in c.options)} on the same cells: "
                                  f"{c.outcome.upper()}."))
            out.append(Block("list", items=[f"{x.scenario} @ {x.mem}: p99 {_f(x.p99_ms)} ms, {x.status}"
                                            for x in c.cells]))
    return out + cost_blocks(meta) + library_versions_blocks(meta)


def _cell_variant(rec) -> str:
    """A walk's cell record as the path names it: its option or SET items, and its repeat."""
    return (f" [{rec.variant}]" if rec.variant else "") + (f" #{rec.repeat}" if rec.repeat > 1 else "")


_OUTCOME = {"pass": "✔ pass", "fail": "✘ fail", "unstable": "? unstable", "implied": "✘ implied", "error": "! error",
            "not run": "–"}


def _outcome(c) -> str:
    """A matrix or leaf cell's mark: a pass today only is no pass to act on."""
    return "~ today only" if fragile(c) else _OUTCOME[c.outcome]


def answer_blocks(meta) -> list[Block]:
    """The per-MEM answers and the engine × MEM matrix, first: what the reader came for."""
    if not meta.answers:                      # a verdict.json before version 3: one answer for every MEM
        return [Block("verdict", f"Verdict: {meta.verdict.decision}")]
    items = [f"at {a.mem}{f' ({a.at_reference})' if a.at_reference else ''}: {a.in_full()}" for a in meta.answers]
    engines = list(dict.fromkeys(c.engine for c in meta.matrix))
    cell = {(c.engine, c.mem): c for c in meta.matrix}
    rows = [[e, *(_outcome(cell[(e, m)]) + (f" (tuned: {cell[(e, m)].tuned_with})" if cell[(e, m)].tuned_with
                                             else "") if (e, m) in cell else "–" for m in meta.mems)]
            for e in engines]
    diag = [f"{e} @ {m}: {cell[(e, m)].diagnosis or cell[(e, m)].headroom.says()}" for e in engines
            for m in meta.mems if (e, m) in cell and (cell[(e, m)].diagnosis or fragile(cell[(e, m)]))]
    close = [f"{e} @ {m}: {'; '.join(cell[(e, m)].runs)} ({', '.join(cell[(e, m)].cells)})" for e in engines
             for m in meta.mems if (e, m) in cell and cell[(e, m)].runs]
    return [Block("verdict", "Verdict per memory level"), Block("list", items=items),
            *([Block("p", "The answer, level by level" + (f", every cell at durability '{meta.durability}'" if
                                                          meta.durability else "") + ":"),
               Block("table", headers=HEADERS, rows=answer_rows(meta)),
               *([Block("p", readers_line(meta))] if meta.readers else []),
               *([Block("p", alternative_line(meta))] if meta.alternative else []),
               Block("p", "Every deciding figure beside its line, the headroom in full, the alternatives:"),
               Block("table", headers=FULL_HEADERS, rows=full_rows(meta))] if meta.answers else []),
            *([Block("p", "The sitting's reference cells (its speed, for the record: no capacity is a multiple of "
                          "it): "
                          + "; ".join(f"{r.at} {r.service_p50_ms:,.0f} ms" if r.service_p50_ms else f"{r.at} -"
                                      for r in meta.reference) + ".")] if meta.reference else []),
            Block("table", headers=["engine", *meta.mems], rows=rows),
            *([Block("p", "Why the cells that did not pass did not:"), Block("list", items=diag)] if diag else []),
            *([Block("p", "Close calls, run again (decision.yaml's confirm): an answer only where every run agreed:"),
               Block("list", items=close)] if close else []),
            *([Block("p", f"Implied cells rest on one assumption: {meta.monotonicity}.")]
              if meta.cells_implied and meta.monotonicity else []), *options_down_blocks(meta), *leaf_blocks(meta)]


def stops_passing(outcomes: list[tuple[str, str]]) -> str:
    """(MEM, pass | fail | -) largest first -> where it stops passing: the first failure after a pass."""
    seen_pass = False
    for mem, o in outcomes:
        if o == "fail" and seen_pass:
            return mem
        seen_pass |= o == "pass"
    return "passes at every limit it ran" if seen_pass else "never passed"


def options_down_blocks(meta) -> list[Block]:
    """Each option that passed for an engine, tried again below where the engine was implied failed: where it
    stops passing (issue 56)."""
    cell = {(c.engine, c.mem): c for c in meta.matrix}
    named = list(dict.fromkeys((c.engine, n) for c in meta.matrix for n in c.passed_options))
    if not named:
        return []
    rows = []
    for e, n in named:
        out = [(m, "pass" if n in cell[(e, m)].passed_options else "fail" if n in cell[(e, m)].tried else "-")
               if (e, m) in cell else (m, "-") for m in meta.mems]
        rows.append([f"{e}: {n}", *(o for _, o in out), stops_passing(out)])
    return [Block("p", "What passed above, tried below (where the engine's own settings were implied failed):"),
            Block("table", headers=["option", *meta.mems, "stops passing at"], rows=rows)]


def leaf_blocks(meta) -> list[Block]:
    """The tree's last leaf beside the engines' cells: each design at each MEM the steps left without an engine,
    with its acknowledgement p99, its apply lag and where its block went."""
    if not meta.leaf:
        return []
    designs = list(dict.fromkeys((c.engine, c.design) for c in meta.leaf))
    cell = {(c.engine, c.design, c.mem): c for c in meta.leaf}
    rows = [[f"{e}: {d}", *(_outcome(cell[(e, d, m)]) if (e, d, m) in cell else "–" for m in meta.mems),
             stops_passing([(m, cell[(e, d, m)].outcome if (e, d, m) in cell else "-") for m in meta.mems])]
            for e, d in designs]
    items = [f"{c.engine}: {c.says} @ {c.mem}: {c.outcome}"
             + (f" (implied by {c.implied_from}, not run)" if c.implied_from else "") + f"; p99 {_f(c.ack_p99_ms)} ms"
             + (f", apply lag p99 {_f(c.lag_p99_blocks)} blocks" if c.lag_p99_blocks is not None else "")
             + (f"; {c.headroom.says()}" if c.headroom else "")
             + (f"; {c.diagnosis}" if c.diagnosis else "") + (f"; {c.split}" if c.split else "")
             for c in meta.leaf if c.outcome != "implied" and (not c.implied_from or c.headroom_here)]
    return [Block("h2", "The last leaf, measured: designs where no engine passed"),
            Block("p", "Each design keeps every version and every acknowledged block; it is tried only at a limit where "
                       "no engine met the criteria, an engine's designs before the next engine's, cheapest first. A "
                       "design expected to pass is tried from the smallest limit up and a pass implies one at every "
                       "larger limit; any other from the largest down, a failure implying one below. Under a block "
                       "log the p99 is its acknowledgement's, from each block's due time."),
            Block("table", headers=["design", *meta.mems, "stops passing at"], rows=rows), Block("list", items=items)]


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
