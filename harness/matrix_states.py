"""A matrix's starting states on a disk that cannot hold them all at once (a 1x PostgreSQL state is 23 GB and
its aged copy as much again). Before the first cell: the disk the matrix needs, said and checked. With
DROP_STATES=1, an option's own states (a layout of its own: page size, indexes, schema) go after the last
cell that clones them; the baseline layout's stay until the matrix is done, since the best combination clones
them too."""
from __future__ import annotations

import sys
from pathlib import Path

from harness.records import CellRun
from harness.state import aged, store

GIB = 2 ** 30


def state_inputs(plan) -> list[store.StateInputs]:
    """The states a cell's plan clones or builds from: its base, and its aged state where it asks for one."""
    base = store.inputs_for(plan)
    return [base, aged.aged_inputs(plan, base)] if aged.wanted(plan) else [base]


def _bytes(root: Path, inputs: store.StateInputs) -> tuple[int, bool]:
    """(its size, whether it is on disk now): an aged state is its base's size, rows added and removed alike."""
    found = store.find(root, inputs)
    if found:
        return found[1].data_bytes, True
    base = inputs.model_copy(update={"aged": None})
    found = store.find(root, base)
    return (found[1].data_bytes if found else store.estimate_bytes(root, base)), False


def disk_needed(runs: list[CellRun], root: Path, drop_states: bool) -> tuple[int, list[str]]:
    """Bytes the matrix needs beyond what is on disk: the states still to build (with DROP_STATES, the
    baseline layout's plus the largest other layout's), plus the largest clone, which exists while its cell
    runs."""
    layouts: dict[tuple[str, ...], int] = {}
    lines, clone, seen = [], 0, set()
    for cr in runs:
        key, build = tuple(i.id for i in state_inputs(cr.plan)), 0
        for inputs in state_inputs(cr.plan):
            size, on_disk = _bytes(root, inputs)
            clone = max(clone, size)
            if not on_disk and inputs.id not in seen:
                build += size
                lines.append(f"state {inputs.id}: about {size / GIB:.1f} GiB to build")
            seen.add(inputs.id)
        layouts[key] = layouts.get(key, 0) + build
    first, *others = list(layouts.values()) or [0]          # the first cell's layout: the baseline's
    states = first + (max(others, default=0) if drop_states else sum(others))
    return states + clone, lines + [f"one clone at a time: up to {clone / GIB:.1f} GiB"]


def check_disk(runs: list[CellRun], drop_states: bool) -> None:
    """Said before the first cell; refused, with the numbers, when it does not fit."""
    root = store.root_dir()
    need, lines = disk_needed(runs, root, drop_states)
    free = store.free_bytes(root)
    print(f"[matrix] disk: needs about {need / GIB:.1f} GiB ({'; '.join(lines)}), {free / GIB:.1f} GiB free"
          + (" (an option's own states dropped after its cells)" if drop_states else ""), file=sys.stderr, flush=True)
    store.require_free(root, need, "the matrix", "DROP_STATES=1 keeps one option's layout at a time, "
                       "`make states-clean` removes cached states")


def dropper(runs: list[CellRun]):
    """A run_cells `stop` hook that never stops: after each cell, the states no later cell clones are
    removed, but for the baseline layout's (the first cell's)."""
    keep = {i.id for i in state_inputs(runs[0].plan)}
    last = {}
    for n, cr in enumerate(runs):
        for inputs in state_inputs(cr.plan):
            last[inputs.id] = n

    def after(record) -> bool:
        n = next((k for k, cr in enumerate(runs) if cr.record is record), None)
        _drop([sid for sid, at in last.items() if at == n and sid not in keep])
        return False
    return after


def drop_all(runs: list[CellRun]) -> None:
    """Once the matrix is done: every state its cells cloned."""
    _drop(list(dict.fromkeys(i.id for cr in runs for i in state_inputs(cr.plan))))


def _drop(ids: list[str]) -> None:
    root = store.root_dir()
    for sid in ids:
        if (root / sid).exists():
            store.remove(root, [sid])
            print(f"[matrix] dropped the state {sid} (DROP_STATES=1): no later cell clones it",
                  file=sys.stderr, flush=True)
