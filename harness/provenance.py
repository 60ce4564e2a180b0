"""The harness's version, git commit and measuring code's digest, from one place. On the host: the
installed package's metadata (pyproject.toml's version) and git. In an image, where neither exists: what
`make images` baked in at build time (ARKBENCH_VERSION, ARKBENCH_GIT_COMMIT), so a container's result names
the code it ran; the digest is of the files themselves, on the host and in an image alike."""
from __future__ import annotations

import hashlib
import os
import re
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


# harness/'s units that only arrange cells and read their results (the walks, the report, the command
# line): a change to them leaves a measured cell's figures valid. Every other unit runs inside a cell.
NOT_MEASURING = ("bench", "cli", "compare.py", "cell_states.py", "place", "records.py", "registry_cli.py", "report",
                 "walks")
_CODE_SUFFIXES = (".py", ".yaml", ".toml", ".sql", ".sh")


def measuring_files(engine: str) -> list[Path]:
    """The files whose change can change what a cell of `engine` measures: harness/ less NOT_MEASURING,
    the engine's folder less its tests, the query catalogue and the read mixes."""
    root, engines = PROJECT_DIR / "harness", PROJECT_DIR / "engines"
    files = [p for p in root.rglob("*") if p.suffix in _CODE_SUFFIXES and p.is_file()
             and p.relative_to(root).parts[0] not in NOT_MEASURING]
    for name in _engine_folders(engine):
        files += [p for p in (engines / name).rglob("*") if p.suffix in _CODE_SUFFIXES and p.is_file()
                  and "tests" not in p.relative_to(engines / name).parts]
    files += [p for p in (engines / "__init__.py", engines / "queries.yaml", PROJECT_DIR / "scenarios" / "mixes.yaml")
              if p.is_file()]
    return sorted(files)


def _engine_folders(engine: str) -> set[str]:
    """The engine and every engine folder its code imports, transitively (libSQL's and turso's adapters
    are SQLite's, extended)."""
    seen, todo = set(), [engine]
    while todo:
        name = todo.pop()
        if name in seen or not (PROJECT_DIR / "engines" / name).is_dir():
            continue
        seen.add(name)
        for f in (PROJECT_DIR / "engines" / name).glob("*.py"):
            todo += re.findall(r"^\s*(?:from|import) engines\.([a-z][a-z0-9_]*)", f.read_text(), re.M)
    return seen


@cache
def code_digest(engine: str) -> str:
    """16 hex digits over the measuring files' paths and bytes: a cell's identity holds it, so a resumed
    walk reruns a cell that other code measured (harness/records.py says so)."""
    h = hashlib.sha256()
    for f in measuring_files(engine):
        h.update(f.relative_to(PROJECT_DIR).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:16]


if __name__ == "__main__":      # docker/images.sh: the build args and an engine image's code label, from here
    import sys
    print(code_digest(sys.argv[2]) if sys.argv[1:2] == ["code"] else f"{harness_version()} {git_commit() or ''}")
