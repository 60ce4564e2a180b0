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
