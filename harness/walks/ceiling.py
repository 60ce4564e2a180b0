"""`make ceiling ENGINE=<e> SCENARIO=combined`: the highest offered read rate the engine carries beside the
scenario's writes. Writes keep the scenario's cadence; reads are stepped (ceiling.steps_qps: 100, 1K, 5K),
then doubled until a step fails and bisected between the last pass and the first failure, down to
ceiling.resolution. A step passes when its run passes the scenario's thresholds (combined: write p99 under
the block deadline, reads at least 95% of the offered rate) with its data intact. The knee (the highest
passing step) is run again: it stands only if the repeat passes too; if not, the search goes on below it.

Each step is a cell of its own (harness/walks/sweep.py: resumable, its own warmup), every one from the same cloned
starting state, so no step's figure owes anything to the steps run before it; the database's size at each
step's end is recorded. ceiling.json holds every step and the knee; thresholds on the knee
(ceiling.thresholds, e.g. `knee_read_qps >= 1000`) decide the exit code."""
from __future__ import annotations

import sys
from pathlib import Path

from harness.walks.bracket import Bracket, Verdict, verdict_of, walk
from harness.environment import utc_now
from harness.errors import EXIT_RUN_FAILED, EXIT_THRESHOLD_FAILED, ConfigError
from harness.results import load_result, write_json
from harness.scenario.plan import resolve_plan
from harness.scenario.thresholds import judge_knee, parse_knee_threshold
from harness.walks.sweep import Cell, CellOptions, CellRun, SweepInterrupted, plan_cells, run_cell, sweep_dir_for

CEILING_VERSION = 3      # 2: steps' failed_on and reads_late, the knee's reached, bounded_at_qps, bounded_by;
                         # 3: steps' and the knee's apply_busy_share (a design's applier), an oom said as one
CEILING_FILE = "ceiling.json"
MAX_STEPS = 24           # a search that has not converged by then stops, and says so (converged: false)
def _log(msg: str) -> None:
    print(f"[ceiling] {msg}", file=sys.stderr, flush=True)


def step_figures(cr: CellRun, offered_qps: float, repeat: int) -> dict:
    """One step as ceiling.json keeps it, from its cell's result."""
    r = load_result(cr.dir / "result.json")
    m = r.metrics if r else None
    return {"offered_qps": offered_qps, "repeat": repeat, "status": cr.record.status if cr.record else "error",
            "passed": bool(cr.record and cr.record.status == "passed"),
            "achieved_qps": m.reads_per_s if m else None,
            "read_p99_ms": m.read_latency_ms.p99 if m and m.read_latency_ms else None,
            "read_p50_ms": m.read_latency_ms.p50 if m and m.read_latency_ms else None,
            "write_p99_ms": m.commit_latency_ms.p99 if m else None,
            "write_rows_per_s": m.rows_per_s if m else None,
            "reads_empty": m.reads_empty if m else None,
            "reads_late": m.reads_late if m else None,
            "db_bytes": m.db_bytes_final if m else None,
            "readers_cpu_share": m.harness.readers.cpu_share if m and m.harness.readers else None,
            # behind a block log: how much of the window its applier spent applying (the room the reads leave)
            "apply_busy_share": m.block_log.apply_utilisation if m and m.block_log else None,
            # what failed it: the criteria it missed, or the run itself (its integrity, an error, an oom)
            "failed_on": _failed_on(r, cr.record.status if cr.record else "error"),
            "thresholds": [t.model_dump() for t in r.thresholds] if r else [],
            "cell": str(cr.dir.relative_to(cr.dir.parents[1]))}


def _failed_on(r, status: str) -> list[str]:
    """The criteria a step missed; a run that never finished (an oom, an error) is said as that first, its
    integrity unchecked rather than lost."""
    if status == "passed":
        return []
    ended = [] if status == "failed" else \
        [f"the run: {status}" + (f" ({r.error})" if r is not None and r.error else "")]
    missed = [f"{t.expr} (measured {t.value:g})" if t.value is not None else t.expr
              for t in (r.thresholds if r else []) if not t.passed]
    if r is not None and r.integrity.ok is False:
        missed.append("integrity")
    return ended + missed or [f"the run: {status}"]


def ceiling_bracket(steps_qps: list[float], max_qps: float, resolution: float) -> Bracket:
    """The rates to try: the fixed steps, then doubling up to max_qps, then bisection (harness/walks/bracket.py);
    nothing below the lowest fixed step."""
    return Bracket(steps_qps, min(steps_qps), max_qps, resolution)


def ceiling(scenario: str, engine: str, opts: CellOptions, results_root: Path, mem: str | None = None,
            command: str | None = None) -> int:
    """command: the make command that asked for it, kept in ceiling.json (what a published figure names)."""
    probe = resolve_plan(scenario, engine, profile=opts.profile, mem=mem, overrides=list(opts.overrides))
    if not probe.readers.threads:
        raise ConfigError(f"{probe.scenario_file}: readers.threads: a ceiling steps the read rate; the scenario "
                          "has no readers")
    cfg = probe.ceiling
    knee_thresholds = [parse_knee_threshold(t) for t in cfg.thresholds]
    root = search_dir(scenario, engine, opts, results_root, mem)
    root.mkdir(parents=True, exist_ok=True)
    writes = (f"writes every {probe.workload.block_interval_ms:g} ms x {probe.workload.rows_per_block} rows"
              if probe.workload.writes else "reads alone")
    _log(f"{root}: {engine}, {probe.scenario} ({probe.profile}), {writes}; reads stepped "
         f"{', '.join(f'{q:g}' for q in cfg.steps_qps)} QPS then doubled and bisected to {cfg.resolution:.0%}")
    _log(expected_span(probe))
    bracket = ceiling_bracket(cfg.steps_qps, cfg.max_qps, cfg.resolution)
    steps: list[dict] = []
    out = {**_head(probe, engine, mem, steps), "command": command}
    spans: list[tuple] = []         # each step's cell, as it ran (a resume reads finished ones back)

    def run_step(qps: float, confirming: bool) -> Verdict:
        repeat = sum(s["offered_qps"] == qps for s in steps) + 1
        cell = Cell(scenario, engine, mem, None, repeat, (f"readers.rate_per_s={qps:g}",), tag=f"q{qps:g}")
        [cr] = plan_cells([cell], opts, root, repeats=2)
        label = f"step {len(steps) + 1}: {qps:g} QPS" + (" (repeat)" if repeat > 1 else "")
        cr.record = run_cell(cr, label)
        spans.append((cr.record.started_utc, cr.record.finished_utc))
        s = step_figures(cr, qps, repeat)
        steps.append(s)
        _log(f"{label}: {'pass' if s['passed'] else 'FAIL'}; reads {s['achieved_qps']}/s p99 {s['read_p99_ms']} ms, "
             f"write p99 {s['write_p99_ms']} ms, db {s['db_bytes']} B")
        write_json(root / CEILING_FILE, out)       # after every step: an interrupted search loses nothing
        return verdict_of(s["status"])

    try:
        w = walk(bracket, run_step, MAX_STEPS, snap=lambda q: float(round(q)))
        knee, out["converged"], out["complete"] = w.knee, w.converged, True
        out["inconclusive_at_qps"] = w.inconclusive_at
    except SweepInterrupted as e:
        _log(f"interrupted in {e}; run the same command again to resume")
        return EXIT_RUN_FAILED
    # the steps' own times: a resume over finished steps ran nothing then (12-06's rewrote them as its 3 s)
    out["started_utc"] = min((a for a, _ in spans if a), default=out["started_utc"])
    out["finished_utc"] = max((b for _, b in spans if b), default=None)
    return _finish(root, out, steps, knee, knee_thresholds)


def step_seconds(phases, qps: float) -> float:
    """A step's timed phases at `qps`: seconds, or the protocol's query counts at that rate, and its cool-down."""
    warm = phases.warmup_queries / qps if phases.warmup_queries is not None else phases.warmup_s
    measure = phases.measure_queries / qps if phases.measure_queries is not None else phases.measure_s
    return warm + measure + phases.cooldown_s


def expected_span(probe) -> str:
    """Before the first step, what the search may cost: the same bracket played against every knee it could meet
    (a rate passes below the knee, fails above it), so the fewest and the most steps it can take, and their timed
    minutes. Each step also clones the starting state, and the first builds it if it is not on disk: not counted."""
    cfg = probe.ceiling
    top = cfg.max_qps * 2
    spans = []
    for i in range(121):            # knees spread geometrically from under the lowest step to over max_qps
        knee = min(cfg.steps_qps) / 2 * (top / (min(cfg.steps_qps) / 2)) ** (i / 120)
        w = walk(ceiling_bracket(cfg.steps_qps, cfg.max_qps, cfg.resolution),
                 lambda q, _c, k=knee: "pass" if q <= k else "fail", MAX_STEPS, snap=lambda q: float(round(q)))
        spans.append((len(w.verdicts), sum(step_seconds(probe.phases, q) for q, _, _ in w.verdicts) / 60))
    counts, minutes = [n for n, _ in spans], [m for _, m in spans]
    return (f"expect {min(counts)} to {max(counts)} steps, {min(minutes):,.0f} to {max(minutes):,.0f} timed minutes "
            "(warm-up, measured, cool-down), each step also cloning the starting state, the first building it "
            "if it is not on disk")


def search_dir(scenario: str, engine: str, opts: CellOptions, results_root: Path, mem: str | None) -> Path:
    """Where a search of these inputs keeps its steps and ceiling.json: the same inputs, the same folder."""
    spec = {"scenario": scenario, "engine": engine, "mem": mem, "opts": opts.asked()}
    return sweep_dir_for(results_root, "ceiling", f"{Path(scenario).stem}-{engine}", spec)


def _head(probe, engine: str, mem: str | None, steps: list[dict]) -> dict:
    """ceiling.json before its first step: what is asked, and the steps list each step appends to."""
    return {"version": CEILING_VERSION, "kind": "ceiling", "scenario": probe.scenario, "profile": probe.profile,
            "engine": engine, "mem": mem, "data_limit_bytes": probe.memory.data_limit_bytes, "scale": probe.scale,
            "readers": probe.readers.threads, "readers_auto": probe.readers.threads_auto, "mix": probe.readers.mix,
            "writes": {"block_interval_ms": probe.workload.block_interval_ms,
                       "rows_per_block": probe.workload.rows_per_block} if probe.workload.writes else None,
            "criteria": probe.thresholds, "search": probe.ceiling.model_dump(), "started_utc": utc_now(),
            "steps": steps, "knee": None, "complete": False}


def _finish(root: Path, out: dict, steps: list[dict], knee: float | None, knee_thresholds) -> int:
    out["knee"] = knee_figures(steps, knee)
    out["sentence"] = sentence(out)
    out["threshold_results"] = judge_knee(knee_thresholds, out["knee"])
    out["finished_utc"] = out.get("finished_utc") or utc_now()
    write_json(root / CEILING_FILE, out)
    from harness.report import write_report
    _, html = write_report(root)
    _log(out["sentence"])
    for t in out["threshold_results"]:
        _log(f"{'PASS' if t['passed'] else 'FAIL'} {t['expr']} (measured {t['value']})")
    print(root / CEILING_FILE)
    print(html)
    return EXIT_THRESHOLD_FAILED if any(not t["passed"] for t in out["threshold_results"]) else 0


def knee_figures(steps: list[dict], knee: float | None) -> dict | None:
    """The knee's figures: the worse of its two runs (the step and its confirming repeat), and what bounded
    it: the criteria missed at the lowest failing rate above it, or none, when every rate up to max_qps
    passed (the knee was not reached)."""
    if knee is None:
        return None
    runs = [s for s in steps if s["offered_qps"] == knee and s["passed"]]
    above = [s for s in steps if s["offered_qps"] > knee and not s["passed"]]
    first_fail = min((s["offered_qps"] for s in above), default=None)
    bounded_by = sorted({c for s in above if s["offered_qps"] == first_fail for c in s.get("failed_on", [])})
    return {"knee_read_qps": knee, "reached": first_fail is not None,
            "bounded_at_qps": first_fail, "bounded_by": bounded_by,
            "achieved_qps": min(s["achieved_qps"] for s in runs),
            "knee_read_p99_ms": max(s["read_p99_ms"] for s in runs),
            "knee_write_p99_ms": max(s["write_p99_ms"] for s in runs) if runs[0]["write_p99_ms"] is not None else None,
            "write_rows_per_s": min((s["write_rows_per_s"] for s in runs if s["write_rows_per_s"]), default=None),
            "readers_cpu_share": max((s["readers_cpu_share"] for s in runs if s.get("readers_cpu_share")), default=None),
            "apply_busy_share": max((s["apply_busy_share"] for s in runs if s.get("apply_busy_share") is not None),
                                    default=None),
            "runs": len(runs)}


def sentence(out: dict) -> str:
    k = out["knee"]
    where = f"{out['engine']} at scale {out['scale']:g}" + (f" under {out['mem']}" if out["mem"] else "")
    if out.get("inconclusive_at_qps") is not None:
        return f"{where}: inconclusive: the step at {out['inconclusive_at_qps']:g} QPS errored twice (see its cell)"
    if k is None and not out.get("converged"):
        return f"{where}: no knee confirmed within {MAX_STEPS} steps; the steps show where it wavered"
    if k is None:
        lowest = min(out["search"]["steps_qps"])
        beside = " beside the writes" if out.get("writes") else ""
        return f"{where}: no read rate passed, not even {lowest:g} QPS{beside}"
    writes = f"{k['write_rows_per_s']:,.0f} rows/s written + " if k.get("write_rows_per_s") else ""
    figures = (f"{k['achieved_qps']:,.0f} achieved), read p99 {k['knee_read_p99_ms']:g} ms"
               + (f", write p99 {k['knee_write_p99_ms']:g} ms" if k.get("knee_write_p99_ms") is not None else "")
               + (f", the applier {k['apply_busy_share']:.0%} busy" if k.get("apply_busy_share") is not None else ""))
    if not k.get("reached", True):
        return (f"{where}: knee not reached, ≥ {k['knee_read_qps']:,.0f} reads/s: every rate up to ceiling.max_qps "
                f"passed ({writes}{k['knee_read_qps']:,.0f} offered, {figures}); raise max_qps to search on")
    bound = (f"; bounded at {k['bounded_at_qps']:,.0f} QPS by {', '.join(k['bounded_by'])}"
             if k.get("bounded_by") else "")
    return f"{where}: {writes}{k['knee_read_qps']:,.0f} reads/s offered ({figures}{bound}"
