"""RUNTIME=local: the runner runs in a child process. With MEM, a fresh memory cgroup holds what the
database gets: the runner (and so the embedded engine), or for a server engine only its server, while
the runner, its client, gets a cgroup of its own with the plan's client limit. An OOM kill becomes a
result with status "oom" (exit 3), built from what the runner left behind."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from harness.errors import EXIT_RUN_FAILED, ConfigError
from harness.platform.cgroup import SERVER_CGROUP_ENV, MemoryCgroup
from harness.platform.stop import asked_to_stop
from harness.results import record_server_oom
from harness.runner.outcome import write_failed_result
from harness.scenario.plan import RunPlan


def _cgroup(name: str, limit: int, plan: RunPlan) -> MemoryCgroup:
    try:
        return MemoryCgroup(name, limit)
    except OSError as e:
        shutil.rmtree(plan.run_dir, ignore_errors=True)
        raise ConfigError(f"MEM={plan.memory.data_limit_bytes}: cannot enforce a memory limit here ({e}); "
                          "run as root on a machine with a memory cgroup, use RUNTIME=docker, "
                          "or drop MEM") from None


def limit_cgroups(plan: RunPlan, env: dict) -> tuple[MemoryCgroup | None, MemoryCgroup | None]:
    """(the data's cgroup, the runner's): one for an embedded engine; for a server engine the server's,
    named in env for the runner to start it in, and the runner's own with the client limit."""
    limits = plan.memory
    db_cg = runner_cg = _cgroup(plan.run_id, limits.data_limit_bytes, plan) if limits.data_limit_bytes else None
    if limits.runner_is_client and db_cg:
        env[SERVER_CGROUP_ENV] = str(db_cg.path)
        runner_cg = _cgroup(f"{plan.run_id}-client", limits.runner_limit_bytes, plan)
    if runner_cg:
        env["ARKBENCH_MEM_ENFORCEMENT"] = runner_cg.enforcement
    return db_cg, runner_cg


def run_local(plan: RunPlan) -> int:
    run_dir = Path(plan.run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    plan_path = run_dir / "plan.yaml"
    plan.write(plan_path)
    env = dict(os.environ)
    limits = plan.memory
    db_cg = runner_cg = None
    try:
        db_cg, runner_cg = limit_cgroups(plan, env)
        proc = subprocess.Popen([sys.executable, "-m", "harness.cli", "_runner", str(plan_path)], env=env,
                                preexec_fn=runner_cg.add_self if runner_cg else None)
        while True:
            try:
                rc = proc.wait()
                break
            except KeyboardInterrupt:   # Ctrl-C reached the child too; let it write its partial result
                if asked_to_stop():     # a SIGTERM may have been sent to us alone: pass it on (a repeat is ignored)
                    proc.send_signal(signal.SIGTERM)
                continue
        if db_cg and db_cg.oom_killed():
            why = f"OOM-killed at the {limits.data_limit_bytes}-byte memory limit"
            if limits.runner_is_client and (run_dir / "result.json").exists():
                record_server_oom(run_dir, why)      # the runner outlived its server and wrote what it saw
            else:
                write_failed_result(plan, "oom", why)
            return EXIT_RUN_FAILED
        if rc == -signal.SIGKILL:
            client_oom = runner_cg is not None and runner_cg is not db_cg and runner_cg.oom_killed()
            write_failed_result(plan, "error", "the runner (the server's client) was OOM-killed at its own "
                                f"{limits.runner_limit_bytes}-byte limit" if client_oom
                                else "the runner was killed (SIGKILL)")
            return EXIT_RUN_FAILED
        if not (run_dir / "result.json").exists():
            write_failed_result(plan, "error", f"the runner exited with {rc} and wrote no result")
            return EXIT_RUN_FAILED
        return rc
    finally:
        for cg in {id(c): c for c in (runner_cg, db_cg) if c}.values():
            cg.remove()
        if not plan.keep_data:
            shutil.rmtree(plan.data_dir, ignore_errors=True)
