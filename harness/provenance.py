"""The harness's version and git commit, from one place. On the host: the installed package's metadata
(pyproject.toml's version) and git. In an image, where neither exists: what `make images` baked in at
build time (ARKBENCH_VERSION, ARKBENCH_GIT_COMMIT), so a container's result names the code it ran."""
from __future__ import annotations

import os
import subprocess
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parents[1]


@cache
def harness_version() -> str:
    try:
        return version("arkbench")
    except PackageNotFoundError:
        pass
    if os.environ.get("ARKBENCH_VERSION"):
        return os.environ["ARKBENCH_VERSION"]
    try:
        for line in (PROJECT_DIR / "pyproject.toml").read_text().splitlines():
            if line.startswith("version = "):
                return line.split('"')[1]
    except OSError:
        pass
    return "unknown"


def git_commit() -> str | None:
    """HEAD, with '-dirty' when tracked files differ from it; the baked-in commit inside an image."""
    if os.environ.get("ARKBENCH_GIT_COMMIT"):
        return os.environ["ARKBENCH_GIT_COMMIT"]
    try:
        out = subprocess.run(["git", "-C", str(PROJECT_DIR), "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=5)
        if out.returncode:
            return None
        dirty = subprocess.run(["git", "-C", str(PROJECT_DIR), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5).stdout.strip()
        return out.stdout.strip() + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return None


if __name__ == "__main__":      # docker/images.sh: the build args, from the same functions
    print(harness_version(), git_commit() or "")
