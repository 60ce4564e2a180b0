"""The answer as a table a team acts on in one read (issues 76, 84): per level, what to deploy, the deciding figure
closest to its line, its capacity, when a block is durable and when a reader sees it, and the sittings it held in,
each cell short (answer_rows, from verdict.json's typed answers); then every deciding figure, the headroom in full
and the alternatives (full_rows). The summary, report.md/html and a published README print these."""
from __future__ import annotations

from harness.results import CellRecord, LeafCell, VerdictFile
from harness.results.answers import answer_source
from harness.results.headroom import fragile
from harness.scenario.thresholds import parse_threshold

HEADERS = ["level", "do this", "binding figure (line; margin)", "capacity", "durable / queryable p99", "held"]
FULL_HEADERS = ["level", "answer", "deciding figures (line; margin)", "headroom", "readers see the index",
                "alternatives"]

def _num(v: float) -> str:
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.4g}"


def margin(t) -> str:
    """'12.6 (< 500; 97% to spare)': a figure beside its line and how far inside (or past) it is."""
    th = parse_threshold(t.expr)
    name = f"{th.agg}({th.metric})"
    if t.value is None:
        return f"{name} - ({th.op} {_num(th.limit)})"
    room = th.room(t.value)
    if room is None:
        return f"{name} {_num(t.value)} ({th.op} {_num(th.limit)})"
    side = "to spare" if room >= 0 else "over"
    return f"{name} {_num(t.value)} ({th.op} {_num(th.limit)}; {abs(room):.0%} {side})"


def _records(v: VerdictFile, names: list[str]) -> list[CellRecord]:
    by = {f"{r.scenario}/{r.dir}": r for r in v.cells}
    return [by[n] for n in names if n in by]


def answer_cell(v: VerdictFile, a):
    """The matrix or leaf cell the answer stands on (results.answers.answer_source)."""
    return answer_source(a, v.matrix, v.leaf)


def _alternatives(v: VerdictFile, a, chosen) -> str:
    """What else ran at the level: each failure or pass today only with its diagnosis or headroom, in walk order."""
    out = []
    for c in [*v.matrix, *v.leaf]:
        if c.mem != a.mem or c is chosen or c.outcome in ("not run", "implied") or \
                (isinstance(c, LeafCell) and c.implied_from):
            continue
        name = f"{c.engine}: {c.design}" if isinstance(c, LeafCell) else \
            c.engine + (f" ({c.tuned_with})" if c.tuned_with else "")
        said = c.headroom.says() if fragile(c) else (c.diagnosis or c.outcome)
        out.append(f"{name}: {said.split('; ')[0]}")
    out += [f"trade-off {t}" for t in a.trade_offs]
    return "; ".join(out) or "-"


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v:,.0f} ms" if v >= 10 else f"{v:.1f} ms"


def _capacity_cell(a) -> str:
    """The capacity on record and whether it holds: past the walk's line where the walk is the whole record, and
    where later sittings measured it, in each of them against its own line ("held" k of n). A record's smallest
    capacity can come from a sitting whose line it fell short of (12-06's 1.18x, under that sitting's 1.2x): the walk's
    line beside it would say it holds."""
    if a.capacity is None:
        return a.headroom.says() if a.headroom else "-"
    figure = f"{'≥ ' if a.capacity_at_least else ''}{a.capacity:.2f}x"
    if a.headroom is None:
        return figure
    k, n = (int(x) for x in a.held.split(" of ")) if a.held else (None, None)
    if n is not None and n > 1:
        word = "holds in every sitting" if k == n else f"short of its line or failed in {n - k} of {n} sittings"
    else:
        word = f"{'holds' if a.headroom.passed else 'passes today only'} (line {a.headroom.multiple:g}x)"
    return f"{figure} the load ({a.capacity_sitting}); {word}"


def answer_rows(v: VerdictFile) -> list[list[str]]:
    """One row per level from its typed answer (verdict v9): what to do, the figure closest to its line, the capacity
    with its sitting, when a block is durable and when a reader sees it, the sittings it held in. Short cells: the
    full figures are full_rows'."""
    rows = []
    for a in v.answers:
        what = (a.decision if a.status != "inconclusive" else f"inconclusive: {a.why}") + (" (fragile)" if a.fragile
                                                                                          else "")
        if a.measured_at and a.measured_at != a.mem:
            what += f" (measured at {a.measured_at}, implied here)"
        cap = _capacity_cell(a)
        times = f"{_ms(a.durable_p99_ms)} / {_ms(a.queryable_p99_ms)}" if a.durable_p99_ms is not None else "-"
        rows.append([a.mem + (f" ({a.at_reference})" if a.at_reference else ""), what, a.binding or "-", cap, times,
                     a.held or "-"])
    return rows


def full_rows(v: VerdictFile) -> list[list[str]]:
    """Every deciding figure beside its line, the headroom in full, the readers, the alternatives: report.md's."""
    rows = []
    for a in v.answers:
        cell = answer_cell(v, a)
        recs = _records(v, cell.cells) if cell is not None else []
        figures = "; ".join(f"{r.scenario}: " + ", ".join(margin(t) for t in r.thresholds) for r in recs
                            if r.label in (None, "candidate")) or "-"
        what = (a.decision if a.status != "inconclusive" else f"inconclusive: {a.why}") + (" (fragile)" if a.fragile
                                                                                          else "")
        lag = getattr(cell, "lag_p99_ms", None)
        readers = (f"p99 {a.queryable_p99_ms:,.0f} ms after its due time" if a.queryable_p99_ms is not None else
                   f"p99 {lag:,.0f} ms after the acknowledgement" if lag is not None else
                   "as committed" if a.engine else "-")
        room = f"{a.headroom.says()}; {a.headroom.basis}" if a.headroom else \
            ("no reference cell" if v.reference == [] else "-")
        rows.append([a.mem + (f" ({a.at_reference})" if a.at_reference else ""), what, figures, room, readers,
                     _alternatives(v, a, cell)])
    return rows


def alternative_line(v: VerdictFile) -> str:
    """How far the closest alternative that failed is (verdict v9), one line."""
    return (v.alternative.says()[0].upper() + v.alternative.says()[1:] + ".") if v.alternative else ""


def readers_line(v: VerdictFile) -> str:
    """The stricter readers' answer per level, one line (verdict v9's readers)."""
    if not v.readers:
        return ""
    line = v.readers[0].line_ms
    parts = [f"{r.mem}: {r.what} (p99 {r.queryable_p99_ms:,.0f} ms)" if r.status == "answered" else
             f"{r.mem}: none" + (f" (closest {r.closest}, p99 {r.closest_ms:,.0f} ms)" if r.closest else "")
             for r in v.readers]
    return f"For readers who must see a block within {line:,.0f} ms of its due time: " + "; ".join(parts) + "."


def as_markdown(v: VerdictFile, full: bool = False) -> list[str]:
    """The table as markdown lines (a published README's: the short one; report.md's: both)."""
    esc = lambda s: s.replace("|", "\\|")          # noqa: E731
    headers, rows = (FULL_HEADERS, full_rows(v)) if full else (HEADERS, answer_rows(v))
    return ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers),
            *["| " + " | ".join(esc(x) for x in row) + " |" for row in rows]]
