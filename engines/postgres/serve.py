"""Entrypoint of the postgres server container (docker runtime): PostgreSQL with the run's
postgresql.conf values from the plan, listening on the container's internal network with the per-run
password, until SIGTERM/SIGINT. Records the memory limit it sees from inside its own cgroup in the
run folder (server-environment.json), since that limit, not the runner's, is the one that matters."""
from __future__ import annotations

import json
import os
import signal
import sys
import threading
from pathlib import Path

from engines.postgres.server import PostgresServer
from engines.postgres.settings import Settings
from harness.platform import cgroup
from harness.scenario.plan import RunPlan

READY_FILE = Path("/tmp/arkbench-pg-ready")     # compose.yaml's healthcheck looks for it


def main(argv: list[str]) -> int:
    plan = RunPlan.read(Path(argv[1]))
    s = Settings.model_validate(plan.engine_settings)
    server = PostgresServer(Path(plan.data_dir), s.server_conf(), s.bin_dir, s.os_user, listen="*",
                            password=os.environ.get("ARKBENCH_PG_PASSWORD") or None)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    try:
        server.start()
        mem_dir = cgroup.own_memory_dir()
        (Path(plan.run_dir) / "server-environment.json").write_text(json.dumps({
            "memory_limit_bytes_seen": cgroup.limit_bytes(mem_dir), "memory_enforcement": "docker",
            "hostname": os.uname().nodename}, indent=2))
        READY_FILE.touch()
        print(f"postgres ready on :5432 (data {server.pgdata})", flush=True)
        while not stop.wait(1.0):
            if server.proc.poll() is not None:
                print(f"postgres exited with {server.proc.returncode}:\n{server.log_tail()}", flush=True)
                return 1
        return 0
    finally:
        print(server.log_tail(), flush=True)
        server.stop()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
