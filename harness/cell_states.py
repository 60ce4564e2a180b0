"""A walk's starting states on a disk that cannot hold them all at once (a 1x PostgreSQL state is 22 GiB and
its aged copy as much again; a 5x SQLite state ~50 GB). Before the first cell: the disk the walk needs, said
and checked. With DROP_STATES=1, the last cell to clone a state moves its data in instead (mark_takes), an
aged state takes its base by rename where no later cell needs the base, and between cells: the next cell's
states are built, then a base state goes as soon as every aged state still to be cloned from it is on disk
(cells clone aged states only) and no state still to be derived reads it, and a state after the last cell
that clones it. A matrix keeps its baseline layout's aged state until it is done, since the best combination
clones it too: so at most the baseline's aged state, one other layout's base and aged, or its aged and a
clone, are on disk at once (and the baseline's base while a state derives from it). Where even one clone
does not fit beside its state, every cell moves its state in and the next cell that needs it builds it
again (walk_disk)."""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from harness.cell import uses_state
from harness.errors import ConfigError
from harness.records import CellRun, completed
from harness.state import aged, pack, probe, sizes, store
from harness.state.clone import shares_extents

GIB = 2 ** 30


def state_inputs(plan) -> list[store.StateInputs]:
    """The states a cell's plan clones or builds from: its base, and its aged state where it asks for one (one
    indexed after its ageing, aged.indexed_after: the base and the aged state without the indexes, then it)."""
    base = store.inputs_for(plan)
    if not aged.wanted(plan):
        return [base]
    if aged.indexed_after(plan):
        src = aged.unindexed(plan)
        return [*state_inputs(src), aged.aged_inputs(plan, base)]
    return [base, aged.aged_inputs(plan, base)]


def uses(plan) -> list[str]:
    """The ids a cell's plan needs on disk when its turn comes: its states, and the one its state derives from
    (derive.py) while that derivation is still to be made."""
    from harness.state import derive
    return [i.id for i in state_inputs(plan)] + [s.id for s in derive.sources(plan)]


def _bytes(root: Path, inputs: store.StateInputs) -> tuple[int, bool]:
    """(its size, whether it is on disk now): an aged state is its base's size, rows added and removed alike."""
    found = store.find(root, inputs)
    if found:
        return found[1].data_bytes, True
    base = inputs.model_copy(update={"aged": None})
    found = store.find(root, base)
    return (found[1].data_bytes if found else sizes.estimate_bytes(root, base)), False


def disk_needed(runs: list[CellRun], root: Path, drop_states: bool) -> tuple[int, list[str]]:
    """Bytes the matrix needs beyond what is on disk: the states still to build, plus the largest clone, which
    exists while its cell runs. With DROP_STATES, the peak of dropper's order: the baseline's aged state, and
    beside it its own base and a clone, or another layout's base and aged state (and the baseline's base, where
    that layout derives from it), or that aged state and a clone."""
    from harness.state import derive
    layouts: dict[tuple[str, ...], list[int]] = {}          # per layout: [base, aged] bytes still to build
    lines, clone, seen, from_first = [], 0, set(), set()     # and the layouts derived from the first one's base
    first_base_id = state_inputs(runs[0].plan)[0].id if runs else None
    for cr in runs:
        inputs_list = state_inputs(cr.plan)
        sizes = layouts.setdefault(tuple(i.id for i in inputs_list), [0, 0])
        if any(s.id == first_base_id for s in derive.sources(cr.plan)):
            from_first.add(tuple(i.id for i in inputs_list))
        for k, inputs in enumerate(inputs_list):
            size, on_disk = _bytes(root, inputs)
            clone = max(clone, size)
            if not on_disk and inputs.id not in seen:
                sizes[min(k, 1)] += size        # an aged state's source (indexed after) counts as aged
                lines.append(f"state {inputs.id}: about {size / GIB:.1f} GiB to build")
            seen.add(inputs.id)
    (_, (first_base, first_aged)), *others = list(layouts.items()) or [((), [0, 0])]   # the first: the baseline's
    if drop_states:       # a layout derived from the baseline's base has that base beside it while it is made
        peaks = [b + a + (first_base if key in from_first else 0) for key, (b, a) in others]
        need = first_aged + max(first_base + clone, *peaks, *(a + clone for _, (_, a) in others))
    else:
        need = first_base + first_aged + sum(b + a for _, (b, a) in others) + clone
    return need, lines + [f"one clone at a time: up to {clone / GIB:.1f} GiB"]


def check_disk(runs: list[CellRun], drop_states: bool) -> None:
    """Said before the first cell; refused, with the numbers, when it does not fit."""
    root = store.root_dir()
    need, lines = disk_needed(runs, root, drop_states)
    free = store.free_bytes(root)
    print(f"[matrix] disk: needs about {need / GIB:.1f} GiB ({'; '.join(lines)}), {free / GIB:.1f} GiB free"
          + (" (an option's own states dropped after its cells)" if drop_states else ""), file=sys.stderr, flush=True)
    store.require_free(root, need, "the matrix", "DROP_STATES=1 keeps one option's layout at a time, "
                       "`make states-clean` removes cached states")


MARGIN = store.MARGIN_BYTES       # what store.require_free keeps free beyond a need
_HINT = ("DROP_STATES=1 keeps one state at a time, and where a clone does not fit beside it each cell moves its "
         "state in; `make states-clean` removes cached states")


@dataclass(frozen=True)
class DiskNeed:
    cloning: int          # bytes beyond what is on disk, every cell cloning its state
    taking: int           # every cell moving its state in, the next building it again (DROP_STATES=1)
    lines: list[str]
    packing: int = 0      # every cell cloning, the largest state it clones kept packed (pack.py)


def walk_disk(plans: list, root: Path, drop_states: bool) -> DiskNeed:
    """What a sweep's or a verdict's cells need beyond what is on disk: the states still to build (with
    DROP_STATES one layout at a time, the largest), the largest clone, and the largest cell's writes. Taking
    instead, a cell's states are built again once the one before has moved them in and gone, an aged state
    taking its base by rename: the largest state still to build, and its writes."""
    layouts: dict[str, int] = {}                   # per base state: bytes of its states still to build
    lines, clone, growth, one_cell, seen, saving = [], 0, 0, 0, set(), 0
    for plan in filter(uses_state, plans):
        inputs_list, cell = state_inputs(plan), 0
        if len(inputs_list) > 1 and _bytes(root, inputs_list[-1])[1]:
            inputs_list = inputs_list[-1:]           # its aged state is on disk: its base is not needed
        for inputs in inputs_list:
            size, on_disk = _bytes(root, inputs)
            if not on_disk:           # taking, an aged state takes its base: the two are never on disk together
                cell = max(cell, size)
                if inputs.id not in seen:
                    layouts[inputs_list[0].id] = layouts.get(inputs_list[0].id, 0) + size
                    lines.append(f"state {inputs.id}: about {size / GIB:.1f} GiB to build")
            seen.add(inputs.id)
        # the state its cell clones (the last), packed where its clone does not fit: its bytes less its packed share
        if not pack.is_packed(root / inputs_list[-1].id):
            saving = max(saving, size - sizes.packed_bytes(size))
        writes = sizes.growth_bytes(plan, size)
        shares = shares_extents(root, Path(plan.data_dir))          # a copy-on-write store (make store)
        clone, one_cell = max(clone, sizes.clone_bytes(size, writes, shares)), max(one_cell, cell)
        growth = max(growth, writes)
    states = max(layouts.values(), default=0) if drop_states else sum(layouts.values())
    lines += [f"one clone at a time: up to {clone / GIB:.1f} GiB",
              f"a cell's writes: up to about {growth / GIB:.1f} GiB"]
    return DiskNeed(states + clone + growth, one_cell + growth, lines, states + clone + growth - saving)


def check_walk_disk(plans: list, drop_states: bool, who: str, skip_later: bool = False, takes: bool = False) -> bool:
    """Said before the first cell is planned to run; refused, with the numbers, when it does not fit. Returns
    takes: whether every cell moves its state in. Where a clone may not fit (DROP_STATES=1), each cell decides
    when it starts (clone_fits).
    skip_later (a verdict, with DROP_STATES=1): an engine after the first whose states do not fit even one at
    a time is said, not refused: its cells record build_failed (no room), which leaves a MEM inconclusive only
    if the walk reaches it there. takes: every cell moves its state in whatever the room (make run's one)."""
    root = store.root_dir()
    free = store.free_bytes(root)
    if skip_later and drop_states:
        plans = _fitting(plans, root, free, who)
    need = _need(plans, root, drop_states, takes)
    least = need.taking if drop_states else need.cloning
    # Refused on the shape's guess, which errs high (2.4x for a 1x current ∪ history state), where the state at
    # its logical bytes may fit: its size measured first (probe.py); what no measure could fit is refused as is.
    could_fit = free < least + MARGIN <= free + least * (1 - 1 / sizes.GUESS_BYTES_PER_LOGICAL)
    guessed = probe.guessed(list(filter(uses_state, plans))) if could_fit else []
    for plan in guessed:
        probe.measure(plan, who)
    if guessed:
        free, need = store.free_bytes(root), _need(plans, root, drop_states, takes)
    print(f"[{who}] disk: needs about {need.cloning / GIB:.1f} GiB ({'; '.join(need.lines)}), {free / GIB:.1f} GiB "
          f"free{' (states dropped after their last cell)' if drop_states else ''}", file=sys.stderr, flush=True)
    if need.cloning + MARGIN <= free:
        return takes
    if not drop_states and not takes and need.packing + MARGIN <= free:
        print(f"[{who}] not every clone fits beside its state: a state whose clone does not fit is packed (zstd) "
              f"when its first cell starts, and each cell unpacks it (about {need.packing / GIB:.1f} GiB, by a packed "
              f"share of {sizes.PACKED_SHARE:g} of its bytes)", file=sys.stderr, flush=True)
        return takes
    if drop_states and need.taking + MARGIN <= free:
        print(f"[{who}] not every clone fits beside its states: a cell whose clone does not fit when its turn comes "
              f"moves its state in, and the next cell that needs it builds it again (about {need.taking / GIB:.1f} "
              "GiB at a time)", file=sys.stderr, flush=True)
        return takes
    least = need.taking if drop_states else need.cloning
    raise ConfigError(f"the {who} needs about {least / GIB:.1f} GiB at {root} ({'; '.join(need.lines)}; plus a "
                      f"{MARGIN / GIB:.0f} GiB margin) and {free / GIB:.1f} GiB are free; {_HINT}")


def _need(plans: list, root: Path, drop_states: bool, takes: bool) -> DiskNeed:
    need = walk_disk(plans, root, drop_states)
    if takes:       # every cell moves its state in whatever the room (make run DROP_STATES=1): no clone
        need = DiskNeed(need.taking, need.taking, [ln for ln in need.lines if not ln.startswith("one clone")])
    return need


def _fitting(plans: list, root: Path, free: int, who: str) -> list:
    """The first engine's plans, and each later engine's whose states fit one cell at a time."""
    engines = list(dict.fromkeys(p.engine for p in plans))
    out = []
    for k, engine in enumerate(engines):
        mine = [p for p in plans if p.engine == engine]
        taking = walk_disk(mine, root, True).taking
        guess = any(sizes.is_guess(root, i) for p in filter(uses_state, mine) for i in state_inputs(p)[:1])
        if k and taking + MARGIN > free:
            print(f"[{who}] disk: {engine}'s states " + (
                  f"may not fit (about {taking / GIB:.1f} GiB by the shape's guess, which errs high: no build of it "
                  f"near this size yet), {free / GIB:.1f} GiB free: its first build will tell" if guess else
                  f"do not fit (about {taking / GIB:.1f} GiB with every cell moving its state in, {free / GIB:.1f} "
                  "GiB free): its cells will record build_failed (no room)"), file=sys.stderr, flush=True)
        if not k or taking + MARGIN <= free:
            out += mine
    return out


def mark_takes(runs: list[CellRun], per_run: list[list[store.StateInputs]], last: dict[str, int],
               keep: set[str]) -> None:
    """The last cell that clones a state moves its data in rather than copy it (clone.take): the state would go
    after that cell anyway; and where that cell's aged state is made from a base no later cell needs, the
    ageing takes the base by rename (aged.build_aged), so the two are never on disk together. Not what the walk
    keeps (a matrix's baseline layout's aged state, which the best combination may clone after every other)."""
    for n, cr in enumerate(runs):
        states = per_run[n]
        update = {}
        if last[states[-1].id] == n and states[-1].id not in keep:
            update["take_state"] = True
        if len(states) > 1 and last[states[0].id] == n and states[0].id not in keep:
            update["take_base_state"] = True
        if update:
            cr.plan = cr.plan.model_copy(update=update)


def dropper(runs: list[CellRun], keep_first: bool = True, who: str = "matrix"):
    """A run_cells `stop` hook that never stops: after each cell, the states no later cell clones go (but for
    the first cell's aged state where keep_first: a matrix's baseline layout's); the next cell still to run
    gets its states built now, and then each base state whose aged states the cells still to run have on disk
    goes too. Each state's last cell is marked to take it (mark_takes) before the first runs."""
    from harness.state.build import ensure
    per_run = [state_inputs(cr.plan) for cr in runs]        # [base] or [base, aged], each run's, found once
    keep = {per_run[0][-1].id} if keep_first and per_run else set()
    last = {sid: n for n, cr in enumerate(runs) for sid in uses(cr.plan)}
    mark_takes(runs, per_run, last, keep)

    def after(record) -> bool:
        n = next((k for k, cr in enumerate(runs[:len(per_run)]) if cr.record is record), None)
        if n is None:
            return False
        _drop([sid for sid, at in last.items() if at == n and sid not in keep], who)
        pending = [k for k in range(n + 1, len(per_run)) if completed(runs[k]) is None]
        if pending:
            try:
                ensure(runs[pending[0]].plan)
            except Exception as e:       # the cell builds it again and records the failure as its own
                print(f"[{who}] the next cell's state: {e}", file=sys.stderr, flush=True)
                return False
        _drop(_bases_done(per_run[:n + 1], [per_run[k] for k in pending], [runs[k].plan for k in pending]), who)
        return False
    return after


def _bases_done(ran: list[list[store.StateInputs]], pending: list[list[store.StateInputs]], plans: list) -> list[str]:
    """Base states no pending cell needs: each pending cell that clones an aged state has it on disk, and no
    state still to be derived reads it (derive.py: a base at another layout derives from the default's)."""
    from harness.state import derive
    root = store.root_dir()
    todo = [k for k, i in enumerate(pending) if store.find(root, i[-1]) is None]
    needed = {pending[k][0].id for k in todo} | {s.id for k in todo for s in derive.sources(plans[k])}
    needed |= {i[0].id for i in pending if len(i) == 1}
    bases = {i[0].id for i in ran + pending if len(i) > 1}
    return sorted(bases - needed)


def drop_all(plans: list, who: str = "matrix") -> None:
    """Once the walk is done: every state its cells cloned (and the bases of aged ones)."""
    _drop(list(dict.fromkeys(i.id for plan in filter(uses_state, plans) for i in state_inputs(plan))), who)


def _drop(ids: list[str], who: str) -> None:
    root = store.root_dir()
    for sid in ids:
        if (root / sid).exists():
            store.remove(root, [sid])
            print(f"[{who}] dropped the state {sid} (DROP_STATES=1): no later cell clones it",
                  file=sys.stderr, flush=True)
