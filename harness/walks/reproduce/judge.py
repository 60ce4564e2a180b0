"""A reproduction's judgement: each figure beside the published one, raw and per the two sittings' speed (their
reference cells), flagged "moved" past the spread between sittings; each level agreed, disagreed or disturbed."""
from __future__ import annotations

import statistics

from harness.results.reproduce import Figure, LevelAgreement, Target


def sitting_figure(refs) -> float | None:
    """A sitting's speed: the median of its reference cells' figures (service p50, ms)."""
    figs = [r.service_p50_ms for r in refs if r.service_p50_ms]
    return statistics.median(figs) if figs else None


def speed(now, then) -> float | None:
    """This sitting's reference figure over the published sitting's: 2.0 where this sitting is twice as slow."""
    a, b = sitting_figure(now), sitting_figure(then)
    return round(a / b, 3) if a and b else None


def spread(within: float, now, then) -> tuple[float, str]:
    """How far a figure normalised by the sittings' speed may move and still be the same: the within-sitting band
    (decision.yaml's reference.within_sitting), widened to how far either sitting's own reference cells moved."""
    out, why = within, f"{within:g}, the within-sitting band"
    for name, refs in (("this sitting's", now), ("the published sitting's", then)):
        figs = [r.service_p50_ms for r in refs if r.service_p50_ms]
        if len(figs) > 1 and max(figs) / min(figs) > out:
            out, why = max(figs) / min(figs), f"{max(figs) / min(figs):.2f}, {name} reference cells' own spread"
    return round(out, 3), why


def compared(fig: Figure, sitting_speed: float | None, band: float) -> Figure:
    """A figure's ratios: raw, and for a time divided by the sittings' speed; moved outside [1/band, band]."""
    if not fig.published or fig.reproduced is None:
        return fig
    raw = fig.reproduced / fig.published
    norm = raw / sitting_speed if fig.timed and sitting_speed else raw if not fig.timed else None
    judged = norm if norm is not None else raw
    return fig.model_copy(update={"raw": round(raw, 3), "normalised": round(norm, 3) if norm is not None else None,
                                  "moved": not (1 / band <= judged <= band)})


def level(mem: str, answer: str, targets: list[Target]) -> LevelAgreement:
    """agreed: every target's label as published; disagreed: which changed, on which figure; disturbed: a cell
    measured beside other load twice (the walk's rule); unmeasured: a cell in error."""
    moved = [f"{t.says} at {t.mem}: {f.name} x{f.normalised if f.normalised is not None else f.raw:g}"
             for t in targets for f in t.figures if f.moved]
    for bad, outcome in (("disturbed", "disturbed"), ("error", "unmeasured")):
        hit = next((t for t in targets if t.reproduced == bad), None)
        if hit is not None:
            why = next((c.error for c in hit.cells if c.error), None) or bad
            return LevelAgreement(mem=mem, answer=answer, outcome=outcome, moved=moved,
                                  says=f"{hit.says} at {hit.mem}: {why}")
    changed = [t for t in targets if t.reproduced != t.published]
    if not targets:
        return LevelAgreement(mem=mem, answer=answer, outcome="unmeasured", says="nothing to measure at this level")
    if changed:
        return LevelAgreement(mem=mem, answer=answer, outcome="disagreed", moved=moved, says="; ".join(
            f"{t.role}, {t.says} at {t.mem}: {t.published}, now {t.reproduced}"
            + (f" (on {t.changed_on})" if t.changed_on else "") for t in changed))
    return LevelAgreement(mem=mem, answer=answer, outcome="agreed", moved=moved, says="; ".join(
        f"{t.role}, {t.says} at {t.mem}: {t.reproduced}" for t in targets))


def exit_code(levels: list[LevelAgreement]) -> int:
    """0 every level agreed; 3 one disturbed or unmeasured (it answers nothing); else 1 where one disagreed."""
    if any(x.outcome in ("disturbed", "unmeasured") for x in levels):
        return 3
    return 1 if any(x.outcome == "disagreed" for x in levels) else 0
