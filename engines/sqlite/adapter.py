"""SQLite through the binding its `library` setting names (bindings.py: APSW at libSQL's SQLite by
default, or the stdlib sqlite3): one transaction per block through harness.sql.write_block (executemany
per statement), every PRAGMA of the scenario applied, all of them read back for the result."""
from __future__ import annotations

import functools
import os
import pickle
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import ClassVar, Iterator, Mapping

from harness import registry, sql
from engines.sqlite import bindings
from engines.sqlite.background import BackgroundCheckpointer, backfilled_all
from engines.sqlite.wal_index import WalIndex
from harness.engine_api import (EngineBase, tables, EngineCounters, EngineInfo, PageMap, StorageStats,
                                 engine_setting_names, timed, timed_ddl)
from harness.workload.block import Block

# No background work to wait for after the load; an empty WAL makes the first autocheckpoint land at the
# same point of the measured phase whatever the load left.
SETTLE_CHECKPOINT = "TRUNCATE"
# A state build (harness/state/build.py) writes a file nothing else reads yet, and copies it when done: no
# journal, no syncs; a 1 GiB page cache and sorter threads for the index builds.
BUILD_PRAGMAS = {"journal_mode": "OFF", "synchronous": "OFF", "cache_size": -(1 << 20)}
BUILD_SORTER_THREADS = 2
ANALYSIS_LIMIT = 1000      # rows per index ANALYZE reads: PRAGMA optimize's own choice


def open_reader(cls: type["SQLiteEngine"], path: Path, settings: Mapping[str, object], variant: str):
    """A read-only connection with the scenario's reader PRAGMAs: in the runner or in a reader process."""
    conn = cls.connect(path, settings, read_only=True)
    for stmt in cls.pragma_sql(settings, writer=False):
        conn.execute(stmt).fetchall()
    return sql.QueryReader(conn, variant)


SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE = 1006     # sqlite3.h; APSW's Connection.config takes it


class SQLiteEngine(EngineBase):
    name: ClassVar[str] = "sqlite"
    db_filename: ClassVar[str] = "arkiv.db"
    # The writer runs the automatic checkpoint itself, timed: SQLite's own runs inside COMMIT (its WAL hook,
    # once the WAL holds wal_autocheckpoint frames: a PASSIVE checkpoint), where no timer can tell it from the
    # commit. The same threshold, the same mode, right after the same COMMIT: the same behaviour, measured.
    # Off for an engine that keeps no wal-index to read the frame count from (turso).
    harness_autocheckpoint: ClassVar[bool] = True
    _phases: dict[str, float] | None = None     # the last block's (block_phases); none in libsql's server mode
    _auto_frames = 0
    _background: BackgroundCheckpointer | None = None     # checkpoint_background's thread

    # --- what the SQLite family (libsql, turso) overrides; the control loop uses the same ------------
    @classmethod
    def connect(cls, path: Path, settings: Mapping[str, object], read_only: bool = False):
        return _binding(settings).connect(path, read_only)

    @classmethod
    def pragma_sql(cls, settings: Mapping[str, object], writer: bool) -> list[str]:
        """Every setting of the scenario; page_size before journal_mode, since it only applies to a new
        database."""
        out = [f"PRAGMA busy_timeout = {int(settings['busy_timeout'])}"]
        if writer:
            out += [f"PRAGMA page_size = {int(settings['page_size'])}",
                    f"PRAGMA journal_mode = {settings['journal_mode']}",
                    f"PRAGMA wal_autocheckpoint = {int(settings['wal_autocheckpoint'])}",
                    f"PRAGMA journal_size_limit = {int(settings['journal_size_limit'])}"]
        cache = settings.get("reader_cache_size") if not writer else None
        return out + [f"PRAGMA synchronous = {settings['synchronous']}",
                      f"PRAGMA cache_size = {int(settings['cache_size'] if cache is None else cache)}",
                      f"PRAGMA mmap_size = {int(settings['mmap_size'])}"]

    @classmethod
    def begin_sql(cls, settings: Mapping[str, object]) -> str:
        return "BEGIN IMMEDIATE"

    @classmethod
    def driver(cls, settings: Mapping[str, object]) -> str:
        return _binding(settings).driver()

    @classmethod
    def status(cls, conn, settings: Mapping[str, object]) -> dict[str, int]:
        """SQLite's own status counters on `conn`, where the binding exposes them."""
        return _binding(settings).status(conn)

    # --- contract ------------------------------------------------------------------------------
    def open(self, settings: Mapping[str, object], data_dir: Path) -> None:
        self.settings = dict(settings)
        self.data_dir = Path(data_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.path = self.data_dir / self.db_filename
        self.conn = self.connect(self.path, self.settings)
        for stmt in self.pragma_sql(self.settings, writer=True):
            self.conn.execute(stmt).fetchall()   # fetched: pyturso runs a pragma only when its rows are read
        self._begin = self.begin_sql(self.settings)
        self._auto_frames = 0         # the harness's autocheckpoint threshold (frames); 0: SQLite's own or none
        frames = int(self.settings.get("wal_autocheckpoint") or 0)
        wal = str(self.settings.get("journal_mode")).upper() == "WAL"
        self._background = None
        self._committed_mark = self._durable = 0       # durable_mark(): the last mark committed, and synced
        if wal and self.settings.get("checkpoint_background"):
            self.conn.execute("PRAGMA wal_autocheckpoint = 0").fetchall()
            self._background = BackgroundCheckpointer(
                functools.partial(self.connect, self.path, self.settings), self.pragma_sql(self.settings, False),
                int(self.settings["checkpoint_background_ms"]) / 1000,
                int(self.settings["checkpoint_background_truncate"]), self._wal_bytes_in_use,
                lambda: self._committed_mark).start()
        elif self.harness_autocheckpoint and frames and wal:
            self.conn.execute("PRAGMA wal_autocheckpoint = 0").fetchall()
            self._auto_frames = frames
        self._auto_ckpts = 0
        self.variant: str | None = None
        self._wal = WalIndex(self.path)
        # what the manual checkpoints answered: (busy, WAL frames, frames checkpointed), summed
        self._manual = {"checkpoints_busy": 0, "checkpoint_wal_frames": 0, "checkpoint_frames_done": 0}

    def create_schema(self, variant: str, indexes=None) -> None:
        self.conn.executescript(registry.ddl(self.name, variant, indexes))
        self._prepare(variant)

    def use_schema(self, variant: str) -> None:
        self._prepare(variant)

    # --- a state build: tables, rows in primary-key order, then the indexes -------------------------
    @classmethod
    def build_settings(cls, settings: Mapping[str, object]) -> dict:
        return {**settings, **BUILD_PRAGMAS}

    def bulk_begin(self, variant: str, indexes=None) -> None:
        tables, self._index_sql = registry.ddl_split(self.name, variant, indexes)
        try:
            self.conn.execute(f"PRAGMA threads = {BUILD_SORTER_THREADS}").fetchall()
        except Exception:       # a build without worker threads sorts on one
            pass
        self.conn.executescript(tables)
        self._prepare(variant)

    def bulk_insert(self, block: Block) -> None:
        self.conn.execute("BEGIN")
        for table, rs in block.inserts.items():
            self.conn.executemany(self._sql.insert[table], rs)
        self.conn.execute("COMMIT")

    def bulk_finish(self, settings: Mapping[str, object]) -> None:
        self.bulk_phases_s = timed_ddl(lambda stmt: self.conn.execute(stmt).fetchall(), self._index_sql)
        # the scenario's journal mode is the file's; settle() gathers the planner's statistics
        for stmt in self.pragma_sql(settings, writer=True):
            self.conn.execute(stmt).fetchall()
        self.bulk_phases_s["settle"] = timed(self.settle)

    def _prepare(self, variant: str) -> None:
        self.variant = variant
        self._sql = sql.BlockSQL.generic(variant)

    def apply_block(self, block: Block) -> None:
        self.apply_group([block], None)

    def apply_group(self, blocks: list[Block], mark: int | None) -> None:
        if self._background is not None and self._background.error:
            raise RuntimeError(f"the background checkpointer failed: {self._background.error}")
        t0 = time.perf_counter_ns()
        t1 = sql.write_blocks(self.conn, self._begin, self._sql, blocks, self.settings.get("insert_mode") == "execute",
                              mark)
        t2 = time.perf_counter_ns()
        self._phases = {"statements": (t1 - t0) / 1e6, "commit": (t2 - t1) / 1e6}
        if mark is not None:
            self._committed_mark = mark
        if self._auto_frames:
            if self._wal.frames() >= self._auto_frames:
                self._wal_checkpoint("PASSIVE")
                self._auto_ckpts += 1
            self._phases["checkpoint"] = (time.perf_counter_ns() - t2) / 1e6

    def block_phases(self) -> dict[str, float] | None:
        return self._phases

    def _wal_checkpoint(self, mode: str) -> tuple | None:
        """A checkpoint in the writer's connection, its answer read: one that backfilled every frame makes what was
        committed before it durable (durable_mark)."""
        committed = self._committed_mark
        rows = self.conn.execute(f"PRAGMA wal_checkpoint({mode})").fetchall()
        answer = tuple(rows[0]) if rows and len(rows[0]) == 3 and all(isinstance(v, int) for v in rows[0]) else None
        if answer is not None and backfilled_all(answer):
            self._durable = max(self._durable, committed)
        return answer

    def durable_mark(self) -> int:
        """Through what a checkpoint that copied every frame made durable (WAL at synchronous NORMAL: a commit is
        synced only by the next checkpoint); none at synchronous OFF, which syncs nothing."""
        if str(self.settings.get("synchronous")).upper() == "OFF":
            return 0
        background = self._background.synced_mark if self._background is not None else 0
        return max(self._durable, background)

    def applied_mark(self) -> int:
        self._committed_mark = sql.applied_mark(self.conn.execute)
        return self._committed_mark

    def reader(self) -> sql.QueryReader:
        return self.reader_factory()()

    def reader_factory(self):
        return functools.partial(open_reader, type(self), self.path, self.settings, self.variant or "bitemporal")

    def checkpoint(self, mode: str) -> None:
        answer = self._wal_checkpoint(mode)      # modes: the plan checked them
        if answer is not None:
            busy, log, done = answer
            self._manual["checkpoints_busy"] += busy
            self._manual["checkpoint_wal_frames"] += max(log, 0)
            self._manual["checkpoint_frames_done"] += max(done, 0)

    def counters(self) -> EngineCounters:
        """The manual checkpoints' answers, and SQLite's page cache counters of the writer's connection
        where the binding exposes them (APSW; bindings.py says what each one is)."""
        status = self.status(self.conn, self.settings)
        counts = {k: v for k, v in status.items() if k in bindings.COUNTER_NAMES}
        auto = {"autocheckpoints_in_commit": self._auto_ckpts} if self._auto_frames else {}
        if self._background is not None:
            auto = dict(self._background.figures)
        return EngineCounters(counters={**self._manual, **auto, **counts},
                              gauges={k: v for k, v in status.items() if k not in counts})

    def settle(self) -> None:
        for stmt in self.settle_sql(self.settings):
            self.conn.execute(stmt).fetchall()

    @classmethod
    def settle_sql(cls, settings: Mapping[str, object]) -> list[str]:
        """The planner's statistics where asked, then an empty WAL (bench-overhead's loop runs the same)."""
        stats = [f"PRAGMA analysis_limit = {ANALYSIS_LIMIT}", "ANALYZE"] if settings.get("analyze") else []
        return stats + [f"PRAGMA wal_checkpoint({SETTLE_CHECKPOINT})"]

    def storage(self) -> StorageStats:
        return StorageStats(db_bytes=_size(self.path), wal_bytes=self._wal_bytes_in_use(),
                            checkpoints=self._wal.checkpoints())

    def page_map(self) -> PageMap:
        """dbstat, in a process of its own (engines/sqlite/pagemap.py says why)."""
        with tempfile.NamedTemporaryFile(dir=self.data_dir, suffix=".pagemap") as out:
            subprocess.run([sys.executable, "-m", "engines.sqlite.pagemap", str(self.path), out.name], check=True)
            page_bytes, pages = pickle.load(out)
        return PageMap(self.path, page_bytes, pages)

    def row_counts(self) -> dict[str, int]:
        return {t: self.conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables(self.variant)}

    def iter_rows(self, table: str) -> Iterator[tuple]:
        cur = self.conn.execute(sql.select_all_sql(self.variant or "bitemporal", table))
        if not hasattr(cur, "fetchmany"):      # APSW's cursor iterates; libsql's only fetches
            yield from cur
            return
        while batch := cur.fetchmany(2000):
            yield from batch

    def sqlite_version(self) -> str:
        return self.conn.execute("select sqlite_version()").fetchone()[0]

    def library(self) -> str:
        return f"SQLite {self.sqlite_version()}"

    def info(self) -> EngineInfo:
        """Every setting read back with its PRAGMA (None: the engine answered nothing), and the binding
        that opened the connection (its driver string names the build)."""
        eff = {}
        for p in engine_setting_names(registry.settings_model(self.name)):
            row = self.conn.execute(f"PRAGMA {p}").fetchone()
            eff[p] = row[0] if row is not None else None
        if "library" in self.settings:
            eff["library"] = _binding(self.settings).name
        if self._auto_frames:        # the threshold holds; the writer runs it (harness_autocheckpoint)
            eff["wal_autocheckpoint"] = self._auto_frames
        if self._background is not None:     # the writer's is off (0, read back); the thread's, as it runs
            eff.update({k: self.settings[k] for k in ("checkpoint_background", "checkpoint_background_ms",
                                                      "checkpoint_background_truncate")})
        return EngineInfo(library=self.library(), driver=self.driver(self.settings), settings=eff,
                          related={"sqlite": self.sqlite_version()})

    def close(self, discard: bool = False) -> None:
        background, self._background = getattr(self, "_background", None), None
        if background is not None:
            background.stop()
        conn, self.conn = getattr(self, "conn", None), None
        if conn is not None:
            if discard and hasattr(conn, "config"):
                # the last connection's close checkpoints the whole WAL: minutes at 1x under the memory
                # limit, spent on files about to be deleted (an interrupted run waited on it)
                conn.config(SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1)
            conn.close()
        wal = getattr(self, "_wal", None)
        if wal is not None:            # only now: closing it drops this process's locks on the -shm
            wal.close()

    def _wal_bytes_in_use(self) -> int:
        return self._wal.bytes_in_use()


def _binding(settings: Mapping[str, object]):
    return bindings.binding(str(settings.get("library", bindings.DEFAULT)))


def _size(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


ENGINE = SQLiteEngine
