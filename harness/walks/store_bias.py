"""`make store-bias ENGINE= [SCENARIO=p99_5x] [PROFILE=ratio] MEM= [SCALE=] [REPEATS=2] [SET=]`: what the
copy-on-write store (make store) does to a cell's figures. One cell, run on the disk's own filesystem (its state in
STATES, a full copy in DATA) and on the store (a reflinked clone), alternately, REPEATS times each, then compared
as `make compare` compares (medians, store/disk, Welch's t-test over the repeats).

Why: the store is XFS on a loop device over a file on the disk's ext4. Its writes take another path (XFS's log, a
copy-on-write of each page the cell first rewrites, the loop device's direct I/O), so a figure made on it is read
against the disk's through this ratio, never as if it were the disk's. Alternating puts the two arms in the same
minutes of a machine that drifts. Each arm builds its own state (the same inputs, the same rows); resumable: a
cell done is not run again."""
from __future__ import annotations

import contextlib
import json
import os
import sys
from dataclasses import replace
from pathlib import Path

from harness.compare import compare, render
from harness.environment import utc_now
from harness.errors import EXIT_RUN_FAILED, ConfigError
from harness.records import Cell, completed
from harness.report.publish_bias import BIAS_FILE
from harness.results import load_result
from harness.results.headroom import Host
from harness.state import cow_store, store
from harness.walks.sweep import CellOptions, SweepInterrupted, plan_cells, run_cell, sweep_dir_for

ARMS = ("disk", "store")        # A, then B: the ratio is store / disk


def _log(msg: str) -> None:
    print(f"[store-bias] {msg}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def _states_at(root: Path):
    """STATES for the cells run inside (the state store reads it where it is asked: store.root_dir)."""
    was = os.environ.get(store.STATES_ENV)
    os.environ[store.STATES_ENV] = str(root)
    try:
        yield
    finally:
        if was is None:
            os.environ.pop(store.STATES_ENV, None)
        else:
            os.environ[store.STATES_ENV] = was


def arms(opts: CellOptions, mount: Path) -> dict[str, tuple[Path, CellOptions]]:
    """Each arm's states root and cell options: the disk's (STATES, DATA as given) and the store's."""
    disk_states = store.root_dir()
    if cow_store.status(mount) is None:
        raise ConfigError(f"{mount}: no store is mounted there: `make store` first")
    if disk_states.is_relative_to(mount.resolve()) or Path(opts.data_root).resolve().is_relative_to(mount.resolve()):
        raise ConfigError(f"STATES={disk_states}, DATA={opts.data_root}: the disk's arm must be off the store "
                          f"({mount}); leave STATES and DATA unset")
    return {"disk": (disk_states, opts),
            "store": (mount.resolve() / "states", replace(opts, data_root=str(mount.resolve() / "data")))}


def sitting(runs: dict[str, list]) -> dict:
    """When and where the arms ran: each arm's host (its filesystem among it), the machine's boot and the first
    cell's start: what a published bias is read with (a bias moves with the host too)."""
    envs = {arm: [r.environment for r in (load_result(cr.dir / "result.json") for cr in crs) if r is not None]
            for arm, crs in runs.items()}
    every = [e for es in envs.values() for e in es]
    return {"hosts": {arm: Host.of(es[0]).model_dump() for arm, es in envs.items() if es},
            "boot_id": next((e["boot_id"] for e in every if e.get("boot_id")), None),
            "started_utc": min((e["started_utc"] for e in every if e.get("started_utc")), default=None)}


def store_bias(scenario: str, engine: str, mem: str | None, scale: float | None, repeats: int, opts: CellOptions,
               results_root: Path, mount: Path = cow_store.MOUNT, command: str | None = None) -> int:
    if repeats < 2:
        raise ConfigError("REPEATS: at least 2 a side, or no spread to read a bias against")
    opts = replace(opts, profile=opts.profile or "ratio")      # the knees' profile: the store is for theirs
    where = arms(opts, mount)
    root = sweep_dir_for(results_root, "store-bias", f"{Path(scenario).stem}-{engine}",
                         {"scenario": scenario, "engine": engine, "mem": mem, "scale": scale, "repeats": repeats,
                          "opts": opts.asked()})
    cells = [Cell(scenario, engine, mem, scale, r) for r in range(1, repeats + 1)]
    runs = {arm: plan_cells(cells, arm_opts, root / arm, repeats) for arm, (_, arm_opts) in where.items()}
    _log(f"{root}: {engine} {scenario} at MEM {mem or 'none'}, {repeats} runs a side, alternating: disk, store, ...")
    try:
        for r in range(repeats):
            for arm in ARMS:
                cr = runs[arm][r]
                if completed(cr) is None:
                    with _states_at(where[arm][0]):
                        cr.record = run_cell(cr, f"{arm} {r + 1}/{repeats}")
    except SweepInterrupted as e:
        _log(f"interrupted in {e}; run the same command again to resume")
        return EXIT_RUN_FAILED
    cmp = compare(*[[cr.dir for cr in runs[arm]] for arm in ARMS])
    a, b = (f"{arm}: {where[arm][0]}" for arm in ARMS)
    (root / BIAS_FILE).write_text(json.dumps({"scenario": scenario, "engine": engine, "mem": mem, "scale": scale,
                                              "repeats": repeats, "a": a, "b": b, "command": command,
                                              **sitting(runs), "finished_utc": utc_now(), "comparison": cmp}, indent=2))
    (root / "bias.md").write_text(render(cmp, a, b, markdown=True))
    print(render(cmp, a, b, markdown=False), end="")
    print(root / BIAS_FILE)
    return 0
