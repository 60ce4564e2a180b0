"""The files every reader goes through: result.json (RunResult), sweep.json (SweepFile) and verdict.json
(VerdictFile), typed, each written atomically and read by one loader that refuses a version it does not
know (pyperf's rule). The sweep, the verdict, the report, the CLI and bench-overhead read nothing else."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Literal, Optional, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from harness.errors import ConfigError

# 2: engine_library, engine_driver, engine_related_versions (a v1 file lacks them); 3: metrics.engine_counters
# 4: metrics.reads_empty, reads_by_kind; 5: memory (the limits under one spelling, the policy), load.preload
RESULT_VERSION = 5
SWEEP_VERSION = 1
# 2: steps' set, control and version_note; library_versions; 3: answers per MEM, matrix, diagnoses
VERDICT_VERSION = 3
# build_failed: the starting state could not be built (outside any limit): no measurement, not the cell's oom
Status = Literal["passed", "failed", "error", "oom", "build_failed"]
DONE_STATUSES: tuple[str, ...] = ("passed", "failed", "oom", "error", "build_failed")
SERVER_OOM_FILE = "server-oom.json"     # beside a result.json: the runtime's word that the server was OOM-killed


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LatencySummary(Model):
    count: int = 0
    p50: Optional[float] = None
    p95: Optional[float] = None
    p99: Optional[float] = None
    p999: Optional[float] = None
    max: Optional[float] = None
    mean: Optional[float] = None
    stdev: Optional[float] = None


class ThresholdResult(Model):
    expr: str
    value: Optional[float]
    passed: bool
    error: Optional[str] = None          # why it has no value ("not evaluable: ...")
    early_abort: bool = False            # the cell stopped early on this threshold
    note: Optional[str] = None           # how it was judged, where that is not what its words say


class Integrity(Model):
    ok: Optional[bool] = None            # None: the run never got to verify
    method: Optional[str] = None
    expected: Optional[dict[str, str]] = None
    actual: Optional[dict[str, str]] = None
    mismatched_tables: Optional[list[str]] = None


class Spool(Model):
    planned_blocks: int
    blocks: int
    bytes: int
    seconds: float
    live_blocks: Optional[int] = None    # blocks of warmup + measure generated while the engine worked


class ReaderShare(Model):
    """How the readers ran: processes of their own (inside MEM for an embedded engine, the application's
    readers) or threads of the runner (readers_in_process_only), and each reader process's RSS."""
    mode: Literal["processes", "threads"]
    count: int
    rss_bytes_start_max: Optional[int] = None     # the largest reader process, connection open
    rss_bytes_end_max: Optional[int] = None       # the largest reader process, at its end


class HarnessShare(Model):
    """What the harness cost: its memory inside the limit and any wait for blocks."""
    # the runner's RSS (0: outside MEM): an embedded engine's heap and the harness's own together
    inside_limit_bytes: Optional[int] = None       # as the measured phase starts
    inside_limit_bytes_end: Optional[int] = None
    inside_limit_bytes_max: Optional[int] = None
    # told apart where the engine accounts for its heap (counter engine_heap_bytes: SQLite's status, DuckDB's
    # duckdb_memory()): the engine's share, and the rest of the RSS, the harness's (interpreter, driver, buffers,
    # and the allocator's overhead on the engine's own allocations, which the engine does not count)
    engine_heap_bytes: Optional[int] = None
    engine_heap_bytes_end: Optional[int] = None
    harness_bytes: Optional[int] = None
    harness_bytes_end: Optional[int] = None
    generator_wait_s: Optional[float] = None
    generator_wait_share: Optional[float] = None
    latency_values_clamped: int = 0
    spool: Optional[Spool] = None
    readers: Optional[ReaderShare] = None


class EngineCounterFigures(Model):
    """The engine's own counters (harness/engine_api EngineCounters) over the measured phase."""
    measured: dict[str, int] = {}      # each counter's increase over the measured phase
    at_end: dict[str, int] = {}        # gauges as the measured phase ended
    page_cache_hit_ratio: Optional[float] = None   # hits / (hits + misses) over the measured phase


class ReadKind(Model):
    """One entry of the readers' mix in the measured phase (latency from the intended start)."""
    count: int
    qps: Optional[float]
    p50: Optional[float]
    p95: Optional[float]
    p99: Optional[float]
    max: Optional[float]
    mean_rows: Optional[float]
    empty: int


class MemoryFigures(Model):
    """The run's limits, as planned (harness/scenario/memory.py) and as the processes saw them."""
    policy: str = "stock"                        # sized | stock
    enforcement: str = "none"                    # cgroup-v1 | cgroup-v2 | docker | none
    data_limit_bytes: Optional[int] = None       # MEM: what the database gets
    data_limit_bytes_seen: Optional[int] = None  # as the process holding the data sees it
    runner_limit_bytes: Optional[int] = None     # the runner's own (MEM itself when it hosts the engine)
    runner_limit_bytes_seen: Optional[int] = None
    engine_cache_bytes: Optional[int] = None     # the engine's own cache under the policy
    sized_settings: dict[str, str] = {}          # what the policy set (the engine's read-back is engine_settings)


class Metrics(Model):
    partial: bool = False                # rebuilt from what a killed runner left behind
    phase_reached: Optional[str] = None  # partial results: where the runner died
    measured_s: Optional[float] = None
    window_s: Optional[float] = None
    commit_latency_ms: LatencySummary = LatencySummary()
    service_time_ms: LatencySummary = LatencySummary()
    head_lag_ms: LatencySummary = LatencySummary()
    blocks: Optional[int] = None
    rows: Optional[int] = None
    rows_committed_in_window: Optional[int] = None
    rows_per_s: Optional[float] = None   # sustained: committed inside the window, over the window
    offered_rows_per_s: Optional[float] = None
    blocks_per_s: Optional[float] = None
    db_bytes_max: Optional[float] = None
    wal_bytes_max: Optional[float] = None
    db_bytes_after_load: Optional[int] = None
    db_bytes_final: Optional[int] = None
    logical_bytes_final: Optional[int] = None
    bloat_ratio: Optional[float] = None
    bloat_ratio_after_load: Optional[float] = None
    checkpoints: Optional[int] = None
    manual_checkpoint_ms: Optional[dict] = None
    mem_bytes_max: Optional[float] = None
    rss_bytes_max: Optional[float] = None
    harness: HarnessShare = HarnessShare()
    read_latency_ms: Optional[LatencySummary] = None
    reads: Optional[int] = None
    read_errors: Optional[int] = None
    reads_per_s: Optional[float] = None
    reads_empty: Optional[int] = None        # found nothing where the data says they must: not in the latencies
    reads_by_kind: Optional[dict[str, ReadKind]] = None    # per entry of the readers' mix
    engine_counters: Optional[EngineCounterFigures] = None   # None: the engine gives none


class RunResult(Model):
    version: Literal[1, 2, 3, 4, 5] = RESULT_VERSION
    run_id: str
    engine: str
    scenario: str
    profile: str
    runtime: str
    status: Status
    error: Optional[str] = None
    memory: MemoryFigures = MemoryFigures()
    image_id: Optional[str] = None
    server_environment: Optional[dict] = None
    scale: float
    engine_version: Optional[str] = None                  # library (driver), for people
    engine_library: Optional[str] = None                  # the engine as it ran: "SQLite 3.45.1"
    engine_driver: Optional[str] = None                   # the Python package that drove it
    engine_related_versions: dict[str, str] = {}          # e.g. the stdlib's SQLite beside libsql's own
    engine_settings: dict = {}                            # effective: read back from the engine
    plan: dict
    environment: dict
    load: Optional[dict] = None
    metrics: Metrics
    thresholds: list[ThresholdResult] = []
    early_abort: Optional[dict] = None
    integrity: Integrity = Integrity()
    final_storage: Optional[dict] = None
    warnings: list[str] = []
    files: dict[str, str] = {}

    @model_validator(mode="before")
    @classmethod
    def _memory_before_v5(cls, data):
        """A v1-v4 file spelled the limits four ways at the top level: read them into `memory`."""
        if isinstance(data, dict) and "memory" not in data:
            data = dict(data)
            seen, asked = data.pop("memory_limit_bytes", None), data.pop("memory_limit_requested_bytes", None)
            client = data.pop("client_memory_limit_bytes", None)
            data["memory"] = {"enforcement": data.pop("memory_enforcement", "none"), "data_limit_bytes": asked,
                              "data_limit_bytes_seen": seen, "runner_limit_bytes": client if client else asked,
                              "runner_limit_bytes_seen": client if client else seen}
        return data

    @property
    def measure_s(self) -> float:
        return float(self.plan.get("phases", {}).get("measure_s") or 0.0)


class CellRecord(Model):
    """One cell of a sweep or a verdict: what was asked, its state, and (once complete) its figures."""
    cell_id: str
    scenario: str
    engine: str
    mem: Optional[str]
    data_limit_bytes: Optional[int]

    @model_validator(mode="before")
    @classmethod
    def _old_name(cls, data):
        """sweep.json before result v5 named MEM mem_limit_bytes."""
        if isinstance(data, dict) and "mem_limit_bytes" in data:
            data = {**data, "data_limit_bytes": data["mem_limit_bytes"]}
            del data["mem_limit_bytes"]
        return data
    scale: float
    repeat: int = 1
    runtime: str
    dir: str
    state: Literal["running", "complete", "partial"]
    started_utc: Optional[str] = None
    finished_utc: Optional[str] = None
    exit_code: Optional[int] = None
    status: Optional[Status] = None
    error: Optional[str] = None
    p50_ms: Optional[float] = None
    p99_ms: Optional[float] = None
    max_ms: Optional[float] = None
    blocks: Optional[int] = None
    rows_per_s: Optional[float] = None
    bloat_ratio: Optional[float] = None
    wal_bytes_max: Optional[float] = None
    checkpoints: Optional[int] = None
    integrity_ok: Optional[bool] = None
    thresholds: list[ThresholdResult] = []
    early_abort: Optional[dict] = None
    load_digest: Optional[dict[str, str]] = None
    load_row_counts: Optional[dict[str, int]] = None
    # set by the verdict
    criterion: Optional[str] = None
    measure_s: Optional[float] = None
    diagnosis: Optional[str] = None           # one line on why it did not pass (harness/verdict/answer.py)


class SweepFile(Model):
    version: Literal[1] = SWEEP_VERSION
    kind: Literal["sweep", "verdict-cells"]
    dir: str
    spec: Optional[dict] = None
    updated_utc: str
    cells_total: int
    cells_complete: int
    status_counts: dict[str, int]
    starting_state: dict[str, dict]
    cells: list[CellRecord]


class ControlRun(Model):
    """The step before, again on the same cells, changed only by `set` (decision.yaml's control)."""
    engine: str
    set: dict
    why: str
    passed: bool
    outcome: Literal["passed", "failed", "error"]
    errors: list[str]
    cells: list[CellRecord]
    cells_unrun: int = 0


class VerdictStep(Model):
    engine: str
    decision: str
    passed: bool                                # at one MEM at least
    outcome: Literal["passed", "failed", "error", "mixed"]   # mixed: passed at some MEMs, not at others
    errors: list[str]
    cells: list[CellRecord]
    set: dict = {}                              # the step's own engine settings
    cells_unrun: int = 0                        # left unrun once a cell had failed the step (ALL_CELLS=1 runs them)
    control: Optional[ControlRun] = None
    version_note: Optional[str] = None          # whether it ran the same library as the step before


class LibraryVersion(Model):
    """One engine's library of the kind decision.yaml's compare_versions names, as it ran or is installed."""
    engine: str
    set: dict = {}
    library: str                                # engine_library
    driver: str
    version: Optional[str]                      # engine_related_versions[of]
    source: Literal["measured", "installed"]    # a cell's result.json, or harness.versions' probe


class Verdict(Model):
    engine: Optional[str]
    decision: str
    path: list[str]
    note: Optional[str] = None                  # what a control found, e.g. an upgrade alone also passes


class MatrixCell(Model):
    """One engine at one MEM in the walk: pass, fail, implied (a failure at a larger MEM implies it; not
    run), error (no measurement: the answer there is inconclusive), or not run (the MEM had its answer)."""
    engine: str
    mem: str
    outcome: Literal["pass", "fail", "implied", "error", "not run"]
    cells: list[str] = []                       # <scenario>/<dir> of the cells behind it
    diagnosis: Optional[str] = None


class MemAnswer(Model):
    """The tree's answer at one memory level: the first engine that met every criterion there."""
    mem: str
    at_reference: Optional[str] = None          # the same ratio at the criterion's scale: "≈ 8.0 GB at 5x"
    status: Literal["answered", "none", "inconclusive"]
    engine: Optional[str] = None
    decision: str
    why: Optional[str] = None                   # inconclusive: the cell that errored


class VerdictFile(Model):
    version: Literal[1, 2, 3] = VERDICT_VERSION
    kind: Literal["verdict"] = "verdict"
    decision_file: str
    profile: str
    mems: list[str]
    repeats: int
    dir: str
    criteria: list[dict]
    steps: list[VerdictStep]
    verdict: Optional[Verdict] = None
    caveats: list[str] = []
    updated_utc: Optional[str] = None
    versions_of: Optional[str] = None           # compare_versions.of: "sqlite"
    library_versions: list[LibraryVersion] = []
    version_notes: list[str] = []               # each pair of consecutive steps among them, run or not
    memory_basis: Optional[str] = None          # how MEMS was derived (a ratio profile), else none
    answers: list[MemAnswer] = []
    matrix: list[MatrixCell] = []
    walk_s: Optional[float] = None
    cells_implied: int = 0
    monotonicity: Optional[str] = None          # the assumption behind implied cells, as the report states it


M = TypeVar("M", bound=Model)


def write_json(path: Path, obj: dict | BaseModel, indent: int | None = 2) -> None:
    """Atomically: a reader (a resumed sweep, a report, the parent of a killed runner) sees the old file
    or the new one, never half of one."""
    text = obj.model_dump_json(indent=indent) if isinstance(obj, BaseModel) else json.dumps(obj, indent=indent)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def read_json(path: Path) -> dict | None:
    """Untyped: for the runner's own side files (progress.json, environment.json), never a result."""
    try:
        return json.loads(path.read_text())
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
    r = _load(path, RunResult, RESULT_VERSION, older=(1, 2, 3, 4))
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


def load_verdict(path: Path) -> VerdictFile | None:
    return _load(path, VerdictFile, VERDICT_VERSION, older=(1, 2))
