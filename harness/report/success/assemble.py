"""`make success DIR=docs/results/<date>-success`: the reference's table from what is published in DIR, one
subfolder per question and system, named `<question>-<system>` (degradation-answer, max_writes-reference, ...), each
a published run (`make publish RUN=... AS=<date>-success/<question>-<system>`). Each figure is read from its run's
own file, with the command and sitting that run kept: none is typed in. A question no subfolder answers yet says
"not measured yet"; a subfolder whose name is not a question and a system, or whose run is of another kind, is
refused with what is allowed."""
from __future__ import annotations

from pathlib import Path

from harness.errors import ConfigError
from harness.report.publish_ceiling import answer_counts
from harness.report.success.publish_reads import READS_FILE, knee_says, size_says
from harness.report.success.publish_reads import finished as reads_run
from harness.report.success.publish_v1 import V1_FILE, reads_says
from harness.report.publish_bias import published_biases, store_note
from harness.report.success.publish_writes import WRITES_FILE, held_says
from harness.report.success.publish_writes import finished as writes_run
from harness.report.success import writes_by_size
from harness.report.success.curve_sittings import CURVE_FILE, earlier, range_says
from harness.report.success.merge import host_short, hosts_says, sitting_of, store_says
from harness.report.success.table import QUESTIONS, SYSTEMS, Figure, SuccessTable
from harness.results import RunResult, load_curve, load_result, read_json
from harness.report.success.curve_report import figures
from harness.results.curve import CurveFile
from harness.results.headroom import Host
from harness.workload.shapes import MENDOZA_1X_ENTITIES

README = "README.md"


def degradation(read: tuple[CurveFile, list], folder: str, system: str) -> Figure:
    """The curve in one cell: its per-block service time from the smallest measured size to the largest, and the
    10x projection, worded as projected; then each earlier sitting's range (curve_sittings.py), with its host."""
    c, kept = read
    pts = [p for p in c.points if p.status in ("passed", "failed") and p.service_p50_ms is not None]
    if not pts:
        raise ConfigError(f"{folder}/curve.json: no measured point: nothing to say of the curve")
    hi = max(pts, key=lambda p: p.size_gib)
    queryable = hi.queryable_p99_ms if "queryable_p99_ms" in figures(c.points) else None   # else ack's copy
    there = [f"{name} p99 {v:,.0f} ms" for name, v in (("ack", hi.ack_p99_ms), ("queryable", queryable))
             if v is not None]
    says = f"{range_says(c)}, {', '.join(there) or 'no p99'} there ({len(pts)} sizes)"
    q = next((q for q in c.projections if q.figure == "service_p50_ms"), None)
    if q is not None:
        says += f"; 10x projected, not measured: {q.value:,.0f} ms [{q.lo:,.0f}-{q.hi:,.0f}] ({q.model} fit)"
    for _, k in kept:
        host = next((p.host for p in k.points if p.host), None)
        if (said := range_says(k)) is not None:
            says += f"; an earlier sitting ({host_short({'host': host.model_dump()}) if host else '?'}): {said}"
    return Figure(question="degradation", system=system, says=says, scale=hi.scale, mem=hi.mem, command=c.command,
                  sitting=max(p.sitting for p in pts), run=f"{folder}/{README}",
                  host=hi.host.says() if hi.host else None)


def max_reads(r: dict, folder: str, system: str) -> Figure:
    """The read table in one cell: per mix (and size, where rows of more than one are published), the highest
    rate held at each number of connections and the worst p99 among them; whether the answers were checked."""
    rows = r["rows"]
    if not rows:
        raise ConfigError(f"{folder}/{READS_FILE}: no search finished: nothing to say of the reads")
    sized = len({row.get("profile") for row in rows}) > 1
    mixes = []
    for mix, profile in dict.fromkeys((row["mix"], row.get("profile")) for row in rows):
        mine = [row for row in rows if (row["mix"], row.get("profile")) == (mix, profile)]
        p99 = max((row["read_p99_ms"] for row in mine if row["read_p99_ms"] is not None), default=None)
        held = [knee_says(row) if row["knee_read_qps"] is not None or row.get("bounded_at_qps") is None
                else f"none at {row['bounded_at_qps']:,.0f}" for row in mine]       # the lowest rate failed
        mixes.append(f"{mix.upper()}{f'@{size_says(mine[0])}' if sized else ''} {' / '.join(held)} QPS"
                     + (f" p99 ≤ {p99:,.0f} ms" if p99 is not None else ""))
    conns = " / ".join(dict.fromkeys(str(row["connections"]) for row in rows))
    answers = sorted({row["answers"] for row in rows})
    says = f"{'; '.join(mixes)} ({conns} connections; answers {', '.join(answers)})"
    return Figure(question="max_reads", system=system, says=says, scale=max(row["scale"] for row in rows),
                  mem="/".join(dict.fromkeys(row.get("mem") or r.get("mem") or "none" for row in rows)),
                  command="; ".join(dict.fromkeys(row.get("command") or r.get("command") or "" for row in rows)),
                  sitting=max(row["sitting"] for row in rows), run=f"{folder}/{README}", host=hosts_says(rows))


def max_writes(found: tuple[dict, list[dict]], folder: str, system: str) -> Figure:
    """The write table in one cell: per scale and MEM the most writes that held and its p99, and what bound the
    largest point; a point made on the store with its sitting's bias (found: writes.json, the published biases)."""
    w, biases = found
    rows = w["rows"]
    if not rows:
        raise ConfigError(f"{folder}/{WRITES_FILE}: no point finished: nothing to say of the writes")
    # points of different sittings (publish merges them) each say theirs: a knee moves with the host
    apart = len({sitting_of(row) for row in rows}) > 1
    points = [f"{row['scale']:g}x@{row['mem']}{store_says(row)}"
              + (f" ({row['sitting']}, {host_short(row)})" if apart else "") + f" {held_says(row)}"
              + (f" p99 {row['p99_ms']:,.0f} ms" if row["p99_ms"] is not None else "")
              + store_note(row, biases, f"{folder}/") for row in rows]
    last = rows[-1]
    # the line that bound it first (walks/knee.py orders them); every one is in the point's own README
    bound = f"; bound by {last['bounded_by'][0]}" if last["bounded_by"] else ""
    commands = dict.fromkeys(row.get("command") or w.get("command") or "" for row in rows)
    return Figure(question="max_writes", system=system, says="; ".join(points) + bound,
                  scale=max(row["scale"] for row in rows), mem="/".join(dict.fromkeys(row["mem"] for row in rows)),
                  command="; ".join(c for c in commands if c), sitting=max(row["sitting"] for row in rows),
                  run=f"{folder}/{README}", host=hosts_says(rows))


def combined(found: tuple[dict, list[RunResult]], folder: str, system: str) -> Figure:
    """The sweet spot from a published read ceiling beside the writes: the writes it kept and the reads it
    carried at its knee, with both p99s; a knee not reached is a floor. Runs published beside it (the
    criterion's hour with those reads, or the same cell at other MEMs: make publish RUN=results/<run> AS=<this
    folder>) follow, each with its scale, MEM, verdict and link: the figure's scale and MEM stay the ceiling's."""
    c, runs, host = found
    says = _knee_says(c, folder) + (f"; beside it: {', '.join(beside_short(r) for r in runs)} (each below)"
                                    if runs else "")
    return Figure(question="combined", system=system, says=says, scale=c["scale"], mem=c.get("mem") or "none",
                  command=c.get("command") or "", sitting=(c.get("finished_utc") or c["started_utc"])[:10],
                  run=f"{folder}/{README}", host=host, details=[beside_says(r, folder) for r in runs])


def _knee_says(c: dict, folder: str) -> str:
    """The knee with both p99s; where no rate held, none, with the lowest step's figures (what failed it)."""
    k = c.get("knee")
    if k:
        floor = "" if k.get("reached", True) else "≥ "
        writes = f"{k['write_rows_per_s']:,.0f} rows/s written + " if k.get("write_rows_per_s") else ""
        return (f"{writes}{floor}{k['knee_read_qps']:,.0f} reads/s (read p99 {k['knee_read_p99_ms']:,.0f} ms"
                + (f", write p99 {k['knee_write_p99_ms']:,.0f} ms" if k.get("knee_write_p99_ms") is not None else "")
                + (f", applier {k['apply_busy_share']:.0%} busy" if k.get("apply_busy_share") is not None else "")
                + ")")
    low = min(c.get("steps") or [], key=lambda st: st["offered_qps"], default=None)
    if low is None:
        raise ConfigError(f"{folder}/ceiling.json: no knee and no step: {c.get('sentence') or 'nothing ran'}")
    figures = [f"read p99 {low['read_p99_ms']:,.0f} ms" if low.get("read_p99_ms") is not None else None,
               f"write p99 {low['write_p99_ms']:,.0f} ms" if low.get("write_p99_ms") is not None else None,
               f"applier {low['apply_busy_share']:.0%} busy" if low.get("apply_busy_share") is not None else None]
    writes = f" beside {low['write_rows_per_s']:,.0f} rows/s" if low.get("write_rows_per_s") else ""
    missed = [f.split(" ")[0] for f in low.get("failed_on") or ["?"]]
    return (f"none: not even {low['offered_qps']:,.0f} reads/s{writes} held ("
            + ", ".join(f for f in figures if f) + f"; failed on {', '.join(missed)})")


def _held(r: RunResult) -> str:
    return "held" if r.status == "passed" else r.status


def beside_short(r: RunResult) -> str:
    """A run beside a ceiling in the table's cell: where, how many reads, how long, held or not."""
    measured = (r.plan.get("phases") or {}).get("measure_s") or 0
    return (f"{r.scale:g}x@{(r.memory.data_limit_bytes or 0) / 2**30:,.1f} GiB {r.metrics.reads_per_s or 0:,.0f} "
            f"reads/s {measured:,.0f} s {_held(r)}")


def beside_says(r: RunResult, folder: str) -> str:
    """A run published beside a ceiling, in a few words: the reads it offered beside the writes, where and how
    long, whether every line held (else the figures it missed on), the read and ack p99 and its checked
    answers; linked to its own README, which names its command and every figure."""
    m = r.metrics
    measured = (r.plan.get("phases") or {}).get("measure_s") or 0
    checked, wrong = answer_counts([r]) or (0, 0)
    missed = [t.expr.split(" ")[0] for t in r.thresholds if not t.passed]
    verdict = _held(r) + (f" on {', '.join(missed)}" if missed and r.status != "passed" else "")
    figures = [f"read p99 {m.read_latency_ms.p99:,.0f} ms" if m.read_latency_ms is not None else "",
               f"ack p99 {m.commit_latency_ms.p99:,.0f} ms"]
    answers = f"; {wrong:,} of {checked:,} answers wrong" if checked else ""
    return (f"{m.reads_per_s or 0:,.0f} reads/s + {m.rows_per_s or 0:,.0f} rows/s at {r.scale:g}x, MEM "
            f"{(r.memory.data_limit_bytes or 0) / 2**30:,.1f} GiB, {measured:,.0f} s: {verdict} ("
            f"{', '.join(f for f in figures if f)}{answers}; [{r.environment.get('started_utc', '?')[:10]}]"
            f"({folder}/runs/{r.run_id}/README.md))")


def published_runs(d: Path) -> list[RunResult]:
    """The runs published into a walk's folder beside it, by scale and MEM (the story a MEM sweep tells), then
    oldest first."""
    runs = [r for f in sorted(d.glob("runs/*/result.json.gz")) if (r := load_result(f)) is not None]
    return sorted(runs, key=lambda r: (r.scale, r.memory.data_limit_bytes or 0, r.environment.get("started_utc", "")))


def steps_host(d: Path) -> str | None:
    """A published ceiling's host, from its own steps' results: the runs published beside it can be another
    sitting's, on another host."""
    first = next((r for f in sorted(d.glob("steps/*/*/result.json.gz")) if (r := load_result(f)) is not None), None)
    return Host.of(first.environment).says() if first else None


def v1(v: dict, folder: str, system: str) -> Figure:
    """The go/no-go and the frontier's points (rows/s written + checked reads/s held at each); where no read rate
    held, what the lowest tried carried and the line that bound it first, and the answers checked over all."""
    points = ", ".join(f"{p['write_rows_per_s']:,.0f} + {reads_says(p)}{_v1_lowest(p)}" for p in v["frontier"])
    checked = sum(p.get("answers_checked") or 0 for p in v["frontier"])
    right = checked - sum(p.get("answers_wrong") or 0 for p in v["frontier"])
    says = (f"{'go' if v.get('go') else 'no-go'} on this machine ({v['entities']:,} entities; rows/s + reads/s: "
            f"{points}" + (f"; answers {right:,}/{checked:,} right" if checked else "") + ")")
    return Figure(question="v1", system=system, says=says, scale=round(v["entities"] / MENDOZA_1X_ENTITIES, 3),
                  mem=v.get("mem") or "none", command=v.get("command") or "",
                  sitting=(v.get("finished_utc") or v["started_utc"])[:10],
                  run=f"{folder}/{README}", host=v.get("measured_on"))


def _v1_lowest(p: dict) -> str:
    """A write rate no read rate held beside: its lowest read step's figures and its first bound."""
    low = p.get("lowest")
    if p["read_qps"] is not None or not low:
        return ""
    bound = f"; bound by {p['bounded_by'][0]}" if p.get("bounded_by") else ""
    return (f" (at {low['offered_qps']:,.0f} offered: {low['achieved_qps']:,.0f} held, read p99 "
            f"{p['read_p99_ms']:,.0f} ms{bound})")


# what each question's subfolder holds, and how its figure is read from it
READERS = {"degradation": (CURVE_FILE, lambda d: (c, earlier(d)) if (c := load_curve(d / CURVE_FILE)) else None,
                           degradation),
           "max_reads": (READS_FILE, lambda d: reads_run(d) if (d / READS_FILE).is_file() else None, max_reads),
           "max_writes": (WRITES_FILE, lambda d: (writes_run(d), published_biases(d)) if (d / WRITES_FILE).is_file()
                          else None, max_writes),
           "combined": ("ceiling.json", lambda d: (c, published_runs(d), steps_host(d))
                        if (c := read_json(d / "ceiling.json")) else None, combined),
           "v1": (V1_FILE, lambda d: read_json(d / V1_FILE), v1)}


def figure_of(d: Path) -> Figure:
    question, _, system = d.name.rpartition("-")
    if question not in QUESTIONS or system not in SYSTEMS:
        raise ConfigError(f"{d}: a subfolder is named <question>-<system>: question one of {', '.join(QUESTIONS)}, "
                          f"system one of {', '.join(SYSTEMS)}")
    if question not in READERS:
        raise ConfigError(f"{d}: no reader for {question} yet: questions readable are {', '.join(READERS)}")
    file, load, read = READERS[question]
    run = load(d)
    if run is None:
        raise ConfigError(f"{d}: holds no {file}: publish the {question} run there (make publish RUN=... AS=...)")
    return read(run, d.name, system)


def assemble(folder: Path) -> SuccessTable:
    if not folder.is_dir():
        raise ConfigError(f"DIR={folder}: not a folder; publish a run into {folder}/<question>-<system> first")
    return SuccessTable(figures=[figure_of(d) for d in sorted(folder.iterdir()) if d.is_dir()])


def write(folder: Path) -> Path:
    t = assemble(folder)
    lines = ["# The reference's five questions, answered here", "",
             "The experiments succeed if we can answer these (the reference's last table). Each figure links the run "
             "behind it, with the command that made it and the sitting; a projection says so.", "", t.markdown(),
             "A question without a figure has not been measured yet on this machine.", "",
             "Each figure's host (a figure moves with it):", ""]
    lines += [f"- {QUESTIONS[f.question][0]}, {SYSTEMS[f.system]}: {f.host or 'unknown'}" for f in t.figures]
    lines += writes_by_size.section(folder)
    for f in (f for f in t.figures if f.details):
        lines += ["", f"## {QUESTIONS[f.question][0]}, {SYSTEMS[f.system]}: each run", ""]
        lines += [f"- {d}" for d in f.details]
    (folder / README).write_text("\n".join(lines) + "\n")
    return folder / README
