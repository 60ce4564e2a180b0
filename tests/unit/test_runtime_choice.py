"""RUNTIME=auto runs a cell in the engine's image only where the image holds the checkout's measuring code (its
org.arkbench.code label, docker/images.sh): an image built before a change, or by another checkout, is passed over
for the local runtime, said; RUNTIME=docker refuses it. A walk once ran every cell into a container whose older
harness could not read the plan. The daemon's answers are stood in for: what is tested is the choice."""
import pytest

from harness.errors import ConfigError
from harness.provenance import code_digest
from harness.runtime import docker
from harness.scenario.plan import resolve_plan


@pytest.fixture
def images(monkeypatch):
    """Every image built; each holds the code `held` says (a dict: tag -> label)."""
    held = {}
    monkeypatch.setattr(docker, "daemon_answers", lambda: True)
    monkeypatch.setattr(docker, "image_id", lambda tag: "sha256:" + "0" * 64)
    monkeypatch.setattr(docker, "image_code", lambda tag: held.get(tag))
    return held


@pytest.mark.parametrize("engine", ["sqlite", "postgres"])
def test_auto_runs_in_an_image_only_where_it_holds_the_checkouts_code(images, engine):
    plan = resolve_plan("p99_5x", engine, profile="smoke")
    tags = docker.images_needed(plan)
    images.update({t: code_digest(engine) for t in tags})
    assert docker.choose_runtime("auto", plan)[0] == "docker"
    images[tags[-1]] = "0123456789abcdef"             # a server image too, where the engine has one
    runtime, why = docker.choose_runtime("auto", plan)
    assert runtime == "local" and tags[-1] in why and "other code" in why and "make images" in why
    del images[tags[-1]]                               # an image from before the label
    assert docker.choose_runtime("auto", plan)[0] == "local"
    with pytest.raises(ConfigError, match=f"RUNTIME=docker: image {tags[-1]} holds other code"):
        docker.run_docker(plan)
