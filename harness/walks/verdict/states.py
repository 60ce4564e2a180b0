"""What a walk that drops its states (DROP_STATES=1, or a disk too small for them all) drops after each step: the
step's starting states, those its tuned cells cloned and the bases those were aged from (a layout of an option's
own, the simple schema, is built and aged for that option alone), but for one a later step opens (libSQL opens
SQLite's base)."""
from __future__ import annotations

import json

from harness.state import store
from harness.state.clone import CLONE_RECORD
from harness.walks.verdict.walk import log


def drop_step_states(engine: str, plans: dict, walk, leaf_done: bool = False) -> None:
    """After `engine`'s step (leaf_done: after the leaf, every state of `engine` goes)."""
    root = store.root_dir()
    engines = list(dict.fromkeys(e for _, e in plans))              # the tree's order
    after = engines[engines.index(engine) + 1:] if engine in engines and not leaf_done else []
    later = {store.inputs_for(p).id for (_, e), p in plans.items() if e in after}
    ids = {store.inputs_for(p).id for (_, e), p in plans.items() if e == engine}
    for r in walk.records:
        record = walk.root / r.scenario / r.dir / CLONE_RECORD
        if r.engine == engine and record.is_file():
            ids.add(json.loads(record.read_text())["state"])
    ids |= {b for i in list(ids) if (b := _base_of(root, i))}
    for sid in sorted(ids - later):
        if (root / sid).exists():
            store.remove(root, [sid])
            log(f"dropped the state {sid} (--drop-states)")


def _base_of(root, sid: str) -> str | None:
    """An aged state's base, from its manifest (None for a base, or a state no longer on disk)."""
    man = root / sid / store.MANIFEST
    if not man.is_file():
        return None
    return ((json.loads(man.read_text()).get("inputs") or {}).get("aged") or {}).get("base")
