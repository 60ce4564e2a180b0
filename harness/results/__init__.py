"""The files every reader goes through: result.json (RunResult), sweep.json (SweepFile) and verdict.json
(VerdictFile), typed (models.py, walks.py), each written atomically and read by one loader that refuses a
version it does not know (pyperf's rule). The sweep, the verdict, the report, the CLI and the benches read
nothing else. What each version added: docs/design.md, "Results"."""
from __future__ import annotations

import gzip
import json
import os
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from harness.errors import ConfigError
from harness.results.models import (  # noqa: F401  (the package re-exports its models)
                                    CrashFigures, DONE_STATUSES, EngineCounterFigures, HarnessShare, Integrity, IoCounts, IoFigures, Kill,
                                    LatencySummary, MemoryFigures, Metrics, Model, RESULT_VERSION, ReadKind,
                                    ReaderShare, Residency, RunResult, Spool, Status, ThresholdResult)
from harness.results.walks import (  # noqa: F401
                                   CellRecord, ControlRun, EngineBest, Estimate, ImplicationControl, LibraryVersion, MATRICES_VERSION,
                                   MATRIX_VERSION, LeafCell, MatricesFile, MatrixCell, MatrixFile, OptionRow, SWEEP_VERSION, SweepFile, VERDICT_VERSION, Verdict,
                                   VerdictFile, VerdictStep)
from harness.results.answers import MemAnswer, ReaderAnswer  # noqa: F401
from harness.results.knees import KNEE_VERSION, KneeFile, KneeStep  # noqa: F401
from harness.results.curve import CURVE_VERSION, CurveFile  # noqa: F401
from harness.results.reproduce import REPRODUCE_VERSION, ReproduceFile  # noqa: F401

SERVER_OOM_FILE = "server-oom.json"     # beside a result.json: the runtime's word that the server was OOM-killed


M = TypeVar("M", bound=Model)


def write_json(path: Path, obj: dict | BaseModel, indent: int | None = 2) -> None:
    """Atomically: a reader (a resumed sweep, a report, the parent of a killed runner) sees the old file
    or the new one, never half of one."""
    text = obj.model_dump_json(indent=indent) if isinstance(obj, BaseModel) else json.dumps(obj, indent=indent)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def read_json(path: Path) -> dict | None:
    """Untyped: for the runner's own side files (progress.json, environment.json), never a result; a published
    file gzipped (result.json.gz) read as its text."""
    try:
        return json.loads(gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_text())
    except (OSError, ValueError):
        return None


def _load(path: Path, model: type[M], version: int, older: tuple[int, ...] = ()) -> M | None:
    """older: earlier versions the model still reads exactly (fields added since have defaults)."""
    raw = read_json(path)
    if raw is None:
        return None
    if raw.get("version") not in (version, *older):
        known = ", ".join(map(str, (*older, version)))
        raise ConfigError(f"{path}: version {raw.get('version')!r}; this harness reads version {known} only")
    try:
        return model.model_validate(raw)
    except ValidationError as e:
        err = e.errors(include_url=False)[0]
        raise ConfigError(f"{path}: {'.'.join(map(str, err['loc']))}: {err['msg']}") from None


def load_result(path: Path) -> RunResult | None:
    """result.json, or None when there is none (yet); a file of another version is refused. Where the runtime
    left its word beside it (SERVER_OOM_FILE), the result is read as that says: each file has one writer."""
    r = _load(path, RunResult, RESULT_VERSION, older=(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19))
    oom = read_json(path.parent / SERVER_OOM_FILE) if r is not None else None
    if oom:
        r = r.model_copy(update={"status": "oom", "error": f"{oom['error']} (the runner saw: {r.error})"})
    return r


def record_server_oom(run_dir: Path, why: str) -> None:
    """By the runtime, when a server engine's server was OOM-killed under a runner that wrote its result: MEM
    is the server's, so the run is an oom whatever its client saw."""
    write_json(run_dir / SERVER_OOM_FILE, {"error": why})


def load_sweep(path: Path) -> SweepFile | None:
    return _load(path, SweepFile, SWEEP_VERSION)


def load_knee(path: Path) -> KneeFile | None:
    return _load(path, KneeFile, KNEE_VERSION)


def load_curve(path: Path) -> CurveFile | None:
    return _load(path, CurveFile, CURVE_VERSION)


def load_verdict(path: Path) -> VerdictFile | None:
    return _load(path, VerdictFile, VERDICT_VERSION, older=(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11))


def load_reproduce(path: Path) -> ReproduceFile | None:
    return _load(path, ReproduceFile, REPRODUCE_VERSION, older=(1,))


def load_matrix_run(path: Path) -> MatrixFile | None:
    return _load(path, MatrixFile, MATRIX_VERSION, older=(1, 2, 3, 4))


def load_matrices(path: Path) -> MatricesFile | None:
    return _load(path, MatricesFile, MATRICES_VERSION)
