"""The Docker Swarm a walk's cells are placed on, through the docker CLI on a manager: its nodes, a service's
newest task, and one walk's services and internal networks, labelled with the walk's key so that a later start
finds what a killed one left."""
from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

from harness.errors import ConfigError
from harness.place.node import NODE_ENV
from harness.runtime.docker import _docker

LABEL = "org.arkbench.walk"
ENDED = {"complete", "failed", "shutdown", "rejected", "orphaned", "remove"}


@dataclass(frozen=True)
class Node:
    id: str
    hostname: str
    ready: bool
    cpus: float


@dataclass
class Task:
    state: str
    exit_code: int | None
    node_id: str
    container: str | None
    error: str


def nodes() -> list[Node]:
    """The swarm's nodes, as a manager sees them. Raises ConfigError where this engine manages no swarm."""
    info = _docker("info", "--format", "{{json .Swarm}}")
    swarm = json.loads(info.stdout or "{}") if info.returncode == 0 else {}
    if swarm.get("LocalNodeState") != "active" or not swarm.get("ControlAvailable"):
        raise ConfigError("PLACE=swarm: this Docker engine is not a swarm manager (state "
                          f"{swarm.get('LocalNodeState', 'unknown')!r}); `docker swarm init` makes this machine a "
                          "one-node swarm, `docker swarm join` adds nodes (docs/placement.md)")
    ids = _docker("node", "ls", "-q").stdout.split()
    out = []
    for n in json.loads(_docker("node", "inspect", *ids).stdout or "[]"):
        d = n["Description"]
        out.append(Node(n["ID"], d["Hostname"], n["Status"]["State"] == "ready" and n["Spec"]["Availability"] == "active",
                        d["Resources"]["NanoCPUs"] / 1e9))
    return out


def task_of(service: str) -> Task | None:
    """The service's newest task (a replicated job with no restart has one)."""
    ids = _docker("service", "ps", "-q", "--no-trunc", service).stdout.split()
    if not ids:
        return None
    tasks = json.loads(_docker("inspect", *ids).stdout or "[]")
    if not tasks:
        return None
    t = max(tasks, key=lambda t: t["CreatedAt"])
    st = t["Status"]
    cs = st.get("ContainerStatus") or {}
    return Task(st["State"], cs.get("ExitCode") if st["State"] in ENDED else None, t.get("NodeID", ""),
                cs.get("ContainerID"), st.get("Err", ""))


def _bind_mount(path: Path, readonly: bool = False) -> list[str]:
    return ["--mount", f"type=bind,src={path},dst={path}{',readonly' if readonly else ''}"]


@dataclass
class Swarm:
    """One walk's services: named from its key, labelled with it, so a later start finds what a killed one left."""
    key: str
    cpus: float                          # the smallest node's: its whole CPU is what a cell reserves
    images: dict[str, str]               # tag -> the image id here (what the cells' identities name)

    def create(self, name: str, image: str, command: list[str], *, entrypoint: str | None = None,
               mounts: list[Path] = (), env: dict[str, str] | None = None, network: str | None = None,
               reserve_cpu: float | None = None, mem_bytes: int | None = None, node: str | None = None) -> None:
        # one replica, never restarted: a one-shot task. Not --mode replicated-job: Docker 20.10's constraint
        # enforcer counts a job's task as still holding its reservation, so a task reserving a node's whole
        # CPU is rejected on the node's next update, and completed ones go on counting (moby/moby#52652)
        args = ["service", "create", "-d", "-q", "--name", name, "--replicas", "1",
                "--restart-condition", "none", "--no-resolve-image", "--label", f"{LABEL}={self.key}",
                "--cap-drop", "ALL", "--stop-signal", "SIGINT", "--stop-grace-period", "60s",
                "--env", f"{NODE_ENV}={{{{.Node.Hostname}}}}", "--limit-cpu", f"{self.cpus:g}"]
        for m in mounts:
            args += _bind_mount(m)
        for k, v in (env or {}).items():
            args += ["--env", f"{k}={v}"]
        if entrypoint:
            args += ["--entrypoint", entrypoint]
        if network:
            args += ["--network", network]
        if reserve_cpu:
            args += ["--reserve-cpu", f"{reserve_cpu:g}"]
        if mem_bytes:                    # the limit is the reservation: the scheduler places no more than fits
            args += ["--limit-memory", str(mem_bytes), "--reserve-memory", str(mem_bytes)]
        if node:
            args += ["--constraint", f"node.id=={node}"]
        r = _docker(*args, image, *command)
        if r.returncode:
            raise ConfigError(f"docker service create {name} failed: {r.stderr.strip()[-1000:]}")

    def network(self, name: str) -> str:
        """A new internal network (named afresh: one a killed walk left may still be on its way out)."""
        name = f"{name}-{secrets.token_hex(3)}"
        r = _docker("network", "create", "-d", "overlay", "--internal", "--label", f"{LABEL}={self.key}", name)
        if r.returncode:
            raise ConfigError(f"docker network create {name} failed: {r.stderr.strip()}")
        return name

    def remove(self, *names: str) -> None:
        names = [n for n in names if n]
        if names:
            _docker("service", "rm", *names)

    def logs(self, service: str, path: Path) -> None:
        r = _docker("service", "logs", "--raw", "--no-task-ids", service)
        path.write_text(r.stdout + r.stderr)

    def leftovers(self) -> int:
        """Services and networks of this walk that a killed driver left: removed before anything runs."""
        svcs = _docker("service", "ls", "-q", "--filter", f"label={LABEL}={self.key}").stdout.split()
        if svcs:
            _docker("service", "rm", *svcs)
        self.drop_networks()
        return len(svcs)

    def drop_networks(self) -> None:
        nets = _docker("network", "ls", "-q", "--filter", f"label={LABEL}={self.key}").stdout.split()
        for _ in range(10):              # a network is busy until its last task's container is gone
            if not nets or _docker("network", "rm", *nets).returncode == 0:
                return
            time.sleep(1)
            nets = _docker("network", "ls", "-q", "--filter", f"label={LABEL}={self.key}").stdout.split()
