"""A quiet machine (issue 76): what other processes spent while a cell ran, measured for real, and the walk's
rule on it (a disturbed cell is kept, labelled, and run once more)."""
import os
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest

from harness.platform import watch
from harness.results import CellRecord, RunResult, write_json
from harness.scenario.decision import load_decision
from harness.walks.sweep import CellOptions
from harness.walks.verdict import walk as walk_module, watch as verdict_watch
from harness.walks.verdict.answer import at_mem
from harness.walks.verdict.plan import criterion_plans, order_mems
from harness.walks.verdict.walk import Walk

BURN = "import time\nend = time.time() + {s}\nwhile time.time() < end: pass\n"


def _outside_burner(seconds: float) -> None:
    """A process that takes a core and is no descendant of ours: forked twice, so init adopts it."""
    subprocess.run([sys.executable, "-c", "import os, subprocess, sys\nif os.fork() == 0:\n    os.setsid()\n"
                    f"    subprocess.Popen([sys.executable, '-c', {BURN.format(s=seconds)!r}])\n    os._exit(0)\n"],
                   check=True)


@pytest.mark.serial     # it counts every process outside its tree: a parallel worker is one (failed so, 12-05, -n 3)
def test_a_process_outside_the_tree_is_counted_and_a_child_is_not():
    a = watch.snapshot()
    child = subprocess.Popen([sys.executable, "-c", BURN.format(s=1.5)])
    child.wait()
    own = watch.outside_cores(a, watch.snapshot())
    assert own < 0.3, f"a child of ours is the cell's own: {own}"
    b = watch.snapshot()
    _outside_burner(1.5)
    time.sleep(1.6)
    other = watch.outside_cores(b, watch.snapshot())
    assert other > 0.5, f"a process outside the tree took a core: {other}"


def _result(path, outside_cores: float, fsync_p50_us: float = 300.0, start_p50_us: float = 300.0) -> None:
    path.mkdir(parents=True, exist_ok=True)
    write_json(path / "result.json", RunResult.model_validate({
        "run_id": path.name, "engine": "sqlite", "scenario": "p99_5x", "profile": "ratio", "runtime": "local",
        "status": "passed", "scale": 1.0, "plan": {}, "memory": {}, "metrics": {},
        "environment": {"fsync_floor": {"p50_us": start_p50_us, "p99_us": 5 * start_p50_us},
                        "watch": {"outside_cpu_cores": outside_cores,
                                  "fsync_floor_end": {"p50_us": fsync_p50_us, "p99_us": 5 * fsync_p50_us}}}}))


@pytest.mark.parametrize("again_cores,level", [(0.0, "pass"), (0.9, "error")])
def test_a_cell_run_beside_a_process_taking_a_core_runs_again_and_its_first_run_is_kept_as_disturbed(
        tmp_path, monkeypatch, again_cores, level):
    """SQLite's cell at 4g ran while another process took 0.9 of a core: it is set aside as "disturbed" and run once
    more once the machine is quiet; that run answers. Disturbed again, it is an error: the level is inconclusive."""
    monkeypatch.setattr(verdict_watch, "wait_quiet", lambda max_s, below: (True, 0.0))
    assert load_decision().quiet.outside_cores == 0.10 and load_decision().quiet.wait_s == 300
    tree = load_decision()
    tree = tree.model_copy(update={"steps": [s.model_copy(update={"tune": [], "control": None}) for s in tree.steps],
                                   "criteria": tree.criteria[:1], "reference": None, "leaf": None})
    walk = Walk(tree, order_mems(["4g"]), criterion_plans(tree, lambda sc: 3600), CellOptions(runtime="local"),
                tmp_path)

    def run_cells(runs, path, meta, stop=None, place="local"):
        cells = []
        for cr in runs:
            _result(tmp_path / cr.cell.scenario / cr.dir.name, again_cores if cr.cell.tag == "again" else 0.9)
            cells.append(CellRecord(cell_id="x", scenario=cr.cell.scenario, engine=cr.cell.engine, mem=cr.cell.mem,
                                    data_limit_bytes=None, scale=1.0, runtime="local", dir=cr.dir.name,
                                    state="complete", status="passed"))
        return SimpleNamespace(cells=cells)
    monkeypatch.setattr(walk_module, "run_cells", run_cells)
    walk.run()
    sqlite = [r for r in walk.records if r.engine == "sqlite"]
    assert [r.label for r in sqlite] == ["disturbed", "candidate"]
    assert sqlite[0].diagnosis == "disturbed: other processes used 0.90 of a core while it ran"
    assert at_mem(sqlite[1:]) == level and walk.matrix[0].outcome == level
    if level == "error":
        assert sqlite[1].error.startswith("disturbed: ")


def test_a_disk_probe_past_twice_the_walks_first_is_disturbed(tmp_path):
    walk = SimpleNamespace(root=tmp_path, first_fsync_p50_us=None, tree=load_decision())
    rec = lambda d: CellRecord(cell_id="x", scenario="p99_5x", engine="sqlite", mem="4g", data_limit_bytes=None,  # noqa: E731
                               scale=1.0, runtime="local", dir=d, state="complete", status="passed")
    _result(tmp_path / "p99_5x" / "a", 0.0, fsync_p50_us=350.0)
    _result(tmp_path / "p99_5x" / "b", 0.0, fsync_p50_us=4119.0, start_p50_us=3800.0)
    _result(tmp_path / "p99_5x" / "c", 0.0, fsync_p50_us=310.0, start_p50_us=1093.0)   # a clone's writeback
    assert verdict_watch.disturbed(walk, rec("a")) is None and walk.first_fsync_p50_us == 300.0
    assert "over 2x the walk's first probe (300 µs)" in verdict_watch.disturbed(walk, rec("b"))
    assert verdict_watch.disturbed(walk, rec("c")) is None, "slow at its start only: its own clone's writeback"
