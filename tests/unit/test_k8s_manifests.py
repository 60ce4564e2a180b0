"""`make k8s-manifests` for a ratio verdict, as a user runs it: every document validated against Kubernetes'
own OpenAPI schema (kubernetes-validate's strict JSON schemas, which refuse a field Kubernetes does not
know), and what the Jobs promise checked: an index per cell, requests = limits, one cell per node."""
import copy
import json
import subprocess

import kubernetes_validate
import pytest
import yaml

from harness import registry
from harness.runtime.compose import image_tag
from harness.runtime.docker import daemon_answers, image_id
from harness.scenario.decision import load_decision
from harness.scenario.plan import resolve_plan
from tests.conftest import harness_cmd

K8S_VERSION = "1.33.0"      # native sidecars and backoffLimitPerIndex are GA here


def _why_not() -> str | None:
    if not daemon_answers():
        return "no Docker daemon answers (the cells' identities name the local images)"
    missing = [e for e in registry.names() if image_id(image_tag(e)) is None]
    return f"images not built ({', '.join(missing)}): run `make images`" if missing else None


pytestmark = [pytest.mark.docker, pytest.mark.skipif(_why_not() is not None, reason=str(_why_not()))]
MEMS = "1g 2g 4g"


@pytest.fixture(scope="module")
def manifests(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("k8s")
    r = subprocess.run(harness_cmd() + ["k8s-manifests", "--walk", "verdict", "--profile", "ratio", "--mems", MEMS,
                                        "--results", str(tmp / "results"), "--data", str(tmp / "data"),
                                        "--out", str(tmp / "k8s"), "--registry", "registry.example:5000/"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    path = tmp / "k8s" / (r.stdout.strip().splitlines()[-1].rsplit("/", 1)[-1])
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def test_every_document_is_valid_kubernetes(manifests):
    for doc in manifests:
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)


def test_the_validator_is_not_vacuous(manifests):
    job = copy.deepcopy(next(d for d in manifests if d["kind"] == "Job"))
    job["spec"]["template"]["spec"]["containers"][0]["resource"] = {}        # a misspelt field
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(job, K8S_VERSION, strict=True)


def test_an_indexed_job_per_engine_and_mem_covers_every_cell_of_the_walk(manifests):
    tree = load_decision()
    jobs = {d["metadata"]["name"]: d for d in manifests if d["kind"] == "Job"
            and d["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/component"] == "cell"}
    maps = {d["metadata"]["name"]: d for d in manifests if d["kind"] == "ConfigMap"}
    # a crash criterion's cells kill and restart their engine themselves: they stay on this machine
    placed = [c for c in tree.criteria if not resolve_plan(c.scenario, "sqlite", profile="ratio").workload.crash]
    assert 0 < len(placed) < len(tree.criteria)
    assert sum(j["spec"]["completions"] for j in jobs.values()) == len(tree.steps) * 3 * len(placed)
    assert len(jobs) == len({s.engine for s in tree.steps}) * 3
    walk = None
    for name, job in jobs.items():
        spec = job["spec"]
        assert spec["completionMode"] == "Indexed" and len(maps[name]["data"]) == spec["completions"]
        pod = spec["template"]["spec"]
        anti = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]
        assert anti["topologyKey"] == "kubernetes.io/hostname", "one cell per node"
        cells = [json.loads(v) for v in maps[name]["data"].values()]
        mem_bytes = {c["plan"]["memory"]["data_limit_bytes"] for c in cells}
        assert len(mem_bytes) == 1, "a Job's pods share one memory limit"
        holder = next((c for c in pod["initContainers"] if c["name"] == "server"), pod["containers"][0])
        for c in [*pod["initContainers"], *pod["containers"]]:
            assert c["resources"]["requests"] == c["resources"]["limits"], f"{name}/{c['name']}: Guaranteed QoS"
            assert c["securityContext"]["runAsNonRoot"] and c["image"].startswith("registry.example:5000/arkbench/")
        assert holder["resources"]["limits"]["memory"] == f"{mem_bytes.pop() >> 20}Mi", "MEM is what holds the data"
        for c in cells:
            run_dir = c["plan"]["run_dir"]
            walk = walk or run_dir.split("/")[2]
            assert run_dir.startswith(f"/results/{walk}/") and c["plan"]["runtime"] == "docker"
            assert c["record"]["cell_id"] and c["record"]["state"] == "running"
    assert walk.startswith("verdict-ratio-")
