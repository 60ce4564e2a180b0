"""A state's size measured, not guessed, before a disk check refuses on the guess: the same layout built at a
tenth of its entities (sizes.NEAR_SHARE, the furthest a build may size another from), its bytes per entity
kept in the ledger (sizes.remember), the probe removed. The shape's guess errs high by design (18.1 GiB for a
1x current ∪ history state of 7.6 GiB): on a fresh clone it refused a 5x state the disk holds, where the only
other way was to build the state at 1x first by hand."""
from __future__ import annotations

import math
import sys

from harness.state import sizes, store


def _probe_plan(plan):
    """The plan's base layout at a tenth of its entities: the same settings, schema and shape."""
    entities = math.ceil(plan.load_entities / sizes.NEAR_SHARE)
    return plan.model_copy(update={"load_entities": entities, "take_state": False, "take_base_state": False})


def guessed(plans: list) -> list:
    """Of plans that start from a state (cell.uses_state), one per base state whose size is the shape's guess (no
    build of its layout near its size), DC states aside (their seed is sized apart)."""
    root, seen, out = store.root_dir(), set(), []
    for plan in plans:
        inputs = store.inputs_for(plan)
        if inputs.dc or inputs.entities < sizes.NEAR_SHARE or inputs.id in seen:
            continue
        seen.add(inputs.id)
        if sizes.is_guess(root, inputs):
            out.append(plan)
    return out


def measure(plan, who: str) -> int:
    """Builds the plan's layout at a tenth of its entities, keeps its bytes per entity in the ledger, removes
    it; returns its bytes. Its own build refuses first where even the probe does not fit."""
    from harness.state.build import ensure
    root, probe = store.root_dir(), _probe_plan(plan)
    inputs = store.inputs_for(probe)
    on_disk = store.find(root, inputs) is not None
    print(f"[{who}] disk: {plan.engine} {plan.workload.variant}'s size at {plan.load_entities} entities is the shape's "
          f"guess (no build near it yet): measuring it at {probe.load_entities} entities", file=sys.stderr, flush=True)
    _, man, _ = ensure(probe, root, aged_ok=False)
    sizes.remember(root, man)           # a probe found on disk (built by a walk) sizes the state too
    if not on_disk:
        store.remove(root, [inputs.id])
    per_entity = man.data_bytes / man.inputs.entities
    print(f"[{who}] disk: {man.data_bytes / 2**30:.2f} GiB at {man.inputs.entities} entities "
          f"({per_entity:,.0f} B per entity) sizes it", file=sys.stderr, flush=True)
    return man.data_bytes
