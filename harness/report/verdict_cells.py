"""A verdict's cost, said beside its answer: the estimate it printed before its first cell against the cells it ran
and their minutes, every cell with its label (candidate, confirmation, screened, control), and the two implication
controls with whether each agreed (harness/walks/verdict/estimate.py, controls.py)."""
from __future__ import annotations

from harness.environment import utc_seconds_between
from harness.report.blocks import Block


def minutes(rec) -> float | None:
    """A cell's wall minutes, from its record's start and end (a state it built included)."""
    if not (rec.started_utc and rec.finished_utc):
        return None
    return utc_seconds_between(rec.started_utc, rec.finished_utc) / 60


def cost_blocks(meta) -> list[Block]:
    est, cells = meta.estimate, meta.cells
    if est is None and not cells:
        return []
    spent = [m for m in (minutes(c) for c in cells) if m is not None]
    out = [Block("h2", "What the walk cost")]
    if est is not None:
        out.append(Block("p", f"Expected before the first cell: {est.cells} cells, about {est.minutes:.0f} min "
                              f"({est.state_minutes:.0f} min of them building states). Ran: {len(cells)} cells, "
                              f"{sum(spent):.0f} min in cells"
                              + (f", {meta.walk_s / 60:.0f} min in all" if meta.walk_s is not None else "")
                              + f". The estimate's basis: {est.basis}."
                              + (f" Its expected answers: {'; '.join(est.path)}." if est.path else "")
                              + (f" Not foreseen: {est.not_foreseen()}." if est.not_foreseen() else "")))
    out += control_blocks(meta)
    if cells:
        rows = [[c.label or "-", c.engine, c.variant or "its own settings", c.scenario, c.mem or "-", c.status or c.state,
                 "-" if minutes(c) is None else f"{minutes(c):.1f}"] for c in cells]
        out += [Block("p", "Every cell the walk ran, in order. A candidate could be the answer (every criterion in "
                           "full, a close call run again: its confirmations); a screen or a control runs once."),
                Block("table", headers=["label", "engine", "option or design", "criterion", "MEM", "outcome", "min"],
                      rows=rows)]
    return out


def control_blocks(meta) -> list[Block]:
    items = []
    for c in meta.implication_controls:
        if c.note:
            items.append(f"{c.direction}: {c.note}")
            continue
        verdict = "agreed" if c.agreed else "DISAGREED: the assumption did not hold here" if c.agreed is False \
            else "no measurement"
        items.append(f"{c.direction}: {c.engine}{' with ' + c.what if c.what else ''} at {c.mem}, implied "
                     f"{c.expected} by its outcome at {c.implied_from}, measured once: {c.outcome}; {verdict}")
    return [Block("p", "Implication controls: one implied cell each way, measured after all:"),
            Block("list", items=items)] if items else []
