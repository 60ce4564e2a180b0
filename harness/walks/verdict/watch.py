"""A quiet machine (issue 76): a cell measured beside other load measures that load too, so it never answers while
disturbed. Each cell's result records the CPU that processes outside its own spent while it ran and the disk probed
at its start and its end (harness/cell.py, platform/watch.py); a cell where other processes took more than a tenth
of a core, or whose fsync p50 was over twice the walk's first probe at both ends, is set aside, labelled
"disturbed", and run once more after waiting up to 5 minutes for a quiet machine. Disturbed again, it is an error
("disturbed: ..."), so its level is inconclusive rather than answered from it. The lines are decision.yaml's
`quiet`; a decision file without it watches nothing."""
from __future__ import annotations

from harness.platform.watch import wait_quiet
from harness.results import CellRecord, load_result
from harness.walks.verdict.roles import log


def disturbed(walk, rec: CellRecord) -> str | None:
    """Why the cell was measured beside other load, else None (a result without a watch, or a walk whose decision
    file asks for none, says nothing)."""
    quiet = walk.tree.quiet
    if quiet is None:
        return None
    r = load_result(walk.root / rec.scenario / rec.dir / "result.json")
    seen = (r.environment.get("watch") or {}) if r is not None else {}
    if not seen:
        return None
    probes = [p for p in ((r.environment.get("fsync_floor") or {}).get("p50_us"),
                          (seen.get("fsync_floor_end") or {}).get("p50_us")) if p]
    # the better of its two probes' medians: a 200-fsync probe's p99 moves several-fold on a quiet machine here (one
    # slow flush of the cell's own), and the probe at its start can land in the writeback of the clone just made;
    # a disk slowed by other load is slow at both ends
    best = min(probes, default=None)
    if walk.first_fsync_p50_us is None and best:
        walk.first_fsync_p50_us = best
    cores = seen.get("outside_cpu_cores") or 0.0
    if cores > quiet.outside_cores:
        return f"other processes used {cores:.2f} of a core while it ran"
    first = walk.first_fsync_p50_us
    if first and best and best > quiet.fsync_times * first:
        return (f"fsync p50 {best:,.0f} µs at both its start and its end, over {quiet.fsync_times:g}x the walk's "
                f"first probe ({first:,.0f} µs)")
    return None


def undisturbed(walk, cells: list[CellRecord], rerun) -> tuple[list[CellRecord], list[CellRecord]]:
    """(the cells to judge, the disturbed first runs set aside): each disturbed cell run once more, by rerun()."""
    why = {c.dir: disturbed(walk, c) for c in cells}
    bad = [c for c in cells if why[c.dir]]
    if not bad:
        return cells, []
    for c in bad:
        log(f"{c.scenario}/{c.dir}: disturbed ({why[c.dir]}): kept, and run again once the machine is quiet")
    q = walk.tree.quiet
    quiet, cores = wait_quiet(q.wait_s, q.outside_cores)
    log(f"{'quiet' if quiet else f'still busy after {q.wait_s:g} s'} ({cores:.2f} of a core outside): running again")
    again = []
    for c in rerun():
        still = disturbed(walk, c)
        again.append(c.model_copy(update={"status": "error", "error": f"disturbed: {still}"}) if still else c)
    aside = [c.model_copy(update={"label": "disturbed", "diagnosis": f"disturbed: {why[c.dir]}"}) for c in bad]
    return [c for c in cells if not why[c.dir]] + again, aside
