"""What the walk's cells say: one line of diagnosis per cell that did not pass, each engine's outcome at each
memory level, and the tree's answer per level (the first engine that met every criterion there)."""
from __future__ import annotations

import csv
from pathlib import Path

from harness.errors import ENGINE_OOM, ENGINE_REFUSED
from harness.results import CellRecord, MatrixCell, MemAnswer, RunResult, VerdictStep, load_result
from harness.results.headroom import fragile
from harness.results.phases import describe
from harness.scenario.decision import DecisionTree, Step
from harness.scenario.thresholds import parse_threshold
from harness.units import format_bytes, format_figure
from harness.walks.verdict.confirm import runs_outcome, runs_text


def diagnose(rec: CellRecord, run_dir: Path) -> str | None:
    """Why a cell did not pass, from its own figures: saturation, stalls, memory, or what could not be judged."""
    if rec.status == "passed":
        return None
    r = load_result(run_dir / "result.json")
    if r is None or rec.status == "error":
        first = ((r.error if r else None) or rec.error or "no result").strip().splitlines()[0]
        return f"error: {first}"
    if rec.status == "oom":
        if r.error and r.error.startswith(ENGINE_OOM):
            cache = r.memory.engine_cache_bytes
            within = (f"its own limit {format_bytes(cache)} of MEM {format_bytes(r.memory.data_limit_bytes)}" if cache
                      else f"MEM {format_bytes(r.memory.data_limit_bytes)}")
            return f"memory: {ENGINE_OOM} within {within}: {r.error.split(': ', 2)[-1]}"
        return f"memory: OOM-killed at {format_bytes(r.memory.data_limit_bytes)}"
    if r.error and r.error.startswith(ENGINE_REFUSED):
        return f"refused: {r.error}"            # one line: errors.run_failure keeps the driver's first
    blind = [t for t in r.thresholds if t.error]
    if blind:
        return f"not evaluable: {blind[0].expr}: {blind[0].error.removeprefix('not evaluable: ')}"
    # a crash run's blocks are no latency measurement: its thresholds say why
    why = (None if r.crash else _saturated(r) or _rising(r) or _stalls(r, run_dir)) or "failed: " + "; ".join(
        f"{t.expr} measured {t.value:g}" for t in r.thresholds if not t.passed and t.value is not None)
    phases = None if r.crash else describe(r.metrics.block_phases)
    return f"{why}; {phases}" if phases else why


def _saturated(r: RunResult) -> str | None:
    if not r.saturated:
        return None
    m, stopped = r.metrics, _stopped(r)
    return (f"saturated: service p50 {m.service_time_ms.p50 / 1000:.2f} s > {r.block_interval_ms / 1000:g} s "
            f"cadence; committed {m.rows_per_s or 0:,.0f} of {m.offered_rows_per_s or 0:,.0f} rows/s; the queue grew "
            f"without bound{stopped}")


def _stopped(r: RunResult) -> str:
    n = (r.early_abort or {}).get("block")
    return f"; stopped early after {n} measured block{'s' if n != 1 else ''}" if n else ""


def _rising(r: RunResult) -> str | None:
    """A latency line held over the blocks measured but failed on its trend to the criterion's hour."""
    t = next((t for t in r.thresholds if not t.passed and t.trend is not None and t.trend.would_fail
              and t.value is not None and parse_threshold(t.expr).passes(t.value)), None)
    if t is None:
        return None
    tr = t.trend
    # a share (the applier's busy 0.8) needs its digits: ",.0f" printed "held (1) but rises +0/h [+0, +1]"
    num = lambda v: format_figure(v, "")                                    # noqa: E731
    sig = lambda v: ("+" if v >= 0 else "") + num(v)                        # noqa: E731
    return (f"rising: {t.expr} held over the blocks measured ({num(t.value)}) but rises {sig(tr.slope_per_h)}/h "
            f"[{sig(tr.ci95_per_h[0])}, {sig(tr.ci95_per_h[1])}], {num(tr.at_horizon)} by "
            f"{(tr.horizon_s or 0) / 60:g} min{_stopped(r)}")


def _stalls(r: RunResult, run_dir: Path) -> str | None:
    limits = [parse_threshold(t.expr).limit for t in r.thresholds
              if not t.passed and parse_threshold(t.expr).metric == "commit_ms"]
    if not limits:
        return None
    try:
        with open(run_dir / "blocks.csv") as f:
            commit_ms = [float(row["commit_ms"]) for row in csv.DictReader(f)]
    except (OSError, KeyError, ValueError):
        return None
    limit, m = min(limits), r.metrics
    over = sum(v > limit for v in commit_ms)
    stopped = _stopped(r)
    if (m.service_time_ms.p50 or 0) > limit:      # no stall: the typical block alone takes longer than allowed
        return (f"slow: service p50 {m.service_time_ms.p50:.0f} ms > {limit:g} ms, {_queue(r)}; "
                f"{over} of {len(commit_ms)} blocks over {limit:g} ms{stopped}")
    return (f"stalls: {over} of {len(commit_ms)} blocks over {limit:g} ms (service p50 "
            f"{m.service_time_ms.p50 or 0:.0f} ms, max {m.service_time_ms.max or 0:.0f} ms); {m.checkpoints} "
            f"checkpoints, WAL peak {format_bytes(m.wal_bytes_max)}{stopped}")


def _queue(r: RunResult) -> str:
    """Whether blocks waited behind one another: a commit p99 from the due time well past the service p99 is a
    queue, whatever the median block's service time says."""
    m = r.metrics
    commit, service = m.commit_latency_ms.p99 or 0, m.service_time_ms.p99 or 0
    if commit > 1.5 * service:
        return (f"and a queue behind it: commit p99 {commit:,.0f} ms from the due time against a service p99 of "
                f"{service:,.0f} ms; committed {m.rows_per_s or 0:,.0f} of {m.offered_rows_per_s or 0:,.0f} rows/s")
    return ("within the cadence (no queue)" if (m.service_time_ms.p50 or 0) <= r.block_interval_ms
            else "over the cadence")


def closeness(thresholds) -> float | None:
    """How far a cell is from its lines: the largest measured / limit among its '<' thresholds (below 1: passed; 1:
    on the line; the smallest among failures is the closest)."""
    ratios = [t.value / parse_threshold(t.expr).limit for t in thresholds if t.value is not None
              and parse_threshold(t.expr).op in ("<", "<=") and parse_threshold(t.expr).limit]
    return round(max(ratios), 3) if ratios else None


def by_criterion(records: list[CellRecord]) -> dict[tuple, list[CellRecord]]:
    """A criterion's cells (its repeats, or a close call's runs) together, in the order they ran."""
    out: dict[tuple, list[CellRecord]] = {}
    for r in records:
        out.setdefault((r.criterion, r.scenario), []).append(r)
    return out


def at_mem(records: list[CellRecord]) -> str:
    """An engine at one MEM: every criterion's runs passed; one criterion's all failed; one's disagreed
    (unstable: some passed, some not); or one errored (no measurement)."""
    outcomes = [runs_outcome(rs) for rs in by_criterion(records).values()]
    if "error" in outcomes:
        return "error"
    return ("fail" if not records or "failed" in outcomes else "unstable" if "unstable" in outcomes else "pass")


def runs_lines(records: list[CellRecord]) -> list[str]:
    """Each criterion that ran more than once: 'p99_5x: passed 3 of 3', 'reorg: unstable (1 of 3 passed)'."""
    return [f"{scenario}: {runs_text(rs)}" for (_, scenario), rs in by_criterion(records).items() if len(rs) > 1]


def judge_step(step: Step, records: list[CellRecord], outcomes: dict[str, str], implied: int) -> VerdictStep:
    """outcomes: MEM -> pass | fail | error, where this step was walked."""
    seen = set(outcomes.values())
    outcome = ("error" if seen == {"error"} else "passed" if seen == {"pass"} else "mixed" if "pass" in seen
               else "failed")
    errors = [f"{r.scenario}/{r.dir}: {r.error or 'no result'}" for r in records
              if r.status not in ("passed", "failed", "oom")]
    return VerdictStep(engine=step.engine, decision=step.decision, passed="pass" in seen, outcome=outcome,
                       errors=errors, cells=records, set=step.set, cells_unrun=implied)


def matrix_cell(engine: str, mem: str, outcome: str, records: list[CellRecord]) -> MatrixCell:
    worst = next((r for r in records if r.status != "passed"), None)
    return MatrixCell(engine=engine, mem=mem, outcome=outcome, cells=[f"{r.scenario}/{r.dir}" for r in records],
                      diagnosis=worst.diagnosis if worst else None, runs=runs_lines(records))


def answers(tree: DecisionTree, mems: list[str], matrix: list[MatrixCell], at_reference) -> list[MemAnswer]:
    """Per MEM, the first step that passed with headroom (or without a reference cell to ask it of); where none did,
    the first that passes today only, labelled fragile."""
    out = []
    for mem in mems:
        row = {c.engine: c for c in matrix if c.mem == mem}
        ans = MemAnswer(mem=mem, at_reference=at_reference(mem), status="none", decision=tree.otherwise)
        today = None
        for step in tree.steps:
            c = row.get(step.engine)
            if c is not None and (c.trade_offs or c.unscreened):
                ans = ans.model_copy(update={"trade_offs": ans.trade_offs + [
                    f"{step.engine}: {t}" for t in c.trade_offs + c.unscreened]})
            if c is not None and c.outcome == "unstable":      # never an answer: said, and the next engine walked
                ans = ans.model_copy(update={"unstable": ans.unstable + [f"{step.engine}: {'; '.join(c.runs)}"]})
            if c is not None and fragile(c):                   # the walk went on: an answer only if nothing holds
                today = today or (step, c)
                continue
            if c is None or c.outcome in ("fail", "implied", "unstable"):
                continue
            if c.outcome == "pass":
                ans = _answered(ans, step, c)
            elif c.outcome == "error":
                ans = ans.model_copy(update={"status": "inconclusive", "decision": "inconclusive",
                                             "why": f"{step.engine}: {', '.join(c.cells)}: {c.diagnosis}"})
            break
        if ans.status == "none" and today is not None:
            ans = _answered(ans, *today).model_copy(update={"fragile": True})
        out.append(ans)
    return out


def _answered(ans: MemAnswer, step: Step, c: MatrixCell) -> MemAnswer:
    return ans.model_copy(update={"status": "answered", "engine": step.engine, "tuned_with": c.tuned_with,
                                  "runs": c.runs, "headroom": c.headroom,
                                  "decision": step.decision + (f" with {c.tuned_with}" if c.tuned_with else "")})


def sentence(ans: list[MemAnswer]) -> str:
    return "; ".join(f"at {a.mem}{f' ({a.at_reference})' if a.at_reference else ''}: "
                     + ((a.figures() if a.design else a.leaf or a.decision) if a.status != "inconclusive"
                        else f"inconclusive ({a.why})")
                     + (f" (unstable, so no answer: {'; '.join(a.unstable)})" if a.unstable else "") for a in ans)
