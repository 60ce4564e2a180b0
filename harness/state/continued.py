"""A state continued from a cell. Where a walk's steps move their state in (DROP_STATES=1) because no copy fits
beside it (SQLite at 5x: 52 GiB on an 80 GB disk), each step built its state again: 17 of a 5x step's ~30 min,
12-07. A step that keeps its database instead leaves a continued state: its files as the cell left them and the
model regenerated to the last block it applied (the blocks after a state are a pure function of its model and
its workload: feed/spool_cache.py), which the next step takes in its place. It is not its origin: it carries the
cells' blocks too, named in its manifest (continued) and in the id every result that starts from it records. A
knee confirms on a fresh build, so a published knee never rests on one (harness/walks/knee_continue.py)."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

from harness import environment
from harness.results import load_result
from harness.state import store
from harness.workload.generator import BlockGenerator

MARK = "-cont"          # in a continued state's id, after its origin's


def origin_of(state_id: str) -> str:
    return state_id.split(MARK)[0]


def find(root: Path, origin_id: str) -> tuple[Path, store.StateManifest] | None:
    """The continued state of this origin on disk (one at a time: keep() drops the one it continues)."""
    for d in sorted(root.glob(f"{origin_id}{MARK}*")):
        if d.name.endswith((".partial", store.TAKEN)):
            continue
        try:
            return d, store.StateManifest.model_validate_json((d / store.MANIFEST).read_text())
        except (OSError, ValueError):
            continue
    return None


def drop(root: Path, origin_id: str, but: Path | None = None) -> list[str]:
    """Every continued state of this origin (but the one a cell has taken and reads), and what a stopped keep()
    left: before its origin is built again, or a newer one kept."""
    gone = [d for d in sorted(root.glob(f"{origin_id}{MARK}*")) if d != but]
    for d in gone:
        shutil.rmtree(d, ignore_errors=True)
    for lock in root.glob(f".{origin_id}{MARK}*.lock"):        # store.lock's, left by each take
        lock.unlink(missing_ok=True)
    return [d.name for d in gone]


def why_not(plan, r) -> str | None:
    """Why this cell's database cannot be continued (None: it can)."""
    if plan.design:
        return "a design's acknowledged blocks are not all applied to the engine when the cell ends"
    if not plan.state or not plan.take_state:
        return "the cell did not take its state"
    if not Path(plan.data_dir).is_dir():
        return "its database is gone"
    if os.stat(Path(plan.data_dir)).st_dev != os.stat(Path(plan.state.model).parent).st_dev:
        return "its database is on another filesystem than the states"
    if r is None or r.status not in ("passed", "failed") or not r.integrity.ok:
        return f"the cell ended {r.status if r else 'without a result'}" + (
            "" if r is None or r.integrity.ok else ", its rows not the model's")
    if r.integrity.last_block is None:
        return "no block was applied"
    return None


def _matches(digest: dict[str, str], expected: dict[str, str]) -> bool:
    """The model's digest against the cell's verified one ("count:sum", or "count:*" where it counted rows)."""
    def same(mine: str, theirs: str) -> bool:
        return all(t in ("*", m) for m, t in zip(mine.split(":"), theirs.split(":")))
    return digest.keys() == expected.keys() and all(same(digest[t], expected[t]) for t in expected)


def keep(plan) -> Path | None:
    """After a cell that took its state (plan.keep_continued, its data kept): its database and its model at its
    last block, as a continued state of the state's origin. None where it cannot be: the data is dropped, as a
    cell's always is."""
    data, taken = Path(plan.data_dir), Path(plan.state.model).parent if plan.state else None
    r = load_result(Path(plan.run_dir) / "result.json")
    why = why_not(plan, r)
    gen = None
    if why is None:
        gen = BlockGenerator(plan.workload_spec())
        gen.restore(taken / store.MODEL)
        first = gen.block_number
        while gen.block_number < r.integrity.last_block:
            gen.next_block()
        if not _matches(gen.model.digest.as_dict(), r.integrity.expected):
            why = "the model regenerated to its last block is not the one the cell verified"
    if why is not None:
        store.log(f"not continued from {Path(plan.run_dir).name}: {why}")
        shutil.rmtree(data, ignore_errors=True)
        return None
    man = store.StateManifest.model_validate_json((taken / store.MANIFEST).read_text())
    origin = origin_of(man.id)
    lineage = [*(man.continued or []), {"cell": plan.run_dir, "rows_per_block": plan.workload.rows_per_block,
                                        "blocks": gen.block_number - first, "last_block": gen.block_number}]
    new_id = f"{origin}{MARK}{len(lineage)}-{hashlib.sha256(json.dumps(lineage).encode()).hexdigest()[:8]}"
    root = taken.parent
    drop(root, origin, but=taken)
    partial = root / f"{new_id}.partial"
    partial.mkdir()
    store.copy_models(taken, partial)
    gen.save(partial / store.MODEL)
    data.rename(partial / store.DATA)
    counts = {t: d.count for t, d in gen.model.digest.tables.items()}
    (partial / store.MANIFEST).write_text(man.model_copy(update=dict(
        id=new_id, method="continued", derived_from=origin, continued=lineage,
        model_digest=gen.model.digest.as_dict(), logical_bytes=gen.model.digest.logical_bytes, row_counts=counts,
        rows=sum(counts.values()), data_bytes=store.tree_bytes(partial / store.DATA),
        model_bytes=store.files_bytes(partial), built_utc=environment.utc_now())).model_dump_json(indent=2))
    partial.rename(root / new_id)
    store.log(f"continued {new_id}: {man.id}'s database after {lineage[-1]['blocks']} blocks of "
              f"{lineage[-1]['rows_per_block']} rows ({r.integrity.method} checked)")
    return root / new_id


def rows_added(man: store.StateManifest) -> int:
    """Rows a continued state's cells wrote beyond its origin, as a row budget (rows per block x blocks)."""
    return lineage_rows(man.continued)


def lineage_rows(lineage: list[dict] | None) -> int:
    return sum(int(c["rows_per_block"]) * int(c["blocks"]) for c in lineage or [])
