"""What a walk that drops its states (DROP_STATES=1, or a disk too small for them all) drops after each step: the
step's starting states, those its tuned cells cloned and the bases those were aged from (a layout of an option's
own, the simple schema, is built and aged for that option alone), but for one a later step opens (libSQL opens
SQLite's base and aged state), and, where the later steps' states still fit beside them, those the leaf's first engine
clones (its designs that keep the step's layout, a block log, clone the step's aged state; its reorg ages the base):
built again for the leaf, they cost the 11-29 walk 4.7 min."""
from __future__ import annotations

import json

from harness.cell_states import GIB, MARGIN, state_inputs, walk_disk
from harness.state import store
from harness.state.clone import CLONE_RECORD
from harness.walks.verdict.walk import log


def drop_step_states(engine: str, plans: dict, walk, leaf_done: bool = False) -> None:
    """After `engine`'s step (leaf_done: after the leaf, every state of `engine` goes)."""
    engines = list(dict.fromkeys(e for _, e in plans))              # the tree's order
    after = engines[engines.index(engine) + 1:] if engine in engines and not leaf_done else []
    later = {i.id for (_, e), p in plans.items() if e in after for i in state_inputs(p)}
    ids = _states_of(engine, plans, walk) - later
    for_leaf = [] if leaf_done else [i for i in _leaf_states(walk, plans) if i in ids]
    # the later steps' states one at a time, each cell moving its state in where a clone does not fit (a cell
    # decides when its turn comes): what they cannot do without; their clones are guessed high before a build
    _drop_keeping(ids, for_leaf, [p for (_, e), p in plans.items() if e in after], "for the leaf's first engine")


def drop_leaf_engine_states(engine: str, plans: dict, walk) -> None:
    """After the leaf's designs on `engine`: every state of it goes, its designs' own layouts too (2026-12-05: the
    SQLite designs kept ~45 GB and PostgreSQL's state could not be built), but the end's reference cell's where the
    leaf's later engines' states fit beside them (built again, they cost ~4 min at ratio)."""
    from harness.walks.verdict.leaf import designs_in_order
    order = list(dict.fromkeys(e for e, _ in designs_in_order(walk.tree)))
    after = order[order.index(engine) + 1:] if engine in order else []
    ref, scenario = walk.tree.reference, walk.criteria[0].criterion.scenario
    plan = plans.get((scenario, engine)) if ref is not None and ref.engine == engine and walk.headroom_on else None
    ids = _states_of(engine, plans, walk)
    keep = [i.id for i in state_inputs(plan) if i.id in ids] if plan is not None else []
    _drop_keeping(ids, keep, [p for (_, e), p in plans.items() if e in after], "for the end's reference cell")


def _states_of(engine: str, plans: dict, walk) -> set[str]:
    """`engine`'s states: its plans', those its cells cloned (a design's or an option's own layout), and what each
    was aged or derived from, all the way down."""
    root = store.root_dir()
    ids = {store.inputs_for(p).id for (_, e), p in plans.items() if e == engine}
    for r in walk.records:
        record = walk.root / r.scenario / r.dir / CLONE_RECORD
        if r.engine == engine and record.is_file():
            ids.add(json.loads(record.read_text())["state"])
    for i in list(ids):
        while (i := _base_of(root, i)) and i not in ids:
            ids.add(i)
    return ids


def _drop_keeping(ids: set[str], keep: list[str], rest: list, for_what: str) -> None:
    """Drop `ids` but `keep` (in its order, the base first), each kept only while `rest`'s cells still fit beside it."""
    root = store.root_dir()
    for sid in sorted(ids - set(keep)):
        _drop(root, sid, "--drop-states")
    for sid in keep:
        need = walk_disk(rest, root, True).taking + MARGIN
        if (root / sid).exists() and need > store.free_bytes(root):
            _drop(root, sid, f"no room to keep it {for_what}: the later cells need about {need / GIB:.1f} GiB")
        elif (root / sid).exists():
            log(f"kept the state {sid} {for_what}")


def _leaf_states(walk, plans: dict) -> list[str]:
    """The states the leaf's first engine clones at its step's layout (its first criterion's), base first; none
    where the tree has no leaf."""
    plan = next((p for (_, e), p in plans.items() if e in leaf_engine(walk)), None)
    return [i.id for i in state_inputs(plan)] if plan is not None else []


def leaf_engine(walk) -> list[str]:
    """The leaf's first engine, whose states a walk may keep for it: dropped after the walk whether or not the leaf
    ran."""
    from harness.walks.verdict.leaf import designs_in_order
    return [e for e, _ in designs_in_order(walk.tree)[:1]]


def _drop(root, sid: str, why: str) -> None:
    if (root / sid).exists():
        store.remove(root, [sid])
        log(f"dropped the state {sid} ({why})")


def _base_of(root, sid: str) -> str | None:
    """An aged state's base, or a derived state's source, from its manifest (None for a bulk-built state, or a
    state no longer on disk)."""
    man = root / sid / store.MANIFEST
    if not man.is_file():
        return None
    m = json.loads(man.read_text())
    return ((m.get("inputs") or {}).get("aged") or {}).get("base") or m.get("derived_from")


def state_ids(root=None) -> set[str]:
    """Every state on disk now (a walk that drops its states drops, at its end, every one it found missing)."""
    root = root or store.root_dir()
    return {d.name for d in root.iterdir() if d.is_dir()} if root.is_dir() else set()


def drop_new_states(before: set[str]) -> None:
    """At the end of a walk that drops its states: every state it built, whatever built it (a trade-off's base on a
    server engine escaped the drops of 11-29: PostgreSQL's simple schema, 8.4 GiB)."""
    root = store.root_dir()
    for sid in sorted(state_ids(root) - before):
        _drop(root, sid, "--drop-states: built by this walk")


def drop_engine_states(engine: str, plans: dict, walk, before: set[str]) -> None:
    """A reproduction's engine that no later target runs: the states this sitting built for it (its plans', its
    cells' clones and their bases; none it found on disk) go now, not at its end (12-06: PostgreSQL's two states,
    26 GiB, stayed beside SQLite's designs and left 3.2 GB free under a running cell)."""
    root = store.root_dir()
    for sid in sorted(_states_of(engine, plans, walk) - before):
        _drop(root, sid, f"no later target runs {engine}")
