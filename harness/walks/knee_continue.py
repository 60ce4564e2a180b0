"""A knee's steps on the database the step before left (state/continued.py), where each step moves its state in
(DROP_STATES=1) and would otherwise build it again: at 5x on this disk, 17 of a step's ~30 minutes (12-07). A
step that moves its state in keeps its database after it; the next one takes that instead of its own state,
while the rows the chain has written stay a small share of the state's. What is measured then is the axis's
value on a slightly older database: each step says so (its continued_rows), and the confirmation, which the
published knee rests on, drops the chain and starts from a fresh build."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from harness.cell_states import state_inputs
from harness.errors import ConfigError
from harness.records import CellRun, completed
from harness.state import continued, store
from harness.state.clone import CLONE_RECORD

MAX_ADDED_SHARE = 0.03       # of its rows a continued state's cells may have written; beyond, a fresh build
AXES = ("rows", "mem")       # every step of these starts from one state (a scale knee's each from its own)


class Chain:
    """A knee's continued states: each step's plan as it starts, and what is left dropped when the knee ends."""

    def __init__(self, axis: str, taking: bool, asked: bool) -> None:
        if asked and not (taking and axis in AXES):
            raise ConfigError(f"CONTINUE=1: continues a {' or '.join(AXES)} knee's steps that move their state in: "
                              f"give DROP_STATES=1 too (AXIS={axis}, DROP_STATES={int(taking)})")
        self.on, self.origins = asked, set()

    def step(self, cr: CellRun, confirming: bool) -> CellRun:
        """The step's cell: from the continued state of its own state where one is on disk and young enough
        (else that one is dropped, to make room for the build); a confirmation always from a fresh build. Each is
        kept after it for the next. A step already complete is left as it ran."""
        if not self.on or not cr.plan.take_state or completed(cr) is not None:
            return cr
        plan = cr.plan
        root, origin = store.root_dir(), state_inputs(plan)[-1].id
        self.origins.add(origin)
        found = continued.find(root, origin)
        added = continued.rows_added(found[1]) if found else 0
        too_old = found is not None and added > MAX_ADDED_SHARE * found[1].rows
        if too_old and not confirming:
            store.log(f"{found[1].id}: its cells wrote {added:,} rows, more than "
                      f"{MAX_ADDED_SHARE:.0%} of its {found[1].rows:,}: dropped, this step starts from a fresh build")
        if found is None or confirming or too_old:
            continued.drop(root, origin)
            found = None
        update = {"keep_data": True, "keep_continued": True, "continue_from": found[1].id if found else None}
        return replace(cr, plan=plan.model_copy(update=update))

    def close(self) -> None:
        for origin in self.origins:
            continued.drop(store.root_dir(), origin)


def continued_rows(cell_dir: Path) -> int | None:
    """Rows earlier steps wrote into the state this step started from; None: it started from a fresh one."""
    record = cell_dir / CLONE_RECORD
    lineage = json.loads(record.read_text()).get("state_continued") if record.is_file() else None
    return continued.lineage_rows(lineage) if lineage else None
