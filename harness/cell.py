"""One cell, as `make run` and every sweep, verdict, ceiling and bench run it: its starting state built if
missing and cloned cold into the data directory, the block feed started here (outside any limit), and the
runner run where the plan says (harness/runtime: a local cgroup or the engine's containers). A state that
cannot be built is a result of its own (build_failed), never a run of the cell."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from harness.environment import fsync_floor
from harness.errors import EXIT_RUN_FAILED, ConfigError
from harness.feed.server import FeedServer
from harness.platform import watch
from harness.results import load_result, write_json
from harness.runner.outcome import write_failed_result
from harness.runtime.docker import CONTAINER_UID, run_docker
from harness.runtime.local import run_local
from harness.scenario.plan import StateRef
from harness.state import continued, pack, sizes, store
from harness.state.build import StateBuildFailed, ensure
from harness.state.clone import CLONE_RECORD, clone, fingerprint, link, release, take


def uses_state(plan) -> bool:
    """The cell starts from a state (not an organic load, nor an empty database)."""
    return plan.load.method == "state" and bool(plan.load_entities or plan.workload.dc)


def start_state(plan):
    """The plan with its cloned state (unchanged for an organic load). Raises StateBuildFailed."""
    if not uses_state(plan):
        return plan
    owner = None
    if plan.runtime == "docker" and os.geteuid() == 0:
        owner = CONTAINER_UID
    try:
        d, man, built_now = continued_state(plan) if plan.continue_from else ensure(plan)
        # linked first: a link takes no room, so a read ceiling's steps never move in (and rebuild) a state
        # that has no room for a copy beside it (the 2-DC state, 32.8 GiB, rebuilt for every step on 12-06)
        linked = link(d / store.DATA, Path(plan.data_dir)) \
            if owner is None and not plan.take_state and reads_only(plan, man) else None
        if linked is None and not plan.take_state and not sizes.clone_fits(plan, man.data_bytes, d.parent):
            plan = no_room_for_clone(plan, d, man)
        c, prints = linked or (None, None)
        if plan.take_state:
            with store.lock(d.parent, man.id):
                d, c = take(d, Path(plan.data_dir), owner)
        elif c is None:
            c = clone(d / store.DATA, Path(plan.data_dir), owner)
    except store.NoRoom as e:        # this cell's state does not fit the disk: a result, not the walk's end
        raise StateBuildFailed(str(e)) from e
    aged_blocks = int(man.inputs.aged["blocks"]) if man.inputs.aged else 0
    if man.continued:           # its first cell aged it: the feed ages it no further
        aged_blocks = max(aged_blocks, plan.load.age_blocks)
    print(f"[state] {'took' if c.method == 'move' else 'cloned'} {man.id} ({c.bytes / 2**30:.2f} GiB, {c.method}) "
          f"in {c.clone_s:.1f} s, page cache evicted in {c.evict_s:.1f} s", flush=True, file=sys.stderr)
    run_dir = Path(plan.run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / CLONE_RECORD).write_text(json.dumps(
        {"state": man.id, "state_built_now": built_now, "clone_s": c.clone_s, "clone_method": c.method,
         "clone_bytes": c.bytes, "evict_s": c.evict_s, "build_method": man.method, "build_s": man.build_s,
         "build_rows_per_s": man.rows_per_s, "build_only_settings": man.build_only_settings,
         "state_aged_blocks": aged_blocks, "state_continued": man.continued, "state_dir": str(d),
         "linked_files": prints}, indent=2))
    return plan.model_copy(update={"state": StateRef(id=man.id, model=str(d / store.MODEL), aged_blocks=aged_blocks)})


def continued_state(plan):
    """The continued state the plan names (state/continued.py), taken whole: never built here."""
    found = continued.find(store.root_dir(), continued.origin_of(plan.continue_from))
    if found is None or found[1].id != plan.continue_from or not plan.take_state:
        raise StateBuildFailed(f"the continued state {plan.continue_from} is not on disk to take")
    return (*found, False)


def no_room_for_clone(plan, d: Path, man):
    """Where a clone and this cell's writes do not fit beside the state: the state packed, where that makes room
    (pack.py: it stays for the next cell, each unpacking a full copy), else moved in (the next cell that needs it
    builds it again: ~4 min at 1x, ~18 at 5x)."""
    if not pack.is_packed(d) and sizes.pack_fits(plan, man.data_bytes, d.parent):
        with store.lock(d.parent, man.id):
            done = pack.record(d) or pack.pack(d)
        print(f"[state] no room for a clone of {man.id} ({man.data_bytes / 2**30:.2f} GiB) and this cell's writes "
              f"beside it: {done.says()}; each cell unpacks it", flush=True, file=sys.stderr)
        return plan
    print(f"[state] no room for a clone of {man.id} ({man.data_bytes / 2**30:.2f} GiB) and this cell's writes "
          "beside it: moved in; the next cell that needs it builds it again", flush=True, file=sys.stderr)
    return plan.model_copy(update={"take_state": True})


def reads_only(plan, man) -> bool:
    """The cell writes nothing to its database (no blocks, no ageing left after its state's) and its engine's
    reads leave the files as they were: it may read the state's own files, linked."""
    aged = int(man.inputs.aged["blocks"]) if man.inputs.aged else 0
    return (plan.capabilities.reads_keep_files and not plan.workload.writes and not plan.workload.crash
            and plan.load.age_blocks <= aged)


def check_linked(plan) -> None:
    """After a cell that read its state's files linked: they must be as they were. If not, the state is no longer
    what was built (removed: the next cell builds it again) and the cell is an error saying so."""
    record = Path(plan.run_dir) / CLONE_RECORD
    rec = json.loads(record.read_text()) if record.is_file() else {}
    if not rec.get("linked_files"):
        return
    state = Path(rec["state_dir"])
    if fingerprint(state / store.DATA) == rec["linked_files"]:
        return
    store.remove(state.parent, [rec["state"]])
    why = (f"the state {rec['state']}'s files changed under a cell that only reads them (linked, not copied): "
           "the state is removed and built again by the next cell; this cell is no measurement of it")
    print(f"[state] {why}", flush=True, file=sys.stderr)
    path = Path(plan.run_dir) / "result.json"
    r = load_result(path)
    if r is not None:
        write_json(path, r.model_copy(update={"status": "error", "error": why}))


def build_failed(plan, e: StateBuildFailed) -> int:
    Path(plan.run_dir).mkdir(parents=True, exist_ok=True)
    # the build ran outside the limit: its out-of-memory is no measurement of the cell's MEM
    write_failed_result(plan, "build_failed", f"{str(e)}{' (out of memory)' if e.oom and 'memory' not in str(e).lower() else ''}")
    return EXIT_RUN_FAILED


def execute(plan) -> int:
    """The cell's exit code (docs/design.md); its result.json is in plan.run_dir."""
    if plan.workload.crash:
        from harness.crash.driver import check
        check(plan)
    try:
        plan = start_state(plan)
    except StateBuildFailed as e:
        return build_failed(plan, e)
    start = watch.snapshot(containers_are_own=plan.runtime == "docker")
    try:
        if plan.workload.crash:           # its own blocks and lives, no feed (harness/crash/)
            from harness.crash.driver import run_crash
            return run_crash(plan)
        with FeedServer.for_plan(plan):
            if plan.runtime == "docker":
                return run_docker(plan)
            return run_local(plan)
    finally:
        record_watch(plan, start)
        check_linked(plan)
        if plan.keep_continued:
            continued.keep(plan)
        if plan.take_state and plan.state:
            release(Path(plan.state.model).parent)


def record_watch(plan, start) -> None:
    """What else the machine did while the cell ran, and the disk probed again at its end, in its result.json
    (environment.watch): a walk runs again a cell measured beside other load."""
    end = watch.snapshot(containers_are_own=plan.runtime == "docker")
    path = Path(plan.run_dir) / "result.json"
    try:
        r = load_result(path)
    except ConfigError:      # a result this harness cannot read is the walk's to refuse, not ours
        return
    if r is None:
        return
    seen = {"outside_cpu_cores": watch.outside_cores(start, end), "wall_s": round(end.at_s - start.at_s, 1),
            "method": watch.METHOD, "fsync_floor_end": fsync_floor(Path(plan.data_dir).parent)}
    write_json(path, r.model_copy(update={"environment": {**r.environment, "watch": seen}}))
