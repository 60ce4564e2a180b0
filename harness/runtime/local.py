"""RUNTIME=local: the runner runs in a child process, inside a fresh memory cgroup when MEM is given.
An OOM kill becomes a result with status "oom" (exit 3), built from what the runner left behind."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from harness.errors import EXIT_RUN_FAILED, ConfigError
from harness.runner.metrics import summary_from_hlog
from harness.runner.result import read_json as _read_json, write_result
from harness.runtime.cgroup import MemoryCgroup
from harness.scenario.plan import RunPlan


def run_local(plan: RunPlan) -> int:
    run_dir = Path(plan.run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    plan_path = run_dir / "plan.yaml"
    plan.write(plan_path)
    env = dict(os.environ)
    cg = None
    if plan.mem_limit_bytes:
        try:
            cg = MemoryCgroup(plan.run_id, plan.mem_limit_bytes)
        except OSError as e:
            shutil.rmtree(run_dir, ignore_errors=True)
            raise ConfigError(f"MEM={plan.mem_limit_bytes}: cannot enforce a memory limit here ({e}); "
                              "run as root on a machine with a memory cgroup, use RUNTIME=docker, "
                              "or drop MEM") from None
        env["ARKBENCH_MEM_ENFORCEMENT"] = cg.enforcement
    try:
        proc = subprocess.Popen([sys.executable, "-m", "harness.cli", "_runner", str(plan_path)], env=env,
                                preexec_fn=cg.add_self if cg else None)
        while True:
            try:
                rc = proc.wait()
                break
            except KeyboardInterrupt:   # the child got the same SIGINT; let it write its partial result
                continue
        oom = cg.oom_killed() if cg else False
        if oom or rc == -signal.SIGKILL:
            status = "oom" if oom else "error"
            why = (f"OOM-killed at the {plan.mem_limit_bytes}-byte memory limit" if oom
                   else "the runner was killed (SIGKILL)")
            write_failed_result(plan, status, why)
            return EXIT_RUN_FAILED
        if not (run_dir / "result.json").exists():
            write_failed_result(plan, "error", f"the runner exited with {rc} and wrote no result")
            return EXIT_RUN_FAILED
        return rc
    finally:
        if cg:
            cg.remove()
        if not plan.keep_data:
            shutil.rmtree(plan.data_dir, ignore_errors=True)


def write_failed_result(plan: RunPlan, status: str, error: str) -> Path:
    """A result for a runner that died before writing one: its last progress snapshot, marked partial."""
    run_dir = Path(plan.run_dir)
    progress = _read_json(run_dir / "progress.json") or {}
    env = _read_json(run_dir / "environment.json") or {"memory_enforcement": "none"}
    metrics = {"partial": True, "measured_s": progress.get("measured_s"),
               # warmup intervals are in the log too: the partial summary covers both phases
               "commit_latency_ms": summary_from_hlog(run_dir / "commit.hlog"), "blocks": progress.get("blocks"),
               "rows": progress.get("rows"), "phase_reached": progress.get("phase", "start"),
               "db_bytes_max": (progress.get("peaks") or {}).get("db_bytes"),
               "wal_bytes_max": (progress.get("peaks") or {}).get("wal_bytes"),
               "mem_bytes_max": (progress.get("peaks") or {}).get("mem_bytes")}
    ctx = {"plan": plan, "environment": env, "state": None, "status": status, "error": error,
           "metrics": metrics, "warnings": [f"partial result: the runner died in phase "
                                            f"{metrics['phase_reached']!r}; timeseries.csv holds what it sampled"]}
    return write_result(run_dir, ctx)
