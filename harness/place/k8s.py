"""`make k8s-manifests`: a sweep's or a verdict's cells as Kubernetes Indexed Jobs, for `kubectl apply -f`.

A pod template has one image and one set of resources, so the cells are grouped by engine and MEM: one
Indexed Job per group, one completion index per cell, its record and plan in the group's ConfigMap
(cell-<index>.json). A cell's pod holds
  node    a native sidecar (an init container that keeps running) outside MEM: it waits for the cell's
          starting state, clones it cold onto the node's disk (an emptyDir), evicts it, serves the block
          feed (harness/place/node.py), and is ready once the runner can start;
  runner  the engine's runner with requests = limits = MEM (Guaranteed QoS: the cgroup's limit is MEM).
Pods of one walk repel each other on kubernetes.io/hostname: one cell per node. Results go to a
ReadWriteMany volume under the walk's own folder name, so copying that folder into results/ and running
the same `make sweep` or `make verdict` finds the cells complete (their identities name the images, which
a registry keeps). States are built once each by a Job of their own into a second RWX volume.

A runner the kernel OOM-kills takes its container with it (memory.oom.group); the sidecar, stopped with
no exit code written, records the cell as `oom` (exit 137) and the pod failure policy does not retry it.
A pod lost with its node (DisruptionTarget) is retried once per index (backoffLimitPerIndex), then fails."""
from __future__ import annotations

import hashlib
import json
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import yaml

from harness.errors import ConfigError
from harness.results import CellRecord
from harness.engine_api import server_contract
from harness.environment import NODE_ENV
from harness.place import why_here
from harness.place.node import PASSWORD, POD_ENV, READY, RUNNER_EXIT, RUNNER_PLAN, SKIP
from harness.runtime.compose import image_tag
from harness.state import store

RESULTS_MOUNT, STATES_MOUNT, DATA_MOUNT, CELLS_MOUNT, CHANNEL = "/results", "/states", "/data", "/cells", "/cell"
PART_OF = "arkbench"
UID = 10001


@dataclass(frozen=True)
class Cluster:
    """What arkbench cannot know of the cluster: given on the command line (K8S_* in the Makefile)."""
    registry: str = ""                  # prefix of the images' names, e.g. registry.example:5000/
    storage_class: str | None = None    # an RWX class (NFS, CephFS); None: the cluster's default
    results_size: str = "50Gi"
    states_size: str = "200Gi"
    runner_cpus: str = "2"              # each runner's CPU request = limit
    node_cpus: str = "1"                # the sidecar's (the feed's generation)
    node_memory: str = "4Gi"            # the sidecar's: the feed, its model and the clone's buffers
    parallelism: int | None = None      # at most this many cells at once (None: as many as nodes allow)


def _dns(text: str, limit: int = 52) -> str:
    """A DNS-1123 label (a Job's name must leave room for its pods' suffixes)."""
    name = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")
    if len(name) <= limit:
        return name
    return f"{name[:limit - 9].rstrip('-')}-{hashlib.sha256(text.encode()).hexdigest()[:8]}"


def _k8s_quantity(mem_bytes: int) -> str:
    return f"{mem_bytes >> 20}Mi" if mem_bytes % (1 << 20) == 0 else str(mem_bytes)


def _relocate(plan, walk: str):
    """The plan with the pod's paths: results under the walk's folder on the results volume, data on the
    node's disk."""
    rel = Path(plan.run_dir).relative_to(Path(plan.run_dir).parents[1])      # <scenario>/<cell>
    return plan.model_copy(update={"run_dir": f"{RESULTS_MOUNT}/{walk}/{rel}", "data_dir": f"{DATA_MOUNT}/{rel}"})


def _security() -> dict:
    return {"runAsNonRoot": True, "runAsUser": UID, "runAsGroup": UID, "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]}, "seccompProfile": {"type": "RuntimeDefault"}}


def _volumes(claims: dict[str, str]) -> list[dict]:
    return [{"name": "results", "persistentVolumeClaim": {"claimName": claims["results"]}},
            {"name": "states", "persistentVolumeClaim": {"claimName": claims["states"]}}]


def _pvc(name: str, size: str, c: Cluster, labels: dict) -> dict:
    spec = {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": size}}}
    if c.storage_class:
        spec["storageClassName"] = c.storage_class
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "labels": labels},
            "spec": spec}


def _index_env() -> list[dict]:
    return [{"name": "CELL_INDEX", "valueFrom": {"fieldRef": {
        "fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}}]


def _resources(cpu: str, mem_bytes: int | None) -> dict:
    """requests = limits (Guaranteed QoS): the memory limit is the cgroup's."""
    limits = {"cpu": cpu, **({"memory": _k8s_quantity(mem_bytes)} if mem_bytes else {})}
    return {"requests": dict(limits), "limits": limits}


def _cells_job(name: str, engine: str, plan, count: int, configmap: str, walk_labels: dict, claims: dict,
               c: Cluster) -> dict:
    labels = {**walk_labels, "app.kubernetes.io/component": "cell"}
    image = c.registry + image_tag(engine)
    channel = [{"name": "channel", "mountPath": CHANNEL}]
    mounts = [{"name": "results", "mountPath": RESULTS_MOUNT}, {"name": "data", "mountPath": DATA_MOUNT}]
    env = [{"name": "TMPDIR", "value": f"{DATA_MOUNT}/.tmp"},
           {"name": NODE_ENV, "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}]
    node = {
        "name": "node", "image": image, "restartPolicy": "Always",       # a native sidecar (Kubernetes >= 1.29)
        "command": ["python", "-m", "harness.place.node", "pod", f"{CELLS_MOUNT}/cell-$(CELL_INDEX).json"],
        "env": [*_index_env(), *env, {"name": store.STATES_ENV, "value": STATES_MOUNT},
                {"name": POD_ENV, "value": "1"}, {"name": "ARKBENCH_CHANNEL", "value": CHANNEL}],
        "resources": {"requests": {"cpu": c.node_cpus, "memory": c.node_memory},
                      "limits": {"cpu": c.node_cpus, "memory": c.node_memory}},
        "startupProbe": {"exec": {"command": ["test", "-f", f"{CHANNEL}/{READY}"]}, "periodSeconds": 5,
                         "failureThreshold": 100000},            # the clone and a state job's build take long
        "volumeMounts": [*mounts, *channel, {"name": "states", "mountPath": STATES_MOUNT},
                         {"name": "cells", "mountPath": CELLS_MOUNT, "readOnly": True}],
        "securityContext": _security()}
    sidecars = [node]
    run = (f"[ -f {CHANNEL}/{SKIP} ] && exit 0; python -m harness.cli _runner {CHANNEL}/{RUNNER_PLAN}; "
           f"echo $? > {CHANNEL}/{RUNNER_EXIT}.part && mv {CHANNEL}/{RUNNER_EXIT}.part {CHANNEL}/{RUNNER_EXIT}")
    runner_env = [*env, {"name": "ARKBENCH_MEM_ENFORCEMENT", "value": "docker"}]
    if plan.capabilities.server:
        server, server_env = _server_sidecar(engine, plan, env, mounts + channel, c)
        sidecars.append(server)
        runner_env += server_env
    runner = {"name": "runner", "image": image, "command": ["sh", "-c", run], "env": runner_env,
              "resources": _resources(c.runner_cpus, plan.memory.runner_limit_bytes),
              "volumeMounts": [*mounts, *channel], "securityContext": _security()}
    pod = {"metadata": {"labels": labels},
           "spec": {"restartPolicy": "Never", "initContainers": sidecars, "containers": [runner],
                    "securityContext": {"fsGroup": UID}, "automountServiceAccountToken": False,
                    "enableServiceLinks": False,
                    "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                        {"labelSelector": {"matchLabels": walk_labels}, "topologyKey": "kubernetes.io/hostname"}]}},
                    "volumes": [*_volumes(claims), {"name": "data", "emptyDir": {}},
                                {"name": "channel", "emptyDir": {"medium": "Memory", "sizeLimit": "16Mi"}},
                                {"name": "cells", "configMap": {"name": configmap}}]}}
    spec = {"completionMode": "Indexed", "completions": count, "parallelism": min(count, c.parallelism or count),
            "backoffLimitPerIndex": 1, "maxFailedIndexes": count,
            "podFailurePolicy": {"rules": [
                # an OOM-killed runner is a result (the sidecar recorded it): never retried
                {"action": "FailIndex", "onExitCodes": {"containerName": "runner", "operator": "In", "values": [137]}},
                # a node lost is counted against the index's one retry (backoffLimitPerIndex)
                {"action": "Count", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]},
            "template": pod}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "labels": labels}, "spec": spec}


def _server_sidecar(engine: str, plan, env: list, mounts: list, c: Cluster) -> tuple[dict, list]:
    """MEM is the server's: a second sidecar, started once the node side has cloned its data, on the pod's
    loopback (which only its runner shares), with the password the node side made in memory; (the sidecar,
    what the runner's environment adds to reach it)."""
    secret = {"name": server_contract.PASSWORD_FILE_ENV, "value": f"{CHANNEL}/{PASSWORD}"}
    server = {
        "name": "server", "image": c.registry + image_tag(engine, "server"), "restartPolicy": "Always",
        "args": [f"{CHANNEL}/{RUNNER_PLAN}"],
        "env": [*env, secret, {"name": server_contract.LISTEN_ENV, "value": "127.0.0.1"}],
        "resources": _resources(c.runner_cpus, plan.memory.data_limit_bytes),
        "startupProbe": {"exec": {"command": ["sh", "-c", f"[ -f {CHANNEL}/{SKIP} ] || "
                                                          f"test -f {server_contract.READY_FILE}"]},
                         "periodSeconds": 2, "failureThreshold": 900},
        "volumeMounts": mounts, "securityContext": _security()}
    return server, [secret, {"name": server_contract.HOST_ENV, "value": "127.0.0.1"},
                    {"name": server_contract.ENVIRONMENT_FILE_ENV,
                     "value": f"{CHANNEL}/{server_contract.ENVIRONMENT_FILE}"}]


def _states_job(name: str, image: str, configmap: str, count: int, labels: dict, claims: dict) -> dict:
    pod = {"metadata": {"labels": {**labels, "app.kubernetes.io/component": "state"}},
           "spec": {"restartPolicy": "Never", "securityContext": {"fsGroup": UID},
                    "automountServiceAccountToken": False, "enableServiceLinks": False,
                    "containers": [{
                        "name": "build", "image": image,
                        "command": ["python", "-m", "harness.place.node", "state", f"{CELLS_MOUNT}/state-$(CELL_INDEX).yaml"],
                        "env": [*_index_env(), {"name": store.STATES_ENV, "value": STATES_MOUNT}],
                        "volumeMounts": [{"name": "states", "mountPath": STATES_MOUNT},
                                         {"name": "cells", "mountPath": CELLS_MOUNT, "readOnly": True}],
                        "securityContext": _security()}],
                    "volumes": [*_volumes(claims), {"name": "cells", "configMap": {"name": configmap}}]}}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "labels": labels},
            "spec": {"completionMode": "Indexed", "completions": count, "parallelism": count, "backoffLimit": 1,
                     "template": pod}}


def _configmap(name: str, data: dict[str, str], labels: dict) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels}, "data": data}


def manifests(runs, walk_dir: Path, c: Cluster) -> list[dict]:
    """Every document for the walk's cells: the volumes, the state Jobs, and an Indexed Job per engine and MEM."""
    walk = walk_dir.name
    key = _dns(walk, 40)
    labels = {"app.kubernetes.io/part-of": PART_OF, "arkbench/walk": key}
    claims = {"results": f"arkbench-results-{key}"[:63], "states": "arkbench-states"}
    docs = [_pvc(claims["results"], c.results_size, c, labels), _pvc(claims["states"], c.states_size, c,
                                                                      {"app.kubernetes.io/part-of": PART_OF})]
    states: dict[str, dict[str, object]] = defaultdict(dict)        # engine -> state id -> plan
    groups: dict[tuple[str, int | None], list] = defaultdict(list)
    for cr in runs:
        if why_here("k8s", cr.plan):       # kills and restarts its engine itself: run here
            continue
        plan = _relocate(cr.plan, walk)
        if plan.load.method == "state" and (plan.load_entities or plan.workload.dc):
            states[plan.engine].setdefault(store.inputs_for(cr.plan).id, plan)
        groups[(plan.engine, plan.memory.data_limit_bytes)].append((cr, plan))
    for engine, by_id in sorted(states.items()):
        name = _dns(f"ark-{key}-states-{engine}")
        data = {f"state-{i}.yaml": yaml.safe_dump(p.model_dump(mode="json", by_alias=True), sort_keys=False)
                for i, p in enumerate(by_id.values())}
        docs += [_configmap(name, data, labels),
                 _states_job(name, c.registry + image_tag(engine), name, len(data), labels, claims)]
    for (engine, mem_bytes), members in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1] or 0)):
        name = _dns(f"ark-{key}-{engine}-{members[0][0].cell.mem or 'nolimit'}")
        data = {}
        for i, (cr, plan) in enumerate(members):
            rec = CellRecord(cell_id=cr.cell_id, scenario=cr.cell.scenario, engine=engine, mem=cr.cell.mem,
                             data_limit_bytes=plan.memory.data_limit_bytes, scale=plan.scale, repeat=cr.cell.repeat,
                             runtime="docker", place="k8s", dir=cr.dir.name, state="running")
            data[f"cell-{i}.json"] = json.dumps({"record": rec.model_dump(mode="json"),
                                                 "plan": plan.model_dump(mode="json", by_alias=True)}, indent=1)
        docs += [_configmap(name, data, labels),
                 _cells_job(name, engine, members[0][1], len(members), name, labels, claims, c)]
    return docs


def write(runs, walk_dir: Path, out_dir: Path, c: Cluster) -> Path:
    from harness.runtime.docker import image_id
    missing = sorted({t for cr in runs for t in (image_tag(cr.plan.engine),) if image_id(t) is None})
    if missing:
        raise ConfigError(f"k8s-manifests: image {missing[0]} is not built here (`make images`): a cell's identity "
                          "names the image it runs, as the cluster will pull it")
    docs = manifests(runs, walk_dir, c)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{walk_dir.name}.yaml"
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return path
