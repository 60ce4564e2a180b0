"""What the docker runtime promises any server engine (capabilities.server) and expects back: the
server's container is reachable from the runner's as SERVER_HOST on a private network, with a password
made per run (never in an image, a plan or a result); the server records the memory limit it sees in
the run folder and touches READY_FILE, which the compose healthcheck waits for."""
from __future__ import annotations

import json
import os
from pathlib import Path

SERVER_HOST = "server"                                 # the server's compose service name
HOST_ENV = "ARKBENCH_SERVER_HOST"                      # set in the runner's container
PASSWORD_ENV = "ARKBENCH_SERVER_PASSWORD"              # set in both containers
PASSWORD_FILE_ENV = "ARKBENCH_SERVER_PASSWORD_FILE"    # or a file both read (a Kubernetes pod's, in memory)
LISTEN_ENV = "ARKBENCH_SERVER_LISTEN"                  # where the server listens: its network ("*"), or a
                                                       # pod's loopback, which its runner shares
ENVIRONMENT_FILE = "server-environment.json"           # in the run folder
ENVIRONMENT_FILE_ENV = "ARKBENCH_SERVER_ENV"           # the runner's path to it
READY_FILE = Path("/tmp/arkbench-server-ready")        # inside the server's container


def external_server() -> tuple[str, str] | None:
    """(host, password) when this runner's server runs in a container of its own, else None."""
    host = os.environ.get(HOST_ENV)
    return (host, password() or "") if host else None


def password() -> str | None:
    if os.environ.get(PASSWORD_FILE_ENV):
        return Path(os.environ[PASSWORD_FILE_ENV]).read_text().strip() or None
    return os.environ.get(PASSWORD_ENV) or None


def listen() -> str:
    return os.environ.get(LISTEN_ENV) or "*"


def announce_ready(run_dir: Path, data_limit_bytes_seen: int | None) -> None:
    (Path(run_dir) / ENVIRONMENT_FILE).write_text(json.dumps({
        "data_limit_bytes_seen": data_limit_bytes_seen, "memory_enforcement": "docker",
        "hostname": os.uname().nodename}, indent=2))
    READY_FILE.touch()


def data_limit_bytes_seen() -> int | None:
    """What the server's container recorded of its own limit, as the runner finds it."""
    try:
        return json.loads(Path(os.environ[ENVIRONMENT_FILE_ENV]).read_text())["data_limit_bytes_seen"]
    except (OSError, ValueError, KeyError):
        return None
