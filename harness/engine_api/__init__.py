"""The engine contract (docs/design.md): the methods every adapter defines (REQUIRED_METHODS, checked when its
class is loaded), EngineBase's defaults, and capability flags instead of engine-name branches.
An engine declares its capabilities in its engine.toml (harness/registry.py); the plan resolves them."""
from __future__ import annotations

import pickle
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Protocol

from pydantic import BaseModel, ConfigDict, Field

from harness.workload.block import Block
from harness.workload import schema
from harness.workload.schema import TABLES  # noqa: F401  (the adapters take the table names from the contract)


def tables(variant: str | None) -> tuple[str, ...]:
    """Every table of the schema an adapter was opened on (None: none yet, the bitemporal one's)."""
    return schema.tables(variant or "bitemporal")

# json_schema_extra of a settings field the engine itself never sees (a server URL, the OS user a
# server runs as): not read back from the engine.
HARNESS_SIDE = {"harness_side": True}


def engine_setting_names(settings_model) -> tuple[str, ...]:
    """The settings an adapter applies to the engine and reads back for the result."""
    return tuple(n for n, f in settings_model.model_fields.items()
                 if not (isinstance(f.json_schema_extra, dict) and f.json_schema_extra.get("harness_side")))


class Capabilities(BaseModel):
    """Declared in an engine's engine.toml, resolved into the plan; each one changes what the harness does."""
    model_config = ConfigDict(extra="forbid", frozen=True)

    server: bool = Field(description="a separate server process holds the data: MEM is its limit (its own "
                                     "container or cgroup, with a per-run secret); the runner is its client, "
                                     "limited apart")
    wal: bool = Field(description="the engine reports its WAL's size and checkpoints; without it they are "
                                  "recorded as unknown (null) and thresholds on them are refused")
    checkpoint_modes: tuple[str, ...] = Field((), description="what checkpoint(mode) accepts; a scenario's "
                                                              "checkpoint.mode outside it is refused")
    readers_in_process_only: bool = Field(description="one process per database (DuckDB, turso): readers are "
                                                      "threads of the runner; otherwise each reader is a process "
                                                      "of its own, opened by reader_factory(), so readers and "
                                                      "writer share no GIL")

    drop_index_frees_space: bool = Field(False, description="DROP INDEX leaves the files as a build without the "
                                         "index would (PostgreSQL deletes the index's files; SQLite keeps its pages "
                                         "on the freelist): a state with fewer secondary indexes is derived from one "
                                         "with all of them by drop_indexes(names), not built and aged anew")
    groups_blocks: bool = Field(False, description="apply_group() applies several blocks in one transaction with an "
                                "applied mark (applied_mark()): a block log can stand in front of it; false (an "
                                "adapter that has not implemented them) refuses block_log when the plan is made")
    indexes_after_ageing: bool = Field(False, description="its aged state with every secondary index is derived from "
                                       "the aged state without them, the indexes then created (create_indexes(names)) "
                                       "as a bulk build creates them after the rows: where ageing through the indexes "
                                       "is the slow part of the build (DuckDB's ART indexes). The rows are the same; "
                                       "the id says how it was made")
    reindex_builds_layout: bool = Field(False, description="rebuilding an index builds it as its CREATE INDEX after "
                                        "the rows would, with the layout settings (engine.toml state_settings) the "
                                        "engine was opened with: a bulk-built state at other layout settings is "
                                        "derived from the default's by rebuild_indexes(), not built anew")
    reads_keep_files: bool = Field(False, description="opening the database and only reading it leaves its files "
                                   "byte for byte (SQLite in WAL mode: its -wal and -shm are files of their own): a "
                                   "cell that only reads links the state's files instead of copying them, and checks "
                                   "after it that they are unchanged (a server rewrites its files as it reads)")

    @property
    def strongest_checkpoint(self) -> str | None:
        """The strongest mode checkpoint() accepts (listed last), or None without manual checkpoints."""
        return self.checkpoint_modes[-1] if self.checkpoint_modes else None


@dataclass(frozen=True)
class StorageStats:
    db_bytes: int             # main database file(s)
    wal_bytes: int | None     # WAL in use now (not the file's high-water mark); None: not visible
    checkpoints: int | None   # checkpoints completed since open (automatic and manual); None: not visible


def observed_storage(engine, caps: Capabilities) -> StorageStats:
    """engine.storage(), with the WAL's figures unknown (None) where the engine's WAL is not visible."""
    s = engine.storage()
    return s if caps.wal else StorageStats(s.db_bytes, None, None)


@dataclass(frozen=True)
class EngineCounters:
    """The engine's own account of its work, where it gives one. Shared names where they mean the same:
    page_cache_hits / page_cache_misses (pages found in / read into the engine's cache)."""
    counters: dict[str, int]    # monotone since open: a result keeps their increase over the measured phase
    gauges: dict[str, int]      # as they stand now: a result keeps them at the measured phase's end


@dataclass(frozen=True)
class PageMap:
    """Which table or index owns each page of the engine's main file (EngineBase.page_map)."""
    path: Path
    page_bytes: int
    pages: dict[str, object]      # name -> its page numbers, 1-based (an array of ints)


@dataclass
class EngineInfo:
    library: str                      # the engine as it runs: "SQLite 3.45.1", "PostgreSQL 15.8"
    driver: str                       # the Python package that drives it: "libsql 0.1.11"
    settings: dict[str, object] = field(default_factory=dict)   # effective, read back from the engine
    # other library versions that tell what was measured (libsql: the stdlib sqlite3's beside its own)
    related: dict[str, str] = field(default_factory=dict)
    # a server engine: the memory limit its server process sees (MEM applies to it, not to the runner)
    data_limit_bytes_seen: int | None = None

    @property
    def version(self) -> str:
        return f"{self.library} ({self.driver})"


class Reader(Protocol):
    placeholder: str                                                # the driver's parameter style: "?", "%s"
    def run(self, sql: str, params: tuple) -> int: ...             # rows returned (all fetched)
    def hold_snapshot(self, duration_s: float) -> None: ...         # a long-running read transaction
    def close(self) -> None: ...


# What every adapter defines beyond EngineBase's defaults (registry.engine_class checks it when loading one):
#   open(settings, data_dir)   create_schema(variant, indexes=None): the secondary indexes to create, by
#   name (None: all; registry.ddl)   use_schema(variant): a cloned state's schema instead
#   apply_block(prepared): ONE transaction, timed by the runner   reader() -> Reader   checkpoint(mode)
#   settle(): after the load, before the clock, finish what a load leaves pending (statistics, a checkpoint)
#   storage() -> StorageStats: cheap, called by the 1 s sampler   row_counts()   iter_rows(table): DDL order
#   info() -> EngineInfo   close(discard=False): discard, the files are deleted next: skip what only keeps
#   them tidy (a checkpoint on close)
# and reader_factory() -> a picklable callable opening a Reader in another process, unless its manifest says
# readers_in_process_only.
REQUIRED_METHODS = ("open", "create_schema", "use_schema", "apply_block", "reader", "checkpoint", "settle",
                    "storage", "row_counts", "iter_rows", "info", "close")


@dataclass(frozen=True)
class LoggedBlock:
    """A block as a block log's record (harness/designs/block_log.py): its adapter's prepared form pickled
    where blocks are prepared (the feed, outside the limit, before the clock), as a block arrives over the
    wire already encoded; acknowledging it is then writing bytes."""
    number: int
    rows_written: int
    payload: bytes

    @classmethod
    def of(cls, block: Block, prepared: object) -> "LoggedBlock":
        return cls(block.number, block.rows_written, pickle.dumps(prepared, protocol=pickle.HIGHEST_PROTOCOL))


class EngineBase:
    """Defaults shared by the adapters (REQUIRED_METHODS above are each adapter's own)."""

    def prepare_block(self, block: Block) -> object:
        """Convert a block to the engine's native input (Arrow tables, column arrays). Called in the
        block feed process on an instance that is never opened, ahead of time, so conversion stays off
        the timed path; apply_block receives the (unpickled) result. Must not touch a connection."""
        return block

    def block_phases(self) -> dict[str, float] | None:
        """The last apply_block's phases as the adapter timed them, in ms: `statements` (BEGIN to the last
        write), `commit` (the COMMIT itself), `checkpoint` (a checkpoint that ran inside the commit); the
        runner records them per block (harness/runner/phases.py). None: the engine times none."""
        return None

    # --- what a design over the contract needs (harness/designs/block_log.py) -----------------------
    def apply_group(self, prepared: list, mark: int | None) -> None:
        """Several prepared blocks, in order, in ONE transaction that also sets the applied mark to `mark`
        (applied_mark() made its table first). An adapter without it cannot run behind a block log."""
        raise NotImplementedError(f"{type(self).__name__} cannot apply several blocks in one transaction")

    def applied_mark(self) -> int:
        """The last block an apply_group recorded (0: none); makes the mark's one-row table where it is missing."""
        raise NotImplementedError(f"{type(self).__name__} records no applied mark")

    def ack_lag_blocks(self) -> int | None:
        """Blocks acknowledged and not yet applied when the last block was acknowledged (a design that
        acknowledges ahead of its engine); None: what apply_block returns from is applied."""
        return None

    def applier_busy_share(self, start_ns: int, end_ns: int) -> float | None:
        """A design's applier's busy share over [start_ns, end_ns] (monotonic ns); None: no applier apart."""
        return None

    def durable_mark(self) -> int:
        """The last applied mark (apply_group's) that a power cut would not take back: a commit the engine synced,
        or one a checkpoint has since really synced (not merely attempted). 0: none known. A block log lets go of
        the records through it and of no others, so an engine that cannot say keeps its log whole (and fails the
        log's bound)."""
        return 0

    def drain(self) -> float:
        """Finish what was acknowledged and not yet applied (a design's); the seconds it took. Nothing here."""
        return 0.0

    def counters(self) -> EngineCounters | None:
        """Cheap (called between blocks, twice a run, on the writer's thread); None: the engine gives none."""
        return None

    def page_map(self) -> PageMap | None:
        """The owner of each page of the main file, for residency per table and index; None: the engine
        cannot say. It may read the whole file: the runner calls it only after the clock, on a thread of
        its own beside the integrity check's scan, so it must not use the engine's connection."""
        return None

    # --- a starting state's build (harness/state/build.py): open(build_settings(s)), bulk_begin,
    # bulk_insert per chunk, bulk_finish, close. These defaults take the transactional path; each engine
    # overrides them with its bulk path (no secondary index until the rows are in).
    @classmethod
    def build_settings(cls, settings: Mapping[str, object]) -> dict:
        """The settings to open the engine with for a build (build-only values recorded in the state's
        manifest; the run opens the state with the scenario's own)."""
        return dict(settings)

    def prepare_bulk(self, variant: str, rows: dict[str, list[tuple]]) -> object:
        """Convert a chunk of a build's rows (per table, in primary-key order) to what bulk_insert takes.
        Called in the build's worker processes on an instance that is never opened, like prepare_block."""
        return self.prepare_block(Block(number=0, kind="load", variant=variant, inserts=rows))

    def bulk_begin(self, variant: str, indexes=None) -> None:
        self.create_schema(variant, indexes)

    def bulk_insert(self, prepared: object) -> None:
        """One prepare_bulk chunk, continuing the previous one's primary-key order."""
        self.apply_block(prepared)

    def bulk_finish(self, settings: Mapping[str, object]) -> None:
        """Indexes, the scenario's `settings` back where they live in the files, statistics, a checkpoint:
        the state as a run finds it. Each step's seconds go in bulk_phases_s, for the build's log and manifest."""
        self.bulk_phases_s = {"settle": timed(self.settle)}

    bulk_phases_s: dict[str, float] = {}         # bulk_finish's steps: "index <name>", "settle", ... -> seconds


def timed(fn, *args) -> float:
    """Seconds fn(*args) took."""
    t0 = time.perf_counter()
    fn(*args)
    return round(time.perf_counter() - t0, 3)


def index_name(stmt: str) -> str:
    """A CREATE INDEX statement's index ("" for any other statement)."""
    m = re.match(r"CREATE\s+(?:UNIQUE\s+)?INDEX\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)", stmt, re.I)
    return m.group(1) if m else ""


def timed_ddl(execute, script: str) -> dict[str, float]:
    """A DDL script (ddl_split's indexes) one statement at a time, each timed: {"index <name>": seconds}."""
    out = {}
    for stmt in filter(None, (s.strip() for s in script.split(";"))):
        out[f"index {index_name(stmt) or stmt[:40]}"] = timed(execute, stmt)
    return out
