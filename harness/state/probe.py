"""A state's size measured, not guessed, before a disk check refuses on the guess: the same layout built at a
tenth of its entities (sizes.NEAR_SHARE, the furthest a build may size another from), its bytes per entity
kept in the ledger (sizes.remember), the probe removed; a DC seed beside mendoza is probed apart, alone. The
shape's guess errs high by design (18.1 GiB for a 1x current ∪ history state of 7.6 GiB; 2x for a DC seed): on
a fresh clone it refused a 5x state the disk holds, where the only other way was to build the state at 1x first
by hand."""
from __future__ import annotations

import math
import sys

from harness.state import sizes, store


def _probe_plans(plan) -> list:
    """The plan's base layout at a tenth of its size, one probe per part whose size is the guess: mendoza's
    entities alone (a tenth of them) and the DC seed alone (a tenth of its fraction), the same settings and
    schema: a DC beside mendoza is sized by the two apart (sizes.remember keeps each)."""
    root, inputs = store.root_dir(), store.inputs_for(plan)
    plain = {"take_state": False, "take_base_state": False}
    out = []
    if inputs.entities >= sizes.NEAR_SHARE and sizes.mendoza_guessed(root, inputs):
        out.append(plan.model_copy(update={**plain, "load_entities": math.ceil(plan.load_entities / sizes.NEAR_SHARE),
                                           "workload": plan.workload.model_copy(update={"dc": None})}))
    if sizes.dc_guessed(root, inputs):
        dc = plan.workload.dc
        out.append(plan.model_copy(update={**plain, "load_entities": 0, "workload": plan.workload.model_copy(
            update={"dc": dc.model_copy(update={"fraction": dc.fraction / sizes.NEAR_SHARE})})}))
    return out


def guessed(plans: list) -> list:
    """Of plans that start from a state (cell.uses_state), one per base state whose size is the shape's guess (no
    build of its layout near its size), for mendoza's entities or its DC seed."""
    root, seen, out = store.root_dir(), set(), []
    for plan in plans:
        inputs = store.inputs_for(plan)
        if inputs.id in seen:
            continue
        seen.add(inputs.id)
        if sizes.is_guess(root, inputs) and _probe_plans(plan):
            out.append(plan)
    return out


def measure(plan, who: str) -> int:
    """Builds the plan's layout at a tenth of its size (each guessed part apart), keeps its bytes per entity
    version in the ledger, removes it; returns the bytes built. Its own build refuses first where even the probe
    does not fit."""
    from harness.state.build import ensure
    root, built = store.root_dir(), 0
    for probe in _probe_plans(plan):
        inputs = store.inputs_for(probe)
        on_disk = store.find(root, inputs) is not None
        what = f"{probe.load_entities} entities" if probe.load_entities else \
            f"its DC seed alone at {probe.workload.dc.fraction:g} of a DC"
        print(f"[{who}] disk: {plan.engine} {plan.workload.variant}'s size is the shape's guess (no build near it "
              f"yet): measuring it at {what}", file=sys.stderr, flush=True)
        _, man, _ = ensure(probe, root, aged_ok=False)
        sizes.remember(root, man)           # a probe found on disk (built by a walk) sizes the state too
        if not on_disk:
            store.remove(root, [inputs.id])
        print(f"[{who}] disk: {man.data_bytes / 2**30:.2f} GiB at {what} "
              f"({man.data_bytes / max(1, sizes.all_versions(man.inputs)):,.0f} B per "
              "entity version) sizes it", file=sys.stderr, flush=True)
        built += man.data_bytes
    return built
