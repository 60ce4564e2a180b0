"""PLACE=swarm on this machine's Docker engine as a one-node swarm (made here when it is not one, and left
again afterwards): real sqlite cells as one-shot services, an OOM kill recorded as oom, the node named in
each result, nothing left behind, and a sweep killed mid-way rerunning only the cells it had not finished."""
import json
import os
import signal
import subprocess

import pytest

from harness.place.swarm import LABEL, nodes
from harness.runtime.compose import image_tag
from harness.runtime.docker import daemon_answers, image_id
from tests.cli.test_sweep import only_sweep_dir, wait_for
from tests.conftest import harness_cmd


def _why_not() -> str | None:
    if not daemon_answers():
        return "no Docker daemon answers"
    return None if image_id(image_tag("sqlite")) else "image arkbench/sqlite not built: run `make images`"


pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.skipif(_why_not() is not None, reason=str(_why_not()))]


def _docker(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["docker", *args], capture_output=True, text=True)


@pytest.fixture(scope="module")
def swarm():
    """This engine as a swarm manager: the one it is, or a one-node swarm made for these tests."""
    state = _docker("info", "--format", "{{.Swarm.LocalNodeState}}").stdout.strip()
    made = state != "active"
    if made:
        r = _docker("swarm", "init")
        if r.returncode:
            pytest.skip(f"docker swarm init failed: {r.stderr.strip()}")
    yield nodes()
    if made:
        _docker("swarm", "leave", "--force")


def _args(tmp_path, mems: str) -> list[str]:
    return harness_cmd() + ["sweep", "--place", "swarm", "--scenario", "reorg", "--engines", "sqlite", "--profile",
                            "smoke", "--duration", "3", "--mems", mems, "--results", str(tmp_path / "results"),
                            "--data", str(tmp_path / "data")]


def _sweep(tmp_path, mems: str) -> subprocess.CompletedProcess:
    return subprocess.run(_args(tmp_path, mems), capture_output=True, text=True, timeout=900)


def _ours() -> list[str]:
    return _docker("service", "ls", "-q", "--filter", f"label={LABEL}").stdout.split()


def test_cells_run_as_swarm_services_with_the_memory_limit(tmp_path, swarm):
    r = _sweep(tmp_path, "40m 256m")
    assert r.returncode == 0, r.stderr[-3000:]
    root = only_sweep_dir(tmp_path)
    cells = {c["mem"]: c for c in json.loads((root / "sweep.json").read_text())["cells"]}
    assert cells["40m"]["status"] == "oom", "a MEM below the runner's own footprint: the kernel's OOM kill"
    assert cells["256m"]["status"] == "passed"
    hostnames = {n.hostname for n in swarm}
    for c in cells.values():
        assert c["place"] == "swarm" and c["node"] in hostnames
    res = json.loads((root / "reorg" / cells["256m"]["dir"] / "result.json").read_text())
    assert res["environment"]["node"] in hostnames, "the node's own name, not the task container's id"
    assert res["memory"]["data_limit_bytes_seen"] == 256 << 20, "the orchestrator's limit, read inside"
    oom = json.loads((root / "reorg" / cells["40m"]["dir"] / "result.json").read_text())
    assert "OOM-killed" in oom["error"]
    assert (root / "reorg" / cells["256m"]["dir"] / "container.log").read_text().strip()
    assert (root / "report.html").exists()
    assert not _ours(), "every service of the walk is removed"
    again = _sweep(tmp_path, "40m 256m")
    assert again.returncode == 0 and again.stderr.count("skipped") == 2, again.stderr[-2000:]


def test_a_killed_swarm_sweep_reruns_only_its_missing_cells(tmp_path, swarm):
    args = _args(tmp_path, "256m 320m 384m")
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        def one_done() -> bool:
            try:
                return json.loads((only_sweep_dir(tmp_path) / "sweep.json").read_text())["cells_complete"] >= 1
            except (OSError, ValueError, AssertionError):
                return False
        wait_for(one_done, 600, "the first cell to complete")
        os.killpg(p.pid, signal.SIGKILL)       # the driver dies; the swarm's services go on without it
        p.wait(30)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    done_before = {c["dir"] for c in json.loads((only_sweep_dir(tmp_path) / "sweep.json").read_text())["cells"]
                   if c["state"] == "complete"}
    r = subprocess.run(args, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    for d in done_before:
        assert f"{d}: complete (passed), skipped" in r.stderr
    out = json.loads((only_sweep_dir(tmp_path) / "sweep.json").read_text())
    assert out["cells_complete"] == 3 and {c["status"] for c in out["cells"]} == {"passed"}
    assert not _ours()
