"""An answer that holds on another day (issues 76, 84). The same cell moved 1.6-2.2x between sittings here and 15%
within one. A multiple asked of a candidate from another cell's speed (the reference cell's) does not track it: the
reference moved 1.89x between two sittings where the design's busy share moved 1.53x. So each candidate that passed
is measured on itself: its capacity, the largest multiple of the offered load (the same blocks due more often) at
which every line of its criterion holds (walks/capacity.py). It "holds with headroom" in a sitting where its
capacity is at least the within-sitting band (decision.yaml's reference.within_sitting, 1.15), or the spread between
its own sittings on record where that is wider (the mission's: headroom larger than the spread); its label is the
smallest capacity on record for it (this sitting's and the published ones', of the same runtime and profile), so a
faster host cannot flip it and a slower one lowers it by a measured figure. The reference cell stays as the
sitting's speed, for the record and the report: the same cell, its full blocks, in every sitting. A candidate whose
own cells were a close call (confirm.py) passes today only without a capacity: more load measures its queueing, not the
distance its blocks' own figures keep from the line (an in-place engine keeps its service time until it saturates)."""
from __future__ import annotations

from pathlib import Path

from harness.environment import utc_now
from harness.results import CellRecord, VerdictFile, load_reproduce, load_result, load_verdict
from harness.results.headroom import Capacity, Headroom, Host, ReferenceRun
from harness.walks import capacity as cap
from harness.walks.verdict.confirm import close_call
from harness.walks.verdict.roles import at_load, log, reference_role

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
        f"{walk.mems[0]}, its {ref.blocks} blocks")
    started = utc_now()
    recs = walk.engine_at(ref.engine, step.set if step else {}, f"reference-{n}", walk.mems[0],
                          role=reference_role(ref.blocks))
    rec = recs[0] if recs else None
    measured = rec is not None and rec.status in ("passed", "failed")     # not an error, nor disturbed twice
    figure = reference_figure(walk.root, rec) if measured else None
    run = ReferenceRun(at=at, cell=f"{rec.scenario}/{rec.dir}" if rec else "-", started_utc=started,
                       service_p50_ms=figure, status=rec.status if rec else None,
                       runtime=rec.runtime if rec else None)
    walk.reference.append(run)
    walk.cells_at_reference = walk.cells_run
    log(f"reference cell {n} ({at}): service p50 {figure:,.0f} ms" if figure is not None else
        f"reference cell {n} ({at}): no figure ({run.status})")
    return run


def on_record(of: str, mem: str, profile: str, runtime: str | None, published: Path | None = None) -> list[Capacity]:
    """Every capacity on record for `of` at `mem`: each published verdict's (its matrix and leaf) and each sitting
    that reproduced one, at the same profile and runtime (a figure of another runtime measures another process
    layout, and enters no figure of this one)."""
    out: list[Capacity] = []
    for f in sorted((published or PUBLISHED).glob("*/verdict.json")):
        v: VerdictFile | None = load_verdict(f)
        if v is None or v.profile != profile:
            continue
        out += [c.headroom.capacity for c in [*v.matrix, *v.leaf] if c.headroom and c.headroom.capacity]
        for s in sorted((f.parent / "sittings").glob("*/reproduce.json")):
            rf = load_reproduce(s)
            out += [t.capacity for t in (rf.targets if rf else []) if t.capacity is not None]
    return [c for c in out if c.of == of and c.mem == mem and (runtime is None or c.host.runtime == runtime)]


def judged(capacity: Capacity, band: float, record: list[Capacity]) -> Headroom:
    """Its headroom: held in this sitting where its capacity is at least its line, the within-sitting band or, once
    it has capacities from two sittings or more on record, the spread between them (largest over smallest) if wider:
    a capacity that moves s-fold between sittings carries tomorrow's load only from s up. Labelled by the smallest
    capacity on record (this sitting's included), and the sitting it came from."""
    every = [capacity, *[c for c in record if c is not capacity]]
    low = min(every, key=lambda c: c.multiple if c.multiple is not None else 0.0)
    spread = between_sittings(every)
    line = max(band, spread or 0.0)
    held = capacity.multiple is not None and capacity.multiple >= line
    if spread is None:
        why = (f"the within-sitting band {band:g} ({len(every)} sitting{'s' if len(every) > 1 else ''} on record: "
               f"no spread between sittings yet)")
    elif line > band:
        why = (f"the spread between its {len(every)} sittings on record, {spread:.2f}x, wider than the within-sitting "
               f"band {band:g}")
    else:
        why = f"the within-sitting band {band:g} (its {len(every)} sittings on record spread {spread:.2f}x)"
    return Headroom(multiple=round(line, 2), basis=f"its capacity measured on itself against {why}", passed=held,
                    screen="passed" if held else "failed", capacity=capacity, smallest=low.multiple,
                    smallest_from=low.sitting, sittings=len(every),
                    screen_cells=[s.cell for s in capacity.steps if s.cell])


def between_sittings(every: list[Capacity]) -> float | None:
    """Largest over smallest of the capacities measured (a sitting's lower bound where it carried less than its
    first step: still a measured figure); None with fewer than two."""
    got = [c.multiple for c in every if c.multiple]
    return max(got) / min(got) if len(got) > 1 else None


def measure_capacity(walk, engine: str, settings: dict, tag: str, mem: str, option, recs: list[CellRecord],
                     failed: bool = False) -> Capacity:
    """A configuration's capacity in this sitting: steps of its first criterion at multiples of the load, each a
    screen over the tree's screen blocks, led by its busy share at 1x where it has one. failed: its cells at the
    offered load failed (an alternative): 1x is a known failure."""
    first = load_result(walk.root / recs[0].scenario / recs[0].dir / "result.json") if recs else None
    bl = first.metrics.block_log if first is not None else None
    bound = walk.tree.leaf.utilisation_bound if walk.tree.leaf is not None else None
    growth = cap.Growth.of(first)       # its steps' shares carried as its own is (walks/capacity.py)

    def measure(m: float):
        screen = walk.engine_at(engine, settings, cap.load_tag(tag, m), mem, option, at_load(walk.tree.screen_blocks, m))
        rec = screen[0] if screen else None
        result = load_result(walk.root / rec.scenario / rec.dir / "result.json") if rec else None
        step = cap.step_of(m, result, f"{rec.scenario}/{rec.dir}" if rec else None, growth)
        if result is None and rec is not None and rec.status in ("passed", "failed", "oom"):   # its record's word
            ok = rec.status == "passed"
            step = step.model_copy(update={"passed": ok, "error": False,
                                           "why": None if ok else rec.diagnosis or rec.status})
        log(f"{engine}{' ' + tag if tag else ''} at {mem}, {step.says()}")
        return step
    at_1x = max(bl.apply_utilisation, growth.at_horizon) if bl and growth else bl.apply_utilisation if bl else None
    got = cap.search(measure, cap.first_multiple(at_1x, bound), bound,
                     passed_at_load=not failed)
    return got.model_copy(update={"of": f"{engine}/{tag}" if tag else engine, "mem": mem,
                                  "sitting": utc_now()[:10], "code": first.environment.get("git_commit")
                                  if first is not None else None, "host": Host.of(first.environment if first else {})})


def check(walk, engine: str, settings: dict, tag: str, mem: str, option, recs: list[CellRecord]) -> Headroom:
    """A candidate that passed every criterion: its capacity, measured now, judged with its record."""
    band = walk.tree.reference.within_sitting
    # its first criterion's cell, the one its capacity would be measured on: a short cell's p99 (reorg's) has no upper
    # bound at all, which the confirm rule calls undecided though 3 ms sits nowhere near 500
    near = close_call(recs[0], walk.tree.confirm) if recs else None
    if near is not None:
        # A latency line's margin is its own cells' distance to it: more of the same blocks measures how they queue,
        # not how much slower the next sitting's blocks may be (an in-place SQLite carried 2.5x at p99 469 ms).
        h = Headroom(multiple=band, basis="its own cells: a close call is no answer on another day", passed=False,
                     screen="close call", close_call=near)
        log(f"{engine}{' ' + tag if tag else ''} at {mem}: {h.says()}")
        return h
    log(f"{engine}{' ' + tag if tag else ''} at {mem}: passed; its capacity, measured on itself (line {band:g}x)")
    got = measure_capacity(walk, engine, settings, tag, mem, option, recs)
    h = judged(got, band, on_record(got.of, mem, walk.opts.profile, got.host.runtime))
    h = h.model_copy(update={"reference_ms": next((r.service_p50_ms for r in reversed(walk.reference)
                                                   if r.service_p50_ms), None)})
    log(f"{engine}{' ' + tag if tag else ''} at {mem}: {h.says()}")
    return h
