"""Close calls run again (issue 56): a cell that passed with a deciding figure near its line is measured until
decision.yaml's `confirm.runs` runs in all, and its outcome is stable (every run agrees) or unstable (k of
n passed), which is reported with its runs and is never an answer. A close failure is named here too; the walk
runs it once (walk.py: no run after a failure could make it an answer). A pass whose trend, carried to its
criterion's hour, reaches the band is a close call too: the hour the criterion asks about is where it lands."""
from __future__ import annotations

from harness.results import CellRecord
from harness.scenario.decision import Confirm
from harness.scenario.thresholds import METRICS, parse_threshold


def _near(t, bands: dict[str, float]) -> str | None:
    """Why one threshold's figure could land on the other side of its line in another run, else None."""
    if t.value is None or t.early_abort:            # an early abort: it could no longer pass, whatever came next
        return None
    th = parse_threshold(t.expr)
    if t.judged == "undecided":
        lo, hi = t.bounds or (None, None)
        worst = hi if th.op in ("<", "<=") else lo
        if worst is None:       # not near the line: too few values for the percentile's bound on the wrong side
            return f"{t.expr}: {t.value:g}, too few values for a 95% bound on its far side: not shown to hold"
        return f"{t.expr}: {t.value:g}, its one-sided 95% bounds [{lo if lo is not None else '-'}, " \
               f"{hi if hi is not None else '-'}] straddle the line"
    band = bands.get(METRICS[th.metric])
    if th.met_in_full(t.value):         # every offered row applied but a block at the window's end: no margin
        return None
    if band and th.limit and abs(t.value - th.limit) <= band * abs(th.limit):
        return f"{t.expr}: {t.value:g}, within {band:.0%} of the line"
    tr = t.trend          # a pass whose fitted line reaches the band by the criterion's hour (its slope not decided)
    if t.passed and band and th.limit and th.op in ("<", "<=") and tr is not None and tr.at_horizon is not None \
            and tr.horizon_s and tr.at_horizon >= (1 - band) * th.limit:
        return (f"{t.expr}: {t.value:g}, its trend carries it to {tr.at_horizon:,.4g} by {tr.horizon_s / 60:g} min, "
                f"within {band:.0%} of the line or past it")
    return None


def close_call(rec: CellRecord, confirm: Confirm | None) -> str | None:
    """Why a cell is a close call, else None: a pass any of whose figures is near its line, or a failure
    every missed figure of which is (one far miss decides it). An error or an OOM is no figure."""
    if confirm is None or rec.status not in ("passed", "failed") or not rec.thresholds:
        return None
    deciding = rec.thresholds if rec.status == "passed" else [t for t in rec.thresholds if not t.passed]
    near = [_near(t, confirm.bands) for t in deciding]
    if rec.status == "passed":
        return next((n for n in near if n), None)
    return "; ".join(near) if near and all(near) else None


def runs_outcome(records: list[CellRecord]) -> str:
    """Over one cell's runs: passed | failed | unstable | error."""
    if any(r.status not in ("passed", "failed", "oom") for r in records):
        return "error"
    passed = sum(r.status == "passed" for r in records)
    return "passed" if passed == len(records) else "failed" if passed == 0 else "unstable"


def runs_text(records: list[CellRecord]) -> str:
    """'passed 3 of 3', 'failed 3 of 3', 'unstable (1 of 3 passed)'."""
    n, passed = len(records), sum(r.status == "passed" for r in records)
    outcome = runs_outcome(records)
    return f"unstable ({passed} of {n} passed)" if outcome == "unstable" else f"{outcome} {max(passed, n - passed)} of {n}"
