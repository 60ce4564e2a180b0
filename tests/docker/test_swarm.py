"""PLACE=swarm on this machine's Docker engine as a one-node swarm (made here when it is not one, and left
again afterwards): real sqlite cells as one-shot services, an OOM kill recorded as oom, the node named in
each result, nothing left behind, and a sweep killed mid-way rerunning only the cells it had not finished."""
import json
import os
import re
import signal
import subprocess

import pytest

from harness.place.swarm_api import LABEL, nodes
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


def _cells(tmp_path) -> dict:
    return {c["mem"]: c for c in json.loads((only_sweep_dir(tmp_path) / "sweep.json").read_text())["cells"]}


def test_a_swarm_sweep_limits_places_records_oom_and_resumes_after_a_kill(tmp_path, swarm):
    """One sweep of three cells, the driver SIGKILLed once the first is complete (the swarm's services go on
    without it), run again: only the unfinished cells run, an OOM cell is recorded as oom, and a third run
    skips everything."""
    log = tmp_path / "driver.log"
    with open(log, "w") as err:
        p = subprocess.Popen(_args(tmp_path, "256m 48m 320m"), stdout=subprocess.DEVNULL, stderr=err,
                             start_new_session=True)
    try:
        def one_done() -> bool:
            try:
                return json.loads((only_sweep_dir(tmp_path) / "sweep.json").read_text())["cells_complete"] >= 1
            except (OSError, ValueError, AssertionError):
                return False
        try:
            wait_for(one_done, 600, "the first cell to complete")
        except pytest.fail.Exception:      # what the driver and the swarm said, for whoever reads the failure
            tasks = _docker("service", "ps", "--no-trunc", *_ours()).stdout if _ours() else "no service of ours"
            pytest.fail(f"no cell completed in 600 s; the driver said:\n{log.read_text()[-3000:]}\n"
                        f"the swarm's tasks:\n{tasks[-3000:]}")
        os.killpg(p.pid, signal.SIGKILL)
        p.wait(30)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    done_before = {c["dir"] for c in _cells(tmp_path).values() if c["state"] == "complete"}
    r = _sweep(tmp_path, "256m 48m 320m")
    assert r.returncode == 0, r.stderr[-3000:]
    for d in done_before:
        assert f"{d}: complete (" in r.stderr and "skipped" in r.stderr
    cells = _cells(tmp_path)
    assert cells["48m"]["status"] == "oom", "a MEM below the runner's own footprint: the kernel's OOM kill (at 16-32m, in a container, the runner thrashes on its code pages for minutes first)"
    for mem in ("256m", "320m"):     # measured and judged; a smoke threshold may fail on a loaded machine (CI)
        assert cells[mem]["status"] in ("passed", "failed"), cells[mem]
    hostnames = {n.hostname for n in swarm}
    for c in cells.values():
        assert c["place"] == "swarm" and c["node"] in hostnames and c["state"] == "complete"
    root = only_sweep_dir(tmp_path)
    res = json.loads((root / "reorg" / cells["256m"]["dir"] / "result.json").read_text())
    assert res["environment"]["node"] in hostnames, "the node's own name, not the task container's id"
    assert res["memory"]["data_limit_bytes_seen"] == 256 << 20, "the orchestrator's limit, read inside"
    assert res["integrity"]["ok"] is True and all(t["value"] is not None for t in res["thresholds"])
    # Docker does not always flag a kernel OOM kill (judge_exit): the status says oom either way
    assert re.search(r"OOM-killed|killed \(exit 137\) under its \d+-byte memory limit",
                     json.loads((root / "reorg" / cells["48m"]["dir"] / "result.json").read_text())["error"])
    assert (root / "reorg" / cells["256m"]["dir"] / "container.log").read_text().strip()
    assert (root / "report.html").exists()
    assert not _ours(), "every service of the walk is removed"
    again = _sweep(tmp_path, "256m 48m 320m")
    assert again.returncode == 0 and again.stderr.count("skipped") == 3, again.stderr[-2000:]
