"""Write the images' requirement files into a wheelhouse folder, from this venv's installed versions:
  requirements.txt   every runtime distribution, pinned (the constraints every image installs under);
  core.txt           the harness's own dependencies (pyproject's, no extras);
  engine-<name>.txt  each engine's extra distributions (its engine.toml's `requirements`);
  side-<name>.txt    its side builds, "name requirement" a line (`side_requirements`; `make images`
                     puts their wheels in WHEELHOUSE/side).
Test and report extras (pytest, playwright, matplotlib) stay out of the images.
With --split, once `pip wheel` has filled WHEELHOUSE: each image's own wheels linked into a folder of its
own, core/ (the shared layer every engine image is built on) and engine-<name>/ (that engine's driver and
what it needs beyond core, its side builds under side/), so an image's build copies only what it installs.
Usage: python docker/runtime-requirements.py WHEELHOUSE [--split]"""
import os
import re
import sys
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from harness import registry


def closure(requirements: list[str]) -> dict[str, str]:
    """name -> installed version for the given requirements and everything they need."""
    seen: dict[str, str] = {}
    todo = [Requirement(r) for r in requirements]
    while todo:
        req = todo.pop()
        dist = metadata.distribution(req.name)
        key = canonicalize_name(dist.metadata["Name"])
        if key in seen:
            continue
        seen[key] = dist.version
        for text in dist.requires or []:
            sub = Requirement(text)
            if sub.marker and not any(sub.marker.evaluate({"extra": e}) for e in (*req.extras, "")):
                continue
            todo.append(sub)
    return seen


def core_requirements() -> list[str]:
    reqs = [Requirement(t) for t in metadata.distribution("arkbench").requires or []]
    return [str(r) for r in reqs if not r.marker]


def split(wh: Path, core: list[str], engines: dict[str, list[str]]) -> None:
    wheels = {canonicalize_name(re.sub(r"-\d.*$", "", w.name)): w for w in wh.glob("*.whl")}
    core_names = set(closure(core))

    def link(names, dest: Path) -> None:
        dest.mkdir(parents=True, exist_ok=True)
        for t in wh.glob("*.txt"):
            os.link(t, dest / t.name)
        for n in names:
            os.link(wheels[n], dest / wheels[n].name)

    link(core_names, wh / "core")
    for name, reqs in engines.items():
        link(set(closure(reqs)) - core_names, wh / f"engine-{name}")
        side = [w for w in (wh / "side").glob("*.whl")
                if any(canonicalize_name(r.split("==")[0]) == canonicalize_name(re.sub(r"-\d.*$", "", w.name))
                       for r in registry.manifest(name).side_requirements.values())]
        for w in side:
            (wh / f"engine-{name}" / "side").mkdir(exist_ok=True)
            os.link(w, wh / f"engine-{name}" / "side" / w.name)


if __name__ == "__main__":
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    core = core_requirements()
    engines = {n: list(registry.manifest(n).requirements) for n in registry.names()}
    pinned = closure(core + [r for reqs in engines.values() for r in reqs])
    (out / "core.txt").write_text("".join(f"{r}\n" for r in core))
    for name, reqs in engines.items():
        (out / f"engine-{name}.txt").write_text("".join(f"{r}\n" for r in reqs))
        side = registry.manifest(name).side_requirements
        (out / f"side-{name}.txt").write_text("".join(f"{n} {r}\n" for n, r in side.items()))
    if sys.argv[2:] == ["--split"]:
        split(out, core, engines)
        sys.exit(0)
    (out / "requirements.txt").write_text("".join(f"{n}=={v}\n" for n, v in sorted(pinned.items())))
