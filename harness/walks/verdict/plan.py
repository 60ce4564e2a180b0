"""What a verdict will run, before it runs anything: the memory levels (largest first), each criterion's
thresholds as this profile can judge them, and the caveats it must print first (the disk it needs: cell_states)."""
from __future__ import annotations

from dataclasses import dataclass

from harness.errors import ConfigError
from harness.results import CellRecord
from harness.scenario.decision import Criterion, DecisionTree
from harness.scenario.thresholds import parse_threshold
from harness.units import format_bytes, parse_size_bytes

MONOTONICITY = ("an engine that fails a criterion at a memory limit is taken to fail it at every smaller one "
                "(less memory never makes a database faster), so those cells are marked implied, not run "
                "(ALL_CELLS=1 runs them)")


@dataclass(frozen=True)
class CriterionPlan:
    criterion: Criterion
    thresholds: tuple[str, ...]          # as judged in this profile (a window scaled to the phase)
    notes: tuple[str, ...] = ()          # each scaling, said in the report


def order_mems(mems: list[str]) -> list[str]:
    """Largest first: a failure there implies one at every smaller limit."""
    try:
        return sorted(mems, key=parse_size_bytes, reverse=True)
    except ValueError as e:
        raise ConfigError(f"MEMS: {e}") from None


def at_reference(mem: str, tree: DecisionTree, profile_scale: float) -> str | None:
    """The same data-to-memory ratio at the first criterion's scale (1240m at 1x ≈ 6 GiB at 5x)."""
    target = tree.criteria[0].target.scale
    if not profile_scale or target == profile_scale:
        return None
    return f"≈ {format_bytes(parse_size_bytes(mem) * target / profile_scale)} at {target:g}x"


def criterion_plans(tree: DecisionTree, measure_s_of) -> list[CriterionPlan]:
    """A windowed threshold whose window is longer than the profile's measured phase would never be
    evaluable: its window is scaled down to half the phase (so the phase holds complete windows that
    slide), explicitly, and the report says so. The ratio and full profiles measure longer than the
    reference's windows, so they keep them."""
    out = []
    for crit in tree.criteria:
        measure_s = measure_s_of(crit.scenario)
        exprs, notes = [], []
        for expr in crit.thresholds:
            t = parse_threshold(expr)
            if t.window_s and t.window_s > measure_s:
                scaled = expr.replace(f"over {_window_text(expr)}", f"over {max(1, int(measure_s // 2))}s")
                notes.append(f"{crit.scenario}: '{expr}' judged as '{scaled}': the profile measures "
                             f"{measure_s:g} s, shorter than the {t.window_s:g} s window")
                expr = scaled
            exprs.append(expr)
        out.append(CriterionPlan(crit, tuple(exprs), tuple(notes)))
    return out


def _window_text(expr: str) -> str:
    return expr.split(" over ", 1)[1].split()[0]


def caveats(tree: DecisionTree, records: list[CellRecord], memory_basis: str | None = None,
            notes: list[str] = ()) -> list[str]:
    """Where the cells ran smaller or shorter than the criteria ask: said first, never buried."""
    out = ([memory_basis] if memory_basis else []) + list(notes)
    for crit in tree.criteria:
        cells = [r for r in records if r.scenario == crit.scenario and r.state == "complete"]
        if not cells:
            continue
        scale = max(r.scale for r in cells)
        measure_s = max(r.measure_s or 0 for r in cells)
        want_s = crit.target.measure_s
        if not crit.target.met_by(scale, measure_s):
            out.append(f"{crit.scenario} ran at scale {scale:g}" + (f" for {measure_s:g} s measured" if want_s else "")
                       + f"; the criterion asks for scale {crit.target.scale:g}" + (f" for {want_s:g} s" if want_s else "")
                       + ("; every figure that can accumulate over a phase of 300 s or more was carried to that hour by "
                          "its trend, failing where it would cross its line by then" if want_s and measure_s < want_s else ""))
    return out
