"""Entrypoint of the postgres server container (docker runtime, harness/runtime/server_contract.py):
PostgreSQL with the run's postgresql.conf values from the plan, listening on the container's private
network with the per-run password, until SIGTERM/SIGINT. It records the memory limit it sees from
inside its own cgroup, since that limit, not the runner's, is the one that matters."""
from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path

from engines.postgres.server import PostgresServer
from engines.postgres.settings import Settings
from harness.platform import cgroup
from harness.engine_api import server_contract
from harness.state.preload import preload_if_asked
from harness.scenario.plan import RunPlan


def main(argv: list[str]) -> int:
    plan = RunPlan.read(Path(argv[1]))
    s = Settings.model_validate(plan.engine_settings)
    server = PostgresServer(Path(plan.data_dir), s.server_conf(), s.bin_dir, s.os_user, listen=server_contract.listen(),
                            password=server_contract.password())
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    try:
        preload_if_asked(plan)      # inside this container's limit, before the server reads
        server.start()
        server_contract.announce_ready(Path(plan.run_dir), cgroup.limit_bytes(cgroup.own_memory_dir()))
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
