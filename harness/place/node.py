"""A placed cell's side on its node, in a task container of its own outside MEM (swarm.py places it): the
cell's starting state found (a state job built it) and cloned cold on the node's disk, the block feed
started, then it waits while the runner's task (limit = MEM) runs beside it; after, the runner's exit
judged as the docker runtime judges it and the node's copy of the database removed.

The run folder is the channel, on a mount both containers and the driver see:
    plan.yaml            the cell's plan (the driver)
    node.ready           the feed listens and plan.container.yaml is written (here)
    runner.exit          the runner's task ended: its exit code and OOM kill (the driver)
    node.done            this side is done: the cell's exit code (here)"""
from __future__ import annotations

import json
import os
import platform
import secrets
import shutil
import signal
import sys
import threading
import time
from pathlib import Path

from harness.environment import NODE_ENV, utc_now
from harness.errors import EXIT_RUN_FAILED
from harness.results import read_json, write_json
from harness.scenario.plan import RunPlan

POD_ENV = "ARKBENCH_POD"            # set in a Kubernetes pod (k8s.py): the channel is the pod's, not the driver's
READY, RUNNER_EXIT, DONE = "node.ready", "runner.exit", "node.done"
PASSWORD = "server-password"        # in a pod's channel (memory): the per-cell server password
SKIP = "skip"                       # in a pod's channel: no runner (the cell is done, or has no state)
PLAN = "plan.yaml"
RUNNER_PLAN = "plan.container.yaml"


def node_name() -> str:
    return os.environ.get(NODE_ENV) or platform.node()


def build_state(plan_path: Path) -> int:
    """A state job: the state of a group of cells, built once where the orchestrator put the job."""
    from harness.state.build import StateBuildFailed, ensure
    plan = RunPlan.read(plan_path)
    try:
        d, man, built_now = ensure(plan)
    except StateBuildFailed as e:
        print(f"[state] {plan.engine}: build failed: {e}", file=sys.stderr)
        return EXIT_RUN_FAILED
    print(f"[state] {man.id} {'built' if built_now else 'found'} on {node_name()}: {man.rows} rows in "
          f"{man.build_s:.0f} s", file=sys.stderr)
    return 0


def serve_cell(run_dir: Path, channel: Path | None = None) -> int:
    """The cell of run_dir/plan.yaml, its runner beside it. channel: where the ready and exit files and the
    runner's plan go (default the run folder; a Kubernetes pod's shared emptyDir)."""
    from harness.cell import build_failed, start_state
    from harness.feed.server import FeedServer
    from harness.runtime.docker import judge_exit
    from harness.state.build import StateBuildFailed
    channel = channel or run_dir
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())       # the driver removed the cell, or the pod ends
    plan = RunPlan.read(run_dir / PLAN)
    try:
        try:
            plan = start_state(plan)
        except StateBuildFailed as e:
            write_json(run_dir / DONE, {"exit_code": build_failed(plan, e)})
            return 0
        (Path(plan.data_dir) / ".tmp").mkdir(parents=True, exist_ok=True)     # the runner's TMPDIR
        with FeedServer.for_plan(plan):
            plan.write(channel / RUNNER_PLAN)
            write_json(channel / READY, {"node": node_name()})
            while not stop.is_set() and not (channel / RUNNER_EXIT).exists():
                stop.wait(0.5)
        ended = runner_exit(channel, stopped=stop.is_set())
        if ended is None:
            return 0                    # stopped: the cell is partial, and rerun by the next sweep
        rc = judge_exit(plan, ended["exit_code"], ended["oom_killed"])
        write_json(run_dir / DONE, {"exit_code": rc})
        return 0
    finally:
        if not plan.keep_data:
            shutil.rmtree(plan.data_dir, ignore_errors=True)


def runner_exit(channel: Path, stopped: bool) -> dict | None:
    """How the runner ended: the driver's JSON, or the exit code a pod's runner wrote (a bare number). In
    a pod, the sidecar is stopped once the runner's container ends; with no code written, the runner's
    shell was killed with it: the whole container OOM-killed (cgroup v2's memory.oom.group)."""
    path = channel / RUNNER_EXIT
    try:
        text = path.read_text().strip()
    except FileNotFoundError:
        return {"exit_code": 137, "oom_killed": False} if stopped and os.environ.get(POD_ENV) else None
    if text.isdigit():
        return {"exit_code": int(text), "oom_killed": False}
    return json.loads(text)


def wait_state(plan, poll_s: float = 5.0) -> str | None:
    """In a pod, the state is a state Job's to build: wait until it is there. Returns why it never will."""
    from harness.state import store
    if plan.load.method != "state" or not (plan.load_entities or plan.workload.dc):
        return None
    root, inputs = store.root_dir(), store.inputs_for(plan)
    t0 = last = time.monotonic()
    while store.find(root, inputs) is None:
        failed = root / f"{inputs.id}.failed.json"
        if failed.exists():
            return f"the state job failed: {(read_json(failed) or {}).get('error')}"
        if time.monotonic() - last > 60:
            last = time.monotonic()
            print(f"[node] waiting for state {inputs.id[:12]} ({time.monotonic() - t0:.0f} s)", file=sys.stderr, flush=True)
        time.sleep(poll_s)
    return None


def pod_cell(cell_file: Path, channel: Path) -> int:
    """A Kubernetes pod's cell (k8s.py): its record and plan from the Job's ConfigMap, by completion index.
    A cell complete under the same identity is skipped (a Job applied again runs only what is missing)."""
    from harness.cell import build_failed
    from harness.results import CellRecord
    from harness.records import cell_summary, completed_record, set_aside
    doc = json.loads(cell_file.read_text())
    plan, rec = RunPlan.model_validate(doc["plan"]), CellRecord.model_validate(doc["record"])
    run_dir = Path(plan.run_dir)
    if completed_record(run_dir, rec.cell_id):
        (channel / SKIP).touch()
        write_json(channel / READY, {"node": node_name()})
        return 0
    if run_dir.exists():
        set_aside(run_dir, "partial")
    run_dir.mkdir(parents=True)
    if plan.capabilities.server:      # the pod's server and runner share a password made here, in memory
        from harness.engine_api import server_contract
        pw = channel / PASSWORD
        pw.write_text(secrets.token_urlsafe(24))
        pw.chmod(0o600)
        (channel / server_contract.ENVIRONMENT_FILE).symlink_to(run_dir / server_contract.ENVIRONMENT_FILE)
    rec = rec.model_copy(update={"place": "k8s", "node": node_name(), "started_utc": utc_now()})
    write_json(run_dir / "cell.json", rec)
    plan.write(run_dir / PLAN)
    why = wait_state(plan)
    if why:
        from harness.state.build import StateBuildFailed
        rc = build_failed(plan, StateBuildFailed(why))
        (channel / SKIP).touch()
        write_json(channel / READY, {"node": node_name()})
    else:
        serve_cell(run_dir, channel)
        rc = (read_json(run_dir / DONE) or {}).get("exit_code", EXIT_RUN_FAILED)
    write_json(run_dir / "cell.json", rec.model_copy(update={
        "state": "complete", "exit_code": rc, "finished_utc": utc_now(), **cell_summary(run_dir)}))
    return 0


def main(argv: list[str]) -> int:
    what, path = argv
    if what == "state":
        return build_state(Path(path))
    if what == "pod":
        return pod_cell(Path(path), Path(os.environ.get("ARKBENCH_CHANNEL", "/cell")))
    return serve_cell(Path(path))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
