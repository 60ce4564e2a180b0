"""Where a walk's cells run (PLACE): `local`, this machine, one cell after another (harness/sweep.py), or
`swarm`, a Docker Swarm's nodes, one cell per node, each a replicated job the orchestrator limits and
places (swarm.py, with node.py on the node). For Kubernetes, arkbench writes the manifests of the same
cells (k8s.py, `make k8s-manifests`) and kubectl runs them; a later sweep finds their results complete."""
from __future__ import annotations

from harness.errors import ConfigError

PLACES = ("local", "swarm", "k8s")


def placed_runtime(place: str, runtime: str, plan) -> str:
    """The runtime of a cell an orchestrator places: its containers, always; a crash cell stays here."""
    if place not in PLACES:
        raise ConfigError(f"PLACE: {place!r} is not one of {', '.join(PLACES)}")
    if runtime not in ("auto", "docker"):
        raise ConfigError(f"PLACE={place}: a placed cell runs in the engine's containers; RUNTIME={runtime} "
                          "cannot be placed (give RUNTIME=docker or auto)")
    if plan.workload.crash:
        return "local"        # it kills and restarts the engine's processes itself: here, never placed
    if plan.capabilities.server and place == "swarm":
        raise ConfigError(f"PLACE=swarm: {plan.engine} is a server engine; its server and client containers "
                          "are not placed on a swarm yet (use PLACE=local, or k8s's manifests)")
    return "docker"
