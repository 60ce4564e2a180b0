"""Cells placed on several nodes: alike nodes share a table with a note, unlike ones only when told to."""
from types import SimpleNamespace

import pytest

from harness.errors import ConfigError
from harness.report import nodes


def cell(node: str, cpu: str = "Xeon", fsync_us: float = 900.0, write: float = 400.0):
    env = {"node": node, "hostname": "c0ffee", "cpu_model": cpu, "cpus_usable": 2, "ram_bytes": 24 << 30,
           "filesystem": {"fstype": "ext4"}, "fsync_floor": {"p50_us": fsync_us},
           "disk_write": {"sequential_write_mib_per_s": write}}
    return SimpleNamespace(result=SimpleNamespace(environment=env))


def test_one_node_says_nothing():
    assert nodes.check([cell("a"), cell("a")], mixed_nodes=False) is None


def test_alike_nodes_share_a_table_with_a_note():
    said = nodes.check([cell("a"), cell("b", fsync_us=1300.0, write=300.0)], mixed_nodes=False)
    assert "2 alike nodes (a, b)" in said


@pytest.mark.parametrize("other", [cell("b", cpu="EPYC"), cell("b", fsync_us=4000.0), cell("b", write=90.0)])
def test_unlike_nodes_are_refused_unless_mixed(other):
    with pytest.raises(ConfigError, match="unlike nodes.*--mixed-nodes"):
        nodes.check([cell("a"), other], mixed_nodes=False)
    assert "unlike nodes are compared side by side" in nodes.check([cell("a"), other], mixed_nodes=True)


def test_a_runner_that_died_before_looking_around_names_no_node():
    died = SimpleNamespace(result=SimpleNamespace(environment={"memory_enforcement": "none"}))
    assert nodes.check([cell("a"), died], mixed_nodes=False) is None


def test_a_containers_id_is_not_its_node():
    assert nodes.identity(cell("node-7").result.environment)["node"] == "node-7"


def probed(started: str, fsync_p99_us: float, read_p50_us: float, name: str):
    c = cell("a")
    c.result.environment.update(started_utc=started, fsync_floor={"p50_us": 900.0, "p99_us": fsync_p99_us},
                                disk_random_read={"p50_us": read_p50_us})
    c.scenario, c.run_dir = "p99_5x", SimpleNamespace(name=name)
    return c


def test_a_disk_that_slowed_through_a_walk_is_a_caveat_naming_its_first_and_worst_cells():
    """The second ratio walk of 2026-11-28: the fsync p99 went from 250 µs to 3.5 ms and a random read's p50 from 28
    to 60 µs over 131 min on one machine. Listed out of order: the first cell is the earliest started."""
    cells = [probed("2026-11-28T20:00:00Z", 3500.0, 60.0, "late"), probed("2026-11-28T19:12:00Z", 250.0, 28.0, "first"),
             probed("2026-11-28T19:40:00Z", 400.0, 30.0, "mid")]
    said = nodes.drift(cells)
    assert "fsync p99 250 µs at its first cell (p99_5x/first), 3,500 µs at p99_5x/late" in said
    assert "random 4 KiB read p50 28 µs at its first cell (p99_5x/first), 60 µs at p99_5x/late" in said
    assert nodes.drift(cells[1:]) is None, "within 2x: the probes' own noise"
