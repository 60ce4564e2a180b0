"""Where a reproduction is kept: docs/results/<published>/sittings/<date>/ (reproduce.json, every cell's result
gzipped, a README with the agreement table), and the published README's "held in k of n sittings" per level, where
n counts the original walk and every sitting that measured the level (a disturbed or unmeasured one says nothing)."""
from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from harness.errors import ConfigError
from harness.report.answer_table import as_markdown
from harness.report.publish import scrubber, write_cells
from harness.results import VerdictFile, load_reproduce, write_json
from harness.results.headroom import Capacity
from harness.results.reproduce import ReproduceFile
from harness.walks.verdict.typed import answer_records, binding_says

BEGIN = "<!-- sittings: `make reproduce` writes this section -->"
END = "<!-- /sittings -->"
RECORD_BEGIN, RECORD_END = "<!-- record: `make reproduce` writes this line -->", "<!-- /record -->"
HEADERS = ("level", "outcome", "what was measured", "figures past the spread")


def sitting_dir(published: Path, rf: ReproduceFile) -> Path:
    """sittings/<date>, or <date>-2, -3 for another sitting that day; a resumed sitting keeps its own."""
    for n in range(1, 100):
        dest = published / "sittings" / (rf.date if n == 1 else f"{rf.date}-{n}")
        kept = load_reproduce(dest / "reproduce.json") if (dest / "reproduce.json").is_file() else None
        if kept is None or kept.run_id == rf.run_id:
            return dest
    raise ConfigError(f"{published / 'sittings'}: 99 sittings on {rf.date} already")


def keep(published: Path, rf: ReproduceFile, run_root: Path, records: list) -> Path:
    dest = sitting_dir(published, rf)
    dest.mkdir(parents=True, exist_ok=True)
    scrub = scrubber(run_root)
    write_json(dest / "reproduce.json", rf)
    (dest / "reproduce.json").write_text(scrub((dest / "reproduce.json").read_text()))
    write_cells(run_root, dest, records, scrub)
    (dest / "README.md").write_text(sitting_readme(rf))
    return dest


def sittings(published: Path) -> list[tuple[str, ReproduceFile]]:
    """Every sitting kept under the published folder by its folder's name (sitting_dir's: <date>, <date>-2, ...),
    oldest first (<date>-10 after <date>-9)."""
    found = [(f.parent.name, rf) for f in (published / "sittings").glob("*/reproduce.json") if (rf := load_reproduce(f))]

    def order(item: tuple[str, ReproduceFile]) -> tuple[str, int]:
        name, rf = item
        return rf.date, int(name.rsplit("-", 1)[1]) if name != rf.date else 1
    return sorted(found, key=order)


def measured_at(v: VerdictFile, a) -> str:
    """The level whose cells an answer stands on: verdict v9's typed answer says; before, a leaf design's pass implied
    from a smaller level is that level's."""
    if a.measured_at:
        return a.measured_at
    if a.design:
        engine, design = a.design.split(": ", 1)
        cell = next((c for c in v.leaf if c.engine == engine and c.design == design and c.mem == a.mem), None)
        if cell is not None and cell.implied_from:
            return cell.implied_from
    return a.mem


class Held(NamedTuple):
    source: str             # the level it was measured at
    levels: str             # that level, and the levels it is implied at
    answer: str
    k: int
    n: int
    words: str              # each sitting's word
    capacity: Capacity | None   # the smallest capacity on record
    capacity_sitting: str   # the sitting it came from

    def capacity_says(self) -> str:
        """'1.18x (sitting 2026-12-06)', '-' where none was measured."""
        return f"{self.capacity.figure()} ({self.capacity_sitting})" if self.capacity is not None else "-"


def held(v: VerdictFile, kept: list[tuple[str, ReproduceFile]]) -> list[Held]:
    """Per measured answer: one answer measured at one level and implied at the levels above counts once, as its
    measured level's outcome in each sitting (the walk itself holds it); its label is the smallest capacity on record
    (the walk's and each sitting's, measured on the answer itself), so a faster sitting cannot raise it."""
    groups: dict[tuple[str, str], list] = {}
    for a in v.answers:
        groups.setdefault((measured_at(v, a), a.decision), []).append(a)
    out = []
    for (source, decision), answers in groups.items():
        mems = [a.mem for a in answers]
        first = answers[0]
        k = int(not first.fragile and first.status == "answered")
        walked = (v.updated_utc or "?")[:10]
        words, n = [f"{walked} walked" + ("" if k else " (passes today only)")], 1
        caps = [(first.headroom.capacity if first.headroom else None, f"the walk, {walked}")]
        for name, rf in kept:
            t = next((t for t in rf.targets if t.role == "answer" and t.mem == source), None)
            x = next((x for x in rf.levels if x.mem == source), None)
            if t is None or x is None:
                continue
            words.append(f"{name} {x.outcome}" + (f" ({t.reproduced})" if t.reproduced != t.published else ""))
            if t.reproduced not in (None, "disturbed", "error") and x.outcome != "disturbed":
                n += 1
                k += t.reproduced == "passed with headroom"
                caps.append((t.capacity, f"sitting {name}"))
        levels = source + (f" (implied at {', '.join(m for m in mems if m != source)})"
                           if any(m != source for m in mems) else "")
        out.append(Held(source, levels, decision, k, n, "; ".join(words), *_smallest(caps)))
    return out


def _smallest(caps: list[tuple[Capacity | None, str]]) -> tuple[Capacity | None, str]:
    """The lowest multiple measured and its sitting, where any was; a capacity only bounded below counts at its bound
    ('≥ 2.50x'), one with no passing step as under its lowest ('< 0.50x')."""
    known = [(c, when) for c, when in caps if c is not None and c.figure() != "-"]
    return min(known, key=lambda x: x[0].multiple if x[0].multiple is not None else 0.0, default=(None, ""))


def update_readme(published: Path, v: VerdictFile) -> None:
    """The published README's section of sittings, written again from every sitting kept, and its answer table from
    the record as update_record leaves it (the capacity and "held" on record, not the walk's alone)."""
    readme = published / "README.md"
    text = _answer_table(readme.read_text() if readme.is_file() else "", v)
    rows = held(v, sittings(published))
    section = [BEGIN, "## Held in k of n sittings", "",
               "Each later sitting ran `make reproduce` on this folder: the level's answer and its closest alternative "
               "again, with the reference cell at the start, between levels and at the end. n counts the walk and each "
               "sitting that measured it; an answer measured at one level and implied at others counts once, as its measured "
               "level's; k counts those where it passed every criterion with its capacity, measured on itself, at least the "
               "line; its capacity is the smallest measured in any of them (a faster sitting cannot raise it); "
               "[sittings/](sittings) holds each one. The answer table above and report.md's are this record; the "
               "rest of report.md and report.png are the walk's own, before any sitting.", "",
               "| measured at | answer | capacity, the smallest on record | held | sittings |",
               "| --- | --- | --- | --- | --- |",
               *[f"| {h.levels} | {h.answer} | {h.capacity_says()} | {h.k} of {h.n} | {h.words} |" for h in rows], END]
    around = _around(text, BEGIN, END)
    readme.write_text(around[0] + "\n".join(section) + around[1] if around
                      else text.rstrip("\n") + "\n\n" + "\n".join(section) + "\n")


def _around(text: str, begin: str, end: str) -> tuple[str, str] | None:
    """What text holds before begin and after end (a section a rewrite replaces); None where it has not both."""
    if begin not in text or end not in text:
        return None
    head, rest = text.split(begin, 1)
    return head, rest.split(end, 1)[1]


def _answer_table(text: str, v: VerdictFile) -> str:
    """The answer table (its header as_markdown's) rendered again from v; the rest as it was."""
    table = as_markdown(v)
    lines = text.splitlines()
    at = next((i for i, line in enumerate(lines) if line == table[0]), None)
    if at is None:
        return text
    end = next((i for i in range(at, len(lines)) if not lines[i].startswith("|")), len(lines))
    return "\n".join(lines[:at] + table + lines[end:]) + "\n"


def update_report(published: Path, v: VerdictFile) -> None:
    """The published report.md's answer table from the record, as the README's, with a line above the walk's prose
    saying which is which: the prose, the full table and report.png are the walk's own, written before any sitting
    (their capacity is the walk's; the record's is the smallest measured in any sitting)."""
    report, n = published / "report.md", len(sittings(published))
    if not report.is_file() or not n:
        return
    text = _answer_table(report.read_text(), v)
    note = (f"{RECORD_BEGIN}\n> **The record:** the table \"The answer, level by level\" below is rewritten from "
            f"verdict.json as the walk's {n} later sitting{'s' if n > 1 else ''} left it (its capacity the smallest on "
            f"record, held k of n: [README](README.md#held-in-k-of-n-sittings)). The rest of this report, its list, "
            f"its full table and report.png, is the walk's own of {(v.updated_utc or '?')[:10]}, before any sitting."
            f"\n{RECORD_END}\n\n")
    if around := _around(text, RECORD_BEGIN, RECORD_END):
        text = around[0] + note + around[1].lstrip("\n")
    elif "**Verdict per memory level**" in text:
        head, rest = text.split("**Verdict per memory level**", 1)
        text = head + note + "**Verdict per memory level**" + rest
    report.write_text(text)


def update_record(published: Path, v: VerdictFile) -> VerdictFile:
    """The published verdict.json's answers carry what is on record (issue 84): "held k of n" and the smallest
    capacity with its sitting, as the README's section says them, so a script reads the same; nothing else in the
    walk's record changes but the deciding figure's name, said by today's rule from the walk's own cells."""
    rows = {(h.source, h.answer): h for h in held(v, sittings(published))}
    answers = []
    for a in v.answers:
        h = rows.get((measured_at(v, a), a.decision))
        if h is None or a.status != "answered":
            answers.append(a)
            continue
        update = {"held": f"{h.k} of {h.n}", "binding": binding_says(answer_records(a, v.matrix, v.leaf, v.cells))}
        if h.capacity is not None and h.capacity.multiple is not None:
            update |= {"capacity": h.capacity.multiple, "capacity_at_least": h.capacity.at_least,
                       "capacity_sitting": h.capacity_sitting}
        answers.append(a.model_copy(update=update))
    out = v.model_copy(update={"answers": answers})
    write_json(published / "verdict.json", out)
    return out


def agreement_rows(rf: ReproduceFile) -> list[tuple[str, str, str, str]]:
    return [(x.mem, x.outcome, x.says, "; ".join(x.moved) or "-") for x in rf.levels]


def figure_rows(rf: ReproduceFile) -> list[tuple[str, ...]]:
    fmt = lambda v: "-" if v is None else f"{v:,.3g}" if abs(v) < 10 else f"{v:,.0f}"      # noqa: E731
    return [(t.level, f"{t.role}: {t.says} at {t.mem}", f.name, fmt(f.published), fmt(f.reproduced),
             fmt(f.raw), fmt(f.normalised), "moved" if f.moved else "")
            for t in rf.targets for f in t.figures]


def header(rf: ReproduceFile) -> list[str]:
    """The sitting's first lines: when, where, against what, and what differs from the published walk."""
    m = rf.machine
    refs = ", ".join(f"{r.at} {r.service_p50_ms:,.0f} ms" if r.service_p50_ms else f"{r.at} -" for r in rf.reference)
    then = ", ".join(f"{r.at} {r.service_p50_ms:,.0f} ms" for r in rf.published_reference if r.service_p50_ms)
    return [f"- Sitting: {rf.date}, walked {rf.published_date or '?'}; machine {m.get('cpu_model', '?')}, "
            f"{m.get('cpus_usable', '?')} usable cores, {(m.get('ram_bytes') or 0) / 2**30:.0f} GiB",
            f"- Commit: `{rf.commit or '?'}` (published `{rf.published_commit or '?'}`)",
            *[f"- Differs: {d}" for d in rf.differs],
            f"- Reference cells: this sitting {refs or '-'}; the published sitting {then or '-'}"
            + (f"; speed {rf.speed:.2f}x the published" if rf.speed else "; no speed to normalise by"),
            f"- Spread between sittings: {rf.spread:g} ({rf.spread_basis})"
            + (f"; {rf.walk_s / 60:.0f} min" if rf.walk_s else "")]


def sitting_readme(rf: ReproduceFile) -> str:
    lines = [f"# {rf.published}, reproduced {rf.date}", "", *header(rf), "",
             "| " + " | ".join(HEADERS) + " |", "|" + " --- |" * len(HEADERS),
             *["| " + " | ".join(r) + " |" for r in agreement_rows(rf)], "",
             "Each figure beside the published one: raw is reproduced ÷ published; normalised divides a time by "
             "the sittings' speed (their reference cells); moved: normalised outside the spread.", "",
             "| level | target | figure | published | reproduced | raw | normalised | |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |",
             *["| " + " | ".join(r) + " |" for r in figure_rows(rf)]]
    return "\n".join(lines) + "\n"
