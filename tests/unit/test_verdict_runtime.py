"""A verdict started with RUNTIME=auto and no current image runs every cell locally, and so does its resumption:
images built beside it (a `make test`) moved a ratio walk's later cells into containers halfway. Where the images
are current when it starts, it stays auto. The daemon's answer is stood in for: what is tested is the walk's choice."""
from harness.runtime import docker
from harness.walks.sweep import CellOptions
from harness.walks.verdict import prepare


def _prepare(tmp_path, monkeypatch, answer: str):
    monkeypatch.setattr(docker, "choose_runtime", lambda requested, plan: (answer, f"RUNTIME=auto: {answer} (a test)"))
    monkeypatch.setenv("STATES", str(tmp_path / "states"))
    return prepare("smoke", ["256m"], CellOptions(), tmp_path / "results")


def test_auto_without_a_current_image_pins_the_walk_local_and_its_resumption_too(tmp_path, monkeypatch):
    first = _prepare(tmp_path, monkeypatch, "local")
    assert first.opts.runtime == "local" and (first.root / "runtime").read_text() == "local\n"
    again = _prepare(tmp_path, monkeypatch, "docker")          # the images were built meanwhile
    assert again.root == first.root and again.opts.runtime == "local"


def test_auto_with_current_images_stays_auto(tmp_path, monkeypatch):
    pre = _prepare(tmp_path, monkeypatch, "docker")
    assert pre.opts.runtime == "auto" and not (pre.root / "runtime").exists()
