"""result.json's typed model (RunResult and its parts): what one run measured, as the runner writes it."""
from __future__ import annotations

from typing import Literal, Optional

from pydantic import model_validator

from harness.results.base import Bounds, Judged, LatencySummary, Model
from harness.results.design import BlockLogFigures
from harness.results.trend import TrendResult

# build_failed: the starting state could not be built (outside any limit): no measurement, not the cell's oom
Status = Literal["passed", "failed", "error", "oom", "build_failed"]
DONE_STATUSES: tuple[str, ...] = ("passed", "failed", "oom", "error", "build_failed")
RESULT_VERSION = 20


class ThresholdResult(Model):
    expr: str
    value: Optional[float]
    passed: bool
    error: Optional[str] = None          # why it has no value ("not evaluable: ...")
    early_abort: bool = False            # the cell stopped early on this threshold
    note: Optional[str] = None           # how it was judged, where that is not what its words say
    bounds: Optional[Bounds] = None      # a whole-phase percentile's one-sided 95% bounds (result v12)
    judged: Optional[Judged] = None      # on the bounds where there are some, else as `passed` (v12)
    trend: Optional[TrendResult] = None  # its figure's trend, carried to the criterion's hour (v16)


class Integrity(Model):
    ok: Optional[bool] = None            # None: the run never got to verify
    method: Optional[str] = None
    expected: Optional[dict[str, str]] = None
    actual: Optional[dict[str, str]] = None
    mismatched_tables: Optional[list[str]] = None
    last_block: Optional[int] = None     # v20: the generator's number of the last block applied (state/continued.py)


class Spool(Model):
    planned_blocks: int
    blocks: int
    bytes: int
    seconds: float
    live_blocks: Optional[int] = None    # blocks of warmup + measure generated while the engine worked
    reused: Optional[bool] = None        # v13: an earlier cell's spool over the same state, copied (feed/spool_cache.py)
    short_of: Optional[str] = None       # v17: why it holds fewer blocks than planned (the disk's room)


class ReaderShare(Model):
    """How the readers ran: processes of their own (inside MEM for an embedded engine, the application's
    readers) or threads of the runner (readers_in_process_only), and each reader process's RSS."""
    mode: Literal["processes", "threads"]
    count: int
    rss_bytes_start_max: Optional[int] = None     # the largest reader process, connection open
    rss_bytes_end_max: Optional[int] = None       # the largest reader process, at its end
    # the reader processes' CPU over their schedule (warm-up and measured phase), against the cores here:
    # near 1, the readers use the machine and more cores would carry more reads (None: reader threads)
    cpu_s: Optional[float] = None
    wall_s: Optional[float] = None
    cores: Optional[int] = None

    @property
    def cpu_share(self) -> Optional[float]:
        return round(self.cpu_s / (self.wall_s * self.cores), 3) if self.cpu_s is not None and self.wall_s and \
            self.cores else None


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
    # v17: the feed's CPU over the measured phase (outside MEM, on the engine's machine): ~0 where every block was
    # spooled; the live generation's cost beside the engine where not. None where a container hides the feed
    feed_cpu_s: Optional[float] = None
    feed_cores: Optional[float] = None


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
    checked: Optional[int] = None     # v7, a DC query: answers compared with the model at the block they saw
    wrong: Optional[int] = None       #     of those, answers that differ (the run is an error)
    unknown: Optional[int] = None     #     answers the model could no longer check (history it does not keep)


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


class IoCounts(Model):
    """Block-device I/O over the measured phase (harness/platform/blockio.py); None: not counted there."""
    source: str                          # "device vda" | "cgroup-v1 blkio" | "cgroup io.stat" | "/proc/<pid>/io"
    read_bytes: Optional[int] = None
    write_bytes: Optional[int] = None
    read_ops: Optional[int] = None
    write_ops: Optional[int] = None


class Residency(Model):
    """Bytes of the engine's files in the page cache (mincore) as the measured phase starts (the sampler's
    first tick in it) and as it ends (after its last block)."""
    file_bytes_start: int
    resident_bytes_start: int
    file_bytes_end: Optional[int] = None
    resident_bytes_end: Optional[int] = None
    share_start: Optional[float] = None
    share_end: Optional[float] = None


class IoFigures(Model):
    """The verification checklist's I/O: what reached the disk, per logical byte committed, and what of the
    engine's files the page cache held."""
    device: Optional[IoCounts] = None         # the data's whole device: writeback and journal included, and
                                              # whatever else the machine wrote meanwhile
    attributed: Optional[IoCounts] = None     # caused by the cell's own processes (/proc/<pid>/io): reads
                                              # from storage, and bytes dirtied for it (bytes only)
    logical_bytes_written: Optional[int] = None   # values' bytes of the rows the measured blocks wrote
                                                  # (inserted, and versions rewritten as terminated)
    write_amplification: Optional[float] = None   # device bytes written / logical bytes written
    read_iops: Optional[float] = None             # device reads per second: cache misses reaching the disk
    read_bytes_per_s: Optional[float] = None
    residency: Optional[Residency] = None
    index_residency: Optional[dict[str, Residency]] = None   # per table and index (engine page_map)

    def summary(self) -> str:
        """One line, for the runner's log and a run's printed summary."""
        parts = []
        if self.device is not None and self.device.write_bytes is not None:
            parts.append(f"{self.device.write_bytes / 2**20:,.0f} MiB written to {self.device.source}")
        if self.write_amplification is not None:
            parts.append(f"write amplification {self.write_amplification:.1f}x")
        if self.read_iops is not None:
            parts.append(f"{self.read_iops:.0f} device reads/s")
        if self.residency and self.residency.share_start is not None:
            end = f" → {self.residency.share_end:.0%}" if self.residency.share_end is not None else ""
            parts.append(f"resident {self.residency.share_start:.0%}{end}")
        # a table of a few pages (sqlite_stat1) says nothing of the cache
        sized = {n: r for n, r in (self.index_residency or {}).items() if r.file_bytes_end >= 1 << 20}
        if sized:
            worst = min(sized.items(), key=lambda kv: kv[1].share_end or 0)
            parts.append(f"least resident of the tables and indexes over 1 MiB: {worst[0]} {worst[1].share_end:.0%}")
        return ", ".join(parts) or "no I/O figures here"


class PhaseFigure(Model):
    p50_ms: float
    p99_ms: float
    mean_ms: float
    share: float                  # of the measured blocks' summed service time


class CpuFigure(Model):
    user_mean_ms: float           # the engine's processes' CPU per block (harness/runner/phases.CpuProbe)
    sys_mean_ms: float
    share: float                  # (user + sys) / service time, summed over the blocks: ~1 CPU-bound, ~0 waiting


class BlockPhaseFigures(Model):
    """v9: where the measured blocks' service time went (harness/runner/phases.py)."""
    blocks: int
    service_mean_ms: float
    phases: dict[str, PhaseFigure]    # statements, commit, checkpoint (inside the commit), other
    timed: list[str] = []             # the phases the engine timed apart; the rest of its time is in `other`
    biggest: str
    cpu: Optional[CpuFigure] = None   # None: the engine's processes are not visible to the runner


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
    reads_late: Optional[int] = None         # v7: due in the window, never started before the readers stopped:
                                             # not in reads; in read_latency_ms at a lower bound (the stop)
    reads_by_kind: Optional[dict[str, ReadKind]] = None    # per entry of the readers' mix
    engine_counters: Optional[EngineCounterFigures] = None   # None: the engine gives none
    io: Optional[IoFigures] = None           # v6; None: a run before it, or one that never reached the clock
    block_phases: Optional[BlockPhaseFigures] = None   # v9; None: no measured block
    block_log: Optional[BlockLogFigures] = None        # v11; a block log's (harness/designs/), else None
    trends: dict[str, TrendResult] = {}               # v16: figures without a line (db_bytes, wal_bytes), their slope


class Kill(Model):
    """One SIGKILL of a crash run and the restart after it (harness/crash/)."""
    life: int                               # the life killed (0: the first)
    aimed_at: str                           # commit | checkpoint | anywhere | wal <bytes>
    landed_in: str                          # what the life was doing (its status file): commit, checkpoint, idle, ...
    in_phase_ms: Optional[float] = None     # how long it had been in it
    block_in_flight: Optional[int] = None   # the block being committed, where it was
    last_acked_block: int                   # the newest block whose acknowledgement the driver logged
    wal_bytes: Optional[int] = None         # the engine's WAL at the last acknowledgement (what recovery replays)
    dropped_bytes: Optional[int] = None     # a power cut: bytes written since their file's last fsync, dropped
    recovered_block: Optional[int] = None   # the block whose model the restarted engine's rows match; None: none
    lost_acked_blocks: int = 0              # acknowledged blocks missing after the restart
    in_flight_kept: bool = False            # the block in flight at the kill was there after it (allowed)
    unacked_blocks: int = 0                 # blocks present that were never sent to it (always a failure)
    corrupt: bool = False                   # the rows match no block's model (always a failure)
    open_s: Optional[float] = None          # restart: the engine open (a server: started and accepting)
    recovery_s: Optional[float] = None      # restart: open + the first successful read
    first_commit_s: Optional[float] = None  # restart: to the first block committed after it
    verify_s: Optional[float] = None        # digesting every row (not in the above)
    replayed_blocks: Optional[int] = None   # v11, a block log's: blocks replayed from it at the restart
    replay_s: Optional[float] = None        # v11, in open_s


class CrashFigures(Model):
    """v8: a crash run's kills and what each restart found."""
    mode: Literal["kill", "power_cut"]
    durability: Optional[str] = None        # what a commit guarantees at the run's settings (engine.toml)
    survives: str                           # the worst failure an acknowledged commit outlives there
    promised: bool                          # so: must every acknowledged block outlive this mode's kills?
    cold_restart: bool = True               # the data's page cache evicted before each restart
    kills: list[Kill] = []
    acknowledged_blocks: int = 0
    lost_acked_blocks: int = 0
    unacked_blocks: int = 0
    corrupt_restarts: int = 0
    recovery_s: LatencySummary = LatencySummary()     # over the restarts, in seconds
    landed: dict[str, int] = {}                       # kills by where they landed
    final_ok: Optional[bool] = None                   # the last life's rows matched the model at its end


class RunResult(Model):
    version: Literal[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20] = RESULT_VERSION
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
    settled: Optional[dict] = None                        # v10: a matrix cell ended once settled (abort.py)
    integrity: Integrity = Integrity()
    final_storage: Optional[dict] = None
    warnings: list[str] = []
    files: dict[str, str] = {}
    crash: Optional[CrashFigures] = None                  # v8: a crash scenario's (harness/crash/)

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
    def block_interval_ms(self) -> float | None:
        return (self.plan.get("workload") or {}).get("block_interval_ms") or None

    @property
    def saturated(self) -> bool:
        """The typical block took longer than the cadence, so the queue grew through the run: commit latency from
        the intended start then measures the backlog since the clock started, not the cost of a block."""
        p50, interval_ms = self.metrics.service_time_ms.p50, self.block_interval_ms
        return bool(interval_ms and p50 is not None and p50 > interval_ms)

    @property
    def measure_s(self) -> float:
        return float(self.plan.get("phases", {}).get("measure_s") or 0.0)
