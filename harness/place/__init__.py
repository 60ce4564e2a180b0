"""Where a walk's cells run (PLACE): `local`, this machine, one cell after another (harness/walks/sweep.py), or
`swarm`, a Docker Swarm's nodes, one cell per node, each a replicated job the orchestrator limits and
places (swarm.py, with node.py on the node). For Kubernetes, arkbench writes the manifests of the same
cells (k8s.py, `make k8s-manifests`) and kubectl runs them; a later sweep finds their results complete."""
from __future__ import annotations

from harness.errors import ConfigError

PLACES = ("local", "swarm", "k8s")


def why_here(place: str, plan) -> str | None:
    """Why a cell of a placed walk runs on this machine instead, or None when it is placed."""
    if plan.workload.crash:
        return "a crash cell kills and restarts its engine's processes itself"
    if plan.capabilities.server and place == "swarm":
        return "a server engine's server and client are not placed on a swarm yet"
    return None


def placed_runtime(place: str, runtime: str, plan) -> str:
    """The runtime of a cell an orchestrator places: its containers, always; a cell kept here, its own."""
    if place not in PLACES:
        raise ConfigError(f"PLACE: {place!r} is not one of {', '.join(PLACES)}")
    if runtime not in ("auto", "docker"):
        raise ConfigError(f"PLACE={place}: a placed cell runs in the engine's containers; RUNTIME={runtime} "
                          "cannot be placed (give RUNTIME=docker or auto)")
    if why_here(place, plan):
        from harness.runtime.docker import choose_runtime
        return choose_runtime(runtime, plan)[0]
    return "docker"
