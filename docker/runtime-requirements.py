"""Print name==version for the harness's runtime dependencies and theirs, as installed in this venv: the
images' wheelhouse. Test and report extras (pytest, playwright, matplotlib) stay out of the images."""
import sys
from importlib import metadata

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name


def closure(root: str) -> dict[str, str]:
    seen: dict[str, str] = {}
    todo = [(root, ())]
    while todo:
        name, extras = todo.pop()
        dist = metadata.distribution(name)
        key = canonicalize_name(dist.metadata["Name"])
        if key != canonicalize_name(root):
            seen[key] = dist.version
        for text in dist.requires or []:
            req = Requirement(text)
            if req.marker and not any(req.marker.evaluate({"extra": e}) for e in (*extras, "")):
                continue
            todo.append((req.name, tuple(req.extras)))
    return seen


if __name__ == "__main__":
    for name, version in sorted(closure(sys.argv[1] if len(sys.argv) > 1 else "arkbench").items()):
        print(f"{name}=={version}")
