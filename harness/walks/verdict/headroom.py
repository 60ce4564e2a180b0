"""An answer that holds on another day (issue 76). The same cell moved 1.6-2.2x between sittings here and 15%
within one, so a pass that confirms itself twice in one sitting says little about the next. The variance lives
between sittings (Kalibera & Jones, ISMM 2013), so the walk measures the sitting's speed with a fixed reference cell
(decision.yaml's `reference`, run at the walk's start, between steps and at its end, as Chromium's perf bots run a
reference build beside the one under test) and asks each candidate that passed to pass again at m times the load:
m = max(the within-sitting band, the slowest sitting on record / this one). Its deciding latencies times m must stay
under their lines, and a screen of the first criterion with the same blocks due m times as often must pass (near
full utilisation a small loss of capacity multiplies the wait, M/D/1). That screen replaces a same-sitting
confirmation. A candidate without it "passes today only"; the walk goes on until something with headroom passes."""
from __future__ import annotations

from pathlib import Path

from harness.environment import utc_now
from harness.results import CellRecord, VerdictFile, load_reproduce, load_result, load_verdict
from harness.results.headroom import Headroom, ReferenceRun
from harness.scenario.thresholds import METRICS, parse_threshold
from harness.walks.verdict.answer import at_mem
from harness.walks.verdict.roles import at_load, headroom_tag, log, reference_role

PUBLISHED = Path(__file__).resolve().parents[3] / "docs" / "results"


def reference_figure(root: Path, rec: CellRecord) -> float | None:
    """A reference cell's figure: its service p50 (ms), from its result."""
    r = load_result(root / rec.scenario / rec.dir / "result.json")
    return r.metrics.service_time_ms.p50 if r is not None else None


def reference_cell(walk, at: str) -> ReferenceRun | None:
    """The sitting's reference cell, run now: the n-th of the walk is a cell of its own (a resumed walk finds the
    ones it already ran)."""
    ref = walk.tree.reference
    if ref is None:
        return None
    step = next((s for s in walk.tree.steps if s.engine == ref.engine), None)
    n = len(walk.reference) + 1
    log(f"reference cell {n} ({at}): {ref.engine} at its own settings, {walk.criteria[0].criterion.scenario} at "
        f"{walk.mems[0]}, at most {ref.blocks} blocks")
    started = utc_now()
    recs = walk.engine_at(ref.engine, step.set if step else {}, f"reference-{n}", walk.mems[0],
                          role=reference_role(ref.blocks))
    rec = recs[0] if recs else None
    measured = rec is not None and rec.status in ("passed", "failed")     # not an error, nor disturbed twice
    figure = reference_figure(walk.root, rec) if measured else None
    run = ReferenceRun(at=at, cell=f"{rec.scenario}/{rec.dir}" if rec else "-", started_utc=started,
                       service_p50_ms=figure, status=rec.status if rec else None)
    walk.reference.append(run)
    walk.cells_at_reference = walk.cells_run
    log(f"reference cell {n} ({at}): service p50 {figure:,.0f} ms" if figure is not None else
        f"reference cell {n} ({at}): no figure ({run.status})")
    return run


def record(walk, published: Path | None = None) -> list[tuple[str, float, str]]:
    """(date, service p50 ms, source) of every sitting on record at the walk's profile: decision.yaml's, and the
    reference cells of each verdict published under docs/results/ and of each sitting that reproduced one."""
    ref = walk.tree.reference
    out = [(s.date, s.service_p50_ms, s.source) for s in ref.record if s.profile == walk.opts.profile]
    for f in sorted((published or PUBLISHED).glob("*/verdict.json")):
        v: VerdictFile | None = load_verdict(f)
        if v is None or v.profile != walk.opts.profile:
            continue
        for r in v.reference:
            if r.service_p50_ms:
                out.append(((r.started_utc or "")[:10], r.service_p50_ms, f"{f.parent.name}, reference cell ({r.at})"))
        for s in sorted((f.parent / "sittings").glob("*/reproduce.json")):
            rf = load_reproduce(s)
            out += [((r.started_utc or "")[:10], r.service_p50_ms, f"{f.parent.name}, sitting {rf.date}, reference "
                     f"cell ({r.at})") for r in (rf.reference if rf else []) if r.service_p50_ms]
    return out


def sitting_figure(walk) -> float | None:
    """This sitting's speed: its latest reference cell's figure (ms), None before one was measured."""
    return next((r.service_p50_ms for r in reversed(walk.reference) if r.service_p50_ms), None)


def multiple(walk) -> tuple[float, str]:
    """(m, where it comes from): the slowest sitting on record over this sitting's latest reference figure."""
    ref = walk.tree.reference
    now = sitting_figure(walk)
    on_record = record(walk)
    if now is None or not on_record:
        why = "no reference figure in this sitting" if now is None else \
            f"no sitting on record at profile {walk.opts.profile}"
        return ref.within_sitting, f"{ref.within_sitting:g}, the within-sitting band ({why})"
    date, slowest, _ = max(on_record, key=lambda x: x[1])
    m = max(ref.within_sitting, slowest / now)
    return round(m, 3), (f"{m:.2f} = max({ref.within_sitting:g}, the slowest sitting on record, {date}'s "
                         f"{slowest:,.0f} ms, / this sitting's {now:,.0f} ms)")


def latency_over(recs: list[CellRecord], m: float) -> list[str]:
    """Each deciding latency of the cells (an upper bound on a time) that times m crosses its line."""
    out = []
    for r in recs:
        for t in r.thresholds:
            th = parse_threshold(t.expr)
            if METRICS[th.metric] == "latency" and th.metric != "apply_lag_blocks" and th.op in ("<", "<=") \
                    and t.value is not None and not th.passes(t.value * m):
                out.append(f"{r.scenario}: {t.expr} at {t.value:,.1f} x {m:.2f} = {t.value * m:,.0f}")
    return out


def check(walk, engine: str, settings: dict, tag: str, mem: str, option, recs: list[CellRecord]) -> Headroom:
    """A candidate that passed every criterion, at m times the load: its latencies times m, then its screen."""
    m, basis = multiple(walk)
    role = at_load(walk.tree.screen_blocks, m)
    log(f"{engine}{' ' + tag if tag else ''} at {mem}: passed; its headroom at {m:.2f}x the load ({basis})")
    screen = walk.engine_at(engine, settings, headroom_tag(tag), mem, option, role)
    outcome = at_mem(screen)
    word = {"pass": "passed", "fail": "failed"}.get(outcome, outcome)
    why = next((r.diagnosis for r in screen if r.diagnosis), None)
    said = f"{word}: {why}" if why and outcome != "pass" else word
    over = latency_over(recs, m)
    first = load_result(walk.root / screen[0].scenario / screen[0].dir / "result.json") if screen else None
    busy = first.metrics.block_log.apply_utilisation if first is not None and first.metrics.block_log else None
    h = Headroom(multiple=m, basis=basis, passed=outcome == "pass" and not over, screen=said,
                 screen_cells=[f"{r.scenario}/{r.dir}" for r in screen], latency_over=over,
                 screen_p99_ms=screen[0].p99_ms if screen else None, screen_busy=busy,
                 reference_ms=sitting_figure(walk))
    log(f"{engine}{' ' + tag if tag else ''} at {mem}: {h.says()}")
    return h
