"""`make validate`: every file under scenarios/ checked by the loader of its kind, a scenario unless its name
says otherwise (load.OTHER_FILES): the decision tree (decision.py), the read mixes (reads/queries.py) and
the optimisation matrix (matrix.py); the files of scenarios/experiments/ are experiments (experiment.py)."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from harness.errors import ConfigError
from harness.reads.queries import check_entries, load_mixes
from harness.scenario.decision import load_decision
from harness.scenario.experiment import EXPERIMENTS_DIR, load_experiment
from harness.scenario.load import load_scenario
from harness.scenario.matrix import load_matrix
from harness.scenario.v1 import load_v1


def _check_mixes(path: Path) -> None:
    for name, mix in load_mixes(path).items():
        check_entries(mix.queries, "bitemporal", where=f"{path}: mixes.{name}")


LOADERS: dict[str, Callable[[Path], object]] = {"decision": load_decision, "mixes": _check_mixes,
                                                "matrix": load_matrix, "v1": load_v1}


def validate_paths(paths: list[Path]) -> list[tuple[Path, str | None]]:
    """Validate every file under the given files/folders: [(file, error or None)]."""
    files: list[Path] = []
    for p in paths:
        files.extend(sorted(p.glob("*.yaml")) + sorted((p / EXPERIMENTS_DIR.name).glob("*.yaml"))
                     if p.is_dir() else [p])
    out = []
    for f in files:
        try:
            load = load_experiment if f.parent.name == EXPERIMENTS_DIR.name else LOADERS.get(f.stem, load_scenario)
            load(f)
            out.append((f, None))
        except ConfigError as e:
            out.append((f, str(e)))
    return out
