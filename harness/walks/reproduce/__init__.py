"""`make reproduce RUN=docs/results/<dir>`: a published verdict's answers measured again in this sitting, on this
machine (issue 77). A verdict is a claim about the next day, and the variance that reverses one lives between
sittings (Kalibera & Jones), so a published answer counts for as many sittings as it held in. It walks the published
decision file at the published profile, levels and durability, with the reference cell at its start, between levels
and at its end, and runs only the targets targets.py reads from the published verdict: each level's answer as the
walk measured it and the rejected alternative closest to its line. Per level: agreed, disagreed (which label, on
which figure) or disturbed; each figure beside the published one (judge.py). The sitting is kept under the published
folder and its README says "held in k of n sittings" (sittings.py). Resumable: the same command the same day goes on
from the cells it has; exit 0 every level agreed, 1 one disagreed, 3 one disturbed or unmeasured, 2 not a verdict."""
from __future__ import annotations

import gzip
import json
import subprocess
import sys
import time
import uuid
from dataclasses import replace
from pathlib import Path

import yaml

from harness.environment import utc_now
from harness.errors import EXIT_RUN_FAILED, ConfigError
from harness.provenance import PROJECT_DIR, code_digest, git_commit, measuring_files
from harness.results import VerdictFile, load_result, load_verdict
from harness.results.headroom import Host
from harness.results.reproduce import ReproduceFile, Target
from harness.scenario.decision import DECISION_FILE
from harness.walks.reproduce import judge
from harness.walks.reproduce.measure import measure
from harness.walks.reproduce.sittings import agreement_rows, header, keep, update_readme, update_record, update_report
from harness.walks.reproduce.targets import published_cost, targets
from harness.walks.sweep import CellOptions, SweepInterrupted
from harness.walks.verdict import fit_disk, pinned_runtime, prepare
from harness.walks.verdict.headroom import reference_cell
from harness.walks.verdict.states import drop_engine_states, drop_new_states, state_ids
from harness.walks.verdict.walk import Walk

BAND_WITHOUT_REFERENCE = 1.15      # a decision file with no reference: the band decision.yaml's reference gives


def log(msg: str) -> None:
    print(f"[reproduce] {msg}", file=sys.stderr, flush=True)


def published_verdict(folder: Path) -> VerdictFile:
    """The published verdict in `folder`, or a one-line refusal (exit 2)."""
    path = folder / "verdict.json"
    if not path.is_file():
        raise ConfigError(f"{folder}: not a published verdict (no verdict.json): RUN= must be a folder `make publish` "
                          "wrote under docs/results/")
    v = load_verdict(path)
    if v is None or v.verdict is None or not v.answers:
        raise ConfigError(f"{path}: a verdict with no answers (its walk had not ended): nothing to reproduce")
    return v


def differences(folder: Path, v: VerdictFile) -> list[str]:
    """What this sitting runs that the published walk did not: its commit and measuring code, its decision file."""
    out = []
    then = (folder / "commit").read_text().strip() if (folder / "commit").is_file() else None
    now = git_commit()
    if then and now and then != now:
        digests = {r.engine: r.code_digest for r in v.cells if r.code_digest}
        moved = [e for e, d in sorted(digests.items()) if code_digest(e) != d]
        files = _changed_measuring(then, moved)
        out.append(f"the code: this sitting runs {now[:12]}, the walk ran {then[:12]}; "
                   + (f"the measuring code differs for {', '.join(moved)}"
                      + (f" ({', '.join(files)})" if files else "") if moved else
                      "the measuring code is the same (every engine's digest matches): only walks, report or docs"))
    published = folder / "decision.yaml"
    if not published.is_file():
        out.append(f"no decision file was published: this sitting walks {DECISION_FILE.name} as it is now")
    elif published.read_text() != DECISION_FILE.read_text():
        a, b = yaml.safe_load(published.read_text()) or {}, yaml.safe_load(DECISION_FILE.read_text()) or {}
        keys = sorted(k for k in {*a, *b} if a.get(k) != b.get(k))
        out.append(f"scenarios/decision.yaml differs from the published one ({', '.join(keys) or 'comments only'}): "
                   "this sitting walks the published one")
    return out


def published_host(folder: Path) -> Host | None:
    """The host the published walk ran on: its first kept cell's environment."""
    for f in sorted((folder / "cells").glob("*/*/result.json.gz")):
        return Host.of(json.loads(gzip.decompress(f.read_bytes())).get("environment", {}))
    return None


def host_differs(then: Host | None, now: Host, band: float) -> str | None:
    """'the host: ...' where the CPU model, kernel or runtime differ, the data's filesystem (where both kept it:
    the store's XFS on a loop device is not ext4), or the disk's bandwidth moved past the band."""
    if then is None:
        return None
    disk = then.disk_write_mib_per_s and now.disk_write_mib_per_s and \
        not (1 / band <= now.disk_write_mib_per_s / then.disk_write_mib_per_s <= band)
    fs = then.filesystem and now.filesystem and then.filesystem != now.filesystem
    what = [n for n, a, b in (("CPU model", then.cpu_model, now.cpu_model), ("kernel", then.kernel, now.kernel),
                              ("runtime", then.runtime, now.runtime)) if a != b]
    what += (["disk bandwidth"] if disk else []) + (["filesystem"] if fs else [])
    if not what:
        return None
    return f"the host ({', '.join(what)}): this sitting {now.says()}; the walk {then.says()}"


def published_runtime(folder: Path) -> str | None:
    """The runtime every published cell ran in (local or docker), or None where they differ or none was kept: a
    reproduction measures the same process layout unless told otherwise."""
    seen = {json.loads(gzip.decompress(f.read_bytes())).get("environment", {}).get("runtime")
            for f in (folder / "cells").glob("*/*/result.json.gz")}
    return seen.pop() if len(seen) == 1 and None not in seen else None


def _changed_measuring(then: str, engines: list[str]) -> list[str]:
    """The measuring files of `engines` that changed since the published commit (git), so a reader sees whether
    the digests moved with what a cell measures or with a result file's schema; [] where git cannot say."""
    mine = {f.relative_to(PROJECT_DIR).as_posix() for e in engines for f in measuring_files(e)}
    try:
        out = subprocess.run(["git", "-C", str(PROJECT_DIR), "diff", "--name-only", then.removesuffix("-dirty"),
                              "HEAD"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return []
    return sorted(set(out.stdout.split()) & mine) if out.returncode == 0 else []


def reproduce(folder: Path, opts: CellOptions, results_root: Path) -> int:
    started = time.monotonic()
    v = published_verdict(folder)
    differs = differences(folder, v)
    for d in differs:
        log(f"differs: {d}")
    decision = folder / "decision.yaml" if (folder / "decision.yaml").is_file() else DECISION_FILE
    opts = replace(opts, duration_s=v.asked.get("duration_s"), early_abort=v.asked.get("early_abort", True))
    if opts.runtime == "auto" and (ran := published_runtime(folder)):
        log(f"RUNTIME={ran}: where every published cell ran (RUNTIME= to choose)")
        opts = replace(opts, runtime=ran)
    if not v.asked:
        log("the walk's cell options were not recorded (verdict.json before v8): its profile's phases, early abort on")
    pre = prepare(v.profile, v.mems, opts, results_root, decision_path=decision, durability=v.durability, here=False)
    date = utc_now()[:10]
    root = (results_root / f"reproduce-{folder.name}-{date}").resolve()
    root.mkdir(parents=True, exist_ok=True)
    todo = targets(v)
    engines = {t.engine for t in todo} | ({pre.tree.reference.engine} if pre.tree.reference else set())
    plans = [p for (_, engine), p in pre.plans.items() if engine in engines]     # only the states it will clone
    run_opts = pinned_runtime(pre.opts, plans[0], root)
    # where the disk cannot hold every state it may build, those it built go at its end (said there); each cell
    # still clones its state where a clone fits when it starts, and moves it in only where none does (cell.py)
    drop, before = fit_disk(plans, False), state_ids()
    walk = Walk(pre.tree, pre.mems, pre.criteria, run_opts, root, started=started)
    log(f"{root}: reproducing {folder.name} ({len(todo)} targets: "
        + "; ".join(f"{t.level} {t.role} {t.says} at {t.mem}" for t in todo) + ")")
    names, minutes = published_cost(v, todo)
    log(f"about {minutes:.0f} min: what the published walk spent on these {len(names)} cells and its reference "
        "cells (the states built before the first cell apart; a cell this sitting has already run is reused)")
    try:
        done = _run(walk, todo, v, lambda engine: drop_engine_states(engine, pre.plans, walk, before) if drop
                    else None)
    except SweepInterrupted as e:
        print(f"[reproduce] interrupted in cell {e}; run the same command again to resume", file=sys.stderr)
        return EXIT_RUN_FAILED
    if drop:
        drop_new_states(before)
    rf = _judged(folder, v, walk, done, differs, date, started)
    dest = keep(folder, rf, root, walk.records)
    rewrite(folder, v)
    print("\n".join(header(rf)), file=sys.stderr)
    for mem, outcome, says, moved in agreement_rows(rf):
        print(f"{mem}: {outcome.upper()}: {says}" + (f"\n  moved: {moved}" if moved != "-" else ""), file=sys.stderr)
    print(dest / "reproduce.json")
    return judge.exit_code(rf.levels)


def rewrite(folder: Path, v: VerdictFile | None = None) -> None:
    """The published folder's record written again from its sittings kept, nothing measured: verdict.json's answers,
    the README's answer table and section of sittings, report.md's answer table (`make reproduce RUN= REWRITE=1`,
    after a change to how they are said)."""
    v = update_record(folder, v or published_verdict(folder))
    update_readme(folder, v)
    update_report(folder, v)


def _run(walk: Walk, todo: list[Target], v: VerdictFile, done_with) -> list[Target]:
    """The targets level by level, a reference cell at the start, between levels and at the end; done_with(engine)
    once no later target and no reference cell runs that engine."""
    on = walk.tree.reference is not None
    order = [t for mem in dict.fromkeys(t.level for t in todo) for t in todo if t.level == mem]
    if on:
        reference_cell(walk, "start")
    cache: dict = {}
    out = []
    for i, t in enumerate(order):
        log(f"{t.level}: {t.role}, {t.says} at {t.mem} (published: {t.published})")
        out.append(measure(walk, t, cache, v))
        log(f"{t.level}: {t.role}, {t.says} at {t.mem}: {out[-1].reproduced} (published: {t.published})")
        rest = order[i + 1:]
        if t.engine not in {u.engine for u in rest} and not (on and walk.tree.reference.engine == t.engine):
            done_with(t.engine)
        if on and rest and rest[0].level != t.level:
            reference_cell(walk, f"after {t.level}")
    if on:
        reference_cell(walk, "end")
    return out


def sitting_id(root: Path) -> str:
    """What tells a resumed sitting from a later one: an id its results folder keeps from its first start. Its path
    alone did not (results/reproduce-<folder>-<date> on a fresh machine the same day: 12-06's Intel sitting was
    taken for the AMD one's resumption and written over it)."""
    f = root / "sitting_id"
    if not f.is_file():
        root.mkdir(parents=True, exist_ok=True)
        f.write_text(uuid.uuid4().hex[:12])
    return f.read_text().strip()


def _judged(folder: Path, v: VerdictFile, walk: Walk, done: list[Target], differs: list[str], date: str,
            started: float) -> ReproduceFile:
    within = walk.tree.reference.within_sitting if walk.tree.reference else BAND_WITHOUT_REFERENCE
    speed = judge.speed(walk.reference, v.reference)
    band, basis = judge.spread(within, walk.reference, v.reference)
    done = [t.model_copy(update={"figures": [judge.compared(f, speed, band) for f in t.figures]}) for t in done]
    levels = [judge.level(a.mem, a.decision, [t for t in done if t.level == a.mem]) for a in v.answers]
    first = next((load_result(walk.root / c.scenario / c.dir / "result.json") for t in done for c in t.cells), None)
    env = first.environment if first is not None else {}
    host = host_differs(published_host(folder), Host.of(env), within)
    differs = differs + ([host] if host else [])
    commit_file = folder / "commit"
    return ReproduceFile(
        published=folder.name, run_id=sitting_id(walk.root),
        published_commit=commit_file.read_text().strip() if commit_file.is_file() else None,
        commit=git_commit(), differs=differs, date=date,
        published_date=(v.updated_utc or "")[:10] or None,
        machine={k: env.get(k) for k in ("cpu_model", "cpus_usable", "ram_bytes", "kernel")},
        reference=walk.reference, published_reference=v.reference, speed=speed, spread=band, spread_basis=basis,
        targets=done, levels=levels, walk_s=round(time.monotonic() - started, 1), updated_utc=utc_now())
