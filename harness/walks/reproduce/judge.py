"""A reproduction's judgement: each figure beside the published one, raw (a figure near zero by its distance to its
line), flagged "moved" past the spread between sittings; each level agreed, disagreed or disturbed on what its answer
measured (an alternative that moved is said, never the level's disagreement)."""
from __future__ import annotations

import statistics

from harness.results.reproduce import Figure, LevelAgreement, Target
from harness.scenario.thresholds import parse_threshold


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


NEAR_ZERO = 0.1     # a signed figure within this share of its line's limit of zero is judged by its distance to it


def _signed_limit(fig: Figure) -> float | None:
    """The line of the threshold a figure is named after, where the figure is signed and may sit at zero (a trend:
    'p99_5x: last(apply_lag_growth_blocks) < 2': 2) or changed sign; None for a figure a ratio judges (a latency)."""
    try:
        th = parse_threshold(fig.name.rsplit(": ", 1)[-1])
    except ValueError:
        return None
    signed = "growth" in th.metric or fig.published * fig.reproduced <= 0
    return abs(th.limit) or None if signed else None


def compared(fig: Figure, sitting_speed: float | None, band: float) -> Figure:
    """A figure's ratio, raw: a time is not divided by the sittings' speed, which the record refutes for the figures
    that decide (the reference moved 1.89x where the design's busy share moved 1.53x and its apply p50 1.56x). Moved:
    outside [1/band, band]; a signed figure near zero (a trend, or one whose sign flipped) by how far it moved as a
    share of its line instead, so 0.02 -> -0.019 against a line of 2 is not 'x-0.95'."""
    if fig.published is None or fig.reproduced is None:
        return fig
    limit = _signed_limit(fig)
    if limit and max(abs(fig.published), abs(fig.reproduced)) < NEAR_ZERO * limit:
        return fig.model_copy(update={"raw": None, "normalised": None,
                                      "moved": abs(fig.reproduced - fig.published) / limit > band - 1})
    if not fig.published:
        return fig
    raw = fig.reproduced / fig.published
    return fig.model_copy(update={"raw": round(raw, 3), "normalised": None, "moved": not (1 / band <= raw <= band)})


def level(mem: str, answer: str, targets: list[Target]) -> LevelAgreement:
    """agreed: the answer's (and its control's) label as published; disagreed: which changed, on which figure;
    disturbed: a cell measured beside other load twice (the walk's rule); unmeasured: a cell in error. An alternative
    whose label changed is said ("alternative moved"), and is no disagreement: the answer did not change."""
    moved = [f"{t.says} at {t.mem}: {f.name} " + (f"x{f.raw:g}" if f.raw is not None else
                                                  f"{f.published:g} -> {f.reproduced:g}")
             for t in targets for f in t.figures if f.moved]
    for bad, outcome in (("disturbed", "disturbed"), ("error", "unmeasured")):
        hit = next((t for t in targets if t.reproduced == bad), None)
        if hit is not None:
            why = next((c.error for c in hit.cells if c.error), None) or bad
            return LevelAgreement(mem=mem, answer=answer, outcome=outcome, moved=moved,
                                  says=f"{hit.says} at {hit.mem}: {why}")
    said = lambda t: (f"{t.role}, {t.says} at {t.mem}: {t.published}, now {t.reproduced}"       # noqa: E731
                      + (f" (on {t.changed_on})" if t.changed_on else ""))
    changed = [t for t in targets if t.reproduced != t.published and t.role != "alternative"]
    alt = [f"alternative moved: {said(t)}" for t in targets if t.reproduced != t.published and t.role == "alternative"]
    if not targets:
        return LevelAgreement(mem=mem, answer=answer, outcome="unmeasured", says="nothing to measure at this level")
    if changed:
        return LevelAgreement(mem=mem, answer=answer, outcome="disagreed", moved=moved, alternative_moved=alt,
                              says="; ".join(said(t) for t in changed))
    return LevelAgreement(mem=mem, answer=answer, outcome="agreed", moved=moved, alternative_moved=alt,
                          says="; ".join([*(f"{t.role}, {t.says} at {t.mem}: {t.reproduced}" for t in targets
                                            if t.role != "alternative" or t.reproduced == t.published), *alt]))


def exit_code(levels: list[LevelAgreement]) -> int:
    """0 every level agreed; 3 one disturbed or unmeasured (it answers nothing); else 1 where one disagreed."""
    if any(x.outcome in ("disturbed", "unmeasured") for x in levels):
        return 3
    return 1 if any(x.outcome == "disagreed" for x in levels) else 0
