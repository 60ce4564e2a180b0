"""DuckDB, embedded: each block is one transaction of set-based statements over Arrow tables built in
prepare_block (off the timed path): DELETE … USING for reorgs, UPDATE … WHERE entity_key IN for
terminations, INSERT … SELECT for inserts. Never executemany (measured ~100x slower)."""
from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Iterator, Mapping

import duckdb
import pyarrow as pa

from harness import registry, sql
from harness.errors import RefusedBlock
from harness.engine_api import (TABLES, EngineBase, tables, EngineCounters, EngineInfo, StorageStats,
                                 engine_setting_names, timed, timed_ddl)
from harness.platform import cgroup
from harness.workload import schema
from harness.workload.block import Block

BUILD_MEMORY_SHARE = 0.6        # of the memory available when a state build starts
# A state build's rows per transaction: a transaction appending more than a row group (122,880 rows) to a table
# has DuckDB write its row groups straight into the file; a chunk each (~50K rows) went through the WAL, then a
# checkpoint copied it again.
BULK_COMMIT_ROWS = 2_000_000
FORCE_CHECKPOINT_SQL = "FORCE CHECKPOINT"     # checkpoint("FULL"), the settle step and the control loop
_ARROW_TYPES = {"bytes": pa.binary(), "text": pa.string(), "int64": pa.int64()}   # schema's logical types


def connect_config(settings: Mapping[str, object]) -> dict:
    """duckdb.connect's config from the scenario's settings (the control loop uses it too)."""
    limit = settings["memory_limit"]
    if limit == "auto":
        seen = cgroup.limit_bytes(cgroup.own_memory_dir())
        limit = f"{int(seen * 0.75) >> 20}MB" if seen else None
    threads = settings["threads"] if settings["threads"] != "auto" else len(os.sched_getaffinity(0))
    cfg = {"threads": int(threads), "checkpoint_threshold": settings["checkpoint_threshold"],
           "preserve_insertion_order": bool(settings.get("preserve_insertion_order", True))}
    if limit:
        cfg["memory_limit"] = limit
    return cfg


def _cols(variant: str, table: str) -> str:
    return ", ".join(schema.columns(variant, table))


def block_sql(variant: str) -> sql.BlockSQL:
    """Set-based statements over the registered Arrow tables _pk, _keys and _ins."""
    insert = {t: f"INSERT INTO {t} ({_cols(variant, t)}) SELECT {_cols(variant, t)} FROM _ins"
              for t in schema.tables(variant)}        # a state's bulk build fills the history tables too
    delete, terminate = {}, {}
    for t in TABLES:
        delete[t] = f"DELETE FROM {t} USING _pk WHERE " + " AND ".join(
            f"{t}.{c} = _pk.{c}" for c in schema.primary_key(variant, t))
        keys = "entity_key IN (SELECT k FROM _keys)"
        delete_current = f"DELETE FROM {t} WHERE {keys}"
        terminate[t] = (f"UPDATE {t} SET to_block = $1 WHERE {keys} AND from_block <= $1 AND to_block > $1",) \
            if variant == "bitemporal" else (sql.move_to_history_sql(t, "$1", keys), delete_current) \
            if schema.keeps_history_apart(variant) else (delete_current,)
    return sql.BlockSQL(variant, insert, delete, terminate)


@dataclass
class Prepared:
    block: Block
    deletes: dict[str, pa.Table] = field(default_factory=dict)
    keys: pa.Table | None = None
    inserts: dict[str, pa.Table] = field(default_factory=dict)


def prepare(block: Block) -> Prepared:
    v = block.variant

    def table(t: str, names: tuple[str, ...], rows: list[tuple]) -> pa.Table:
        columns = list(zip(*rows)) if rows else [[] for _ in names]
        return pa.table({n: pa.array(col, _ARROW_TYPES[schema.column_type(v, t, n)]) for n, col in zip(names, columns)})
    return Prepared(
        block=block,
        deletes={t: table(t, schema.primary_key(v, t), pks) for t, pks in block.deletes.items() if pks},
        keys=pa.table({"k": pa.array(block.terminate_keys, pa.binary())}) if block.terminate_keys else None,
        inserts={t: table(t, schema.columns(v, t), rows) for t, rows in block.inserts.items() if rows})


def write_block(con: duckdb.DuckDBPyConnection, q: sql.BlockSQL, p: Prepared) -> int:
    """ONE transaction: the adapter and the bench-overhead control loop both write with it. Returns when its
    COMMIT began (perf_counter_ns)."""
    return write_blocks(con, q, [p])


def _block_statements(con: duckdb.DuckDBPyConnection, q: sql.BlockSQL, p: Prepared) -> None:
    for t, pk in p.deletes.items():
        con.register("_pk", pk)
        con.execute(q.delete[t])
    if p.keys is not None:
        con.register("_keys", p.keys)
        for t in TABLES:
            for stmt in q.terminate[t]:      # $1: the block, where the statement names it
                con.execute(stmt, [p.block.number] if "$1" in stmt else [])
    for t, rows in p.inserts.items():
        con.register("_ins", rows)
        con.execute(q.insert[t])


def write_blocks(con: duckdb.DuckDBPyConnection, q: sql.BlockSQL, ps: list[Prepared], mark: int | None = None) -> int:
    """write_block for several blocks in order in ONE transaction, with `mark` as the applied mark."""
    con.execute("BEGIN TRANSACTION")
    try:
        for p in ps:
            _block_statements(con, q, p)
        if mark is not None:
            con.execute(sql.applied_update_sql("$1"), [mark])
        statements_end_ns = time.perf_counter_ns()
        con.execute("COMMIT")
        return statements_end_ns
    except BaseException as e:
        try:
            con.execute("ROLLBACK")
        except duckdb.Error:
            pass          # DuckDB already aborted the transaction
        if isinstance(e, duckdb.ConstraintException):
            # The blocks' keys are unique (the model's, and every other engine applies them); DuckDB's ART indexes
            # reject some updates of indexed columns (to_block) on keys they still hold (its docs: "Limitations of
            # ART Indexes"): seen at ratio 5137m in a warm-up, 2026-11-29.
            raise RefusedBlock(f"{type(e).__name__}: {str(e).splitlines()[0]}") from e
        raise
    finally:
        for name in ("_pk", "_keys", "_ins"):
            try:
                con.unregister(name)
            except duckdb.Error:
                pass


class DuckDBEngine(EngineBase):
    name: ClassVar[str] = "duckdb"
    db_filename: ClassVar[str] = "arkiv.duckdb"

    def open(self, settings: Mapping[str, object], data_dir: Path) -> None:
        self.settings = dict(settings)
        Path(data_dir).mkdir(parents=True, exist_ok=True)
        self.path = Path(data_dir) / self.db_filename
        self.con = duckdb.connect(str(self.path), config=connect_config(self.settings))
        self.variant: str | None = None
        self._ckpt_lock = threading.Lock()
        self._checkpoints = 0
        self._wal_seen = self._wal_size()
        self._phases: dict[str, float] | None = None

    def create_schema(self, variant: str, indexes=None) -> None:
        self.con.execute(registry.ddl(self.name, variant, indexes))
        self.use_schema(variant)

    def use_schema(self, variant: str) -> None:
        self.variant, self._sql = variant, block_sql(variant)

    # --- a state build: Arrow appends into tables with only their primary keys, then the indexes ---
    @classmethod
    def build_settings(cls, settings: Mapping[str, object]) -> dict:
        """An explicit memory_limit: DuckDB builds each ART index in memory, and 'auto' would follow no
        limit at all during a build (which runs outside any cgroup)."""
        if settings["memory_limit"] != "auto":
            return dict(settings)
        avail = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        return {**settings, "memory_limit": f"{int(avail * BUILD_MEMORY_SHARE) >> 20}MB"}

    def bulk_begin(self, variant: str, indexes=None) -> None:
        tables, self._index_sql = registry.ddl_split(self.name, variant, indexes)
        self.con.execute(tables)
        self.use_schema(variant)
        self._uncommitted_rows = 0
        self.con.execute("BEGIN TRANSACTION")

    def bulk_insert(self, p: Prepared) -> None:
        for t, tbl in p.inserts.items():
            self.con.register("_ins", tbl)
            self.con.execute(self._sql.insert[t])
            self.con.unregister("_ins")
            self._uncommitted_rows += tbl.num_rows
        if self._uncommitted_rows >= BULK_COMMIT_ROWS:
            self.con.execute("COMMIT")
            self._uncommitted_rows = 0
            self.con.execute("BEGIN TRANSACTION")

    def bulk_finish(self, settings: Mapping[str, object]) -> None:
        self.con.execute("COMMIT")
        self.bulk_phases_s = timed_ddl(self.con.execute, self._index_sql)
        self.bulk_phases_s["settle"] = timed(self.settle)

    def create_indexes(self, names: list[str]) -> None:
        """An aged state's secondary indexes, created after its ageing (harness/state/derive.py) as bulk_finish
        creates them after the rows: the schema's own statements, then settled."""
        self.bulk_phases_s = timed_ddl(self.con.execute, registry.ddl_split(self.name, self.variant, names)[1])
        self.bulk_phases_s["settle"] = timed(self.settle)

    def prepare_block(self, block: Block) -> Prepared:
        return prepare(block)

    def apply_block(self, p: Prepared) -> None:
        self.apply_group([p], None)

    def apply_group(self, ps: list[Prepared], mark: int | None) -> None:
        t0 = time.perf_counter_ns()
        t1 = write_blocks(self.con, self._sql, ps, mark)
        # an automatic checkpoint runs inside DuckDB's COMMIT (WAL past checkpoint_threshold): it stays in
        # `commit`; counters() counts the WAL truncations (automatic and manual checkpoints)
        self._phases = {"statements": (t1 - t0) / 1e6, "commit": (time.perf_counter_ns() - t1) / 1e6}
        self._observe_wal()

    def block_phases(self) -> dict[str, float] | None:
        return self._phases

    def applied_mark(self) -> int:
        return sql.applied_mark(self.con.execute)

    def _wal_size(self) -> int:
        try:
            return os.stat(f"{self.path}.wal").st_size
        except OSError:
            return 0

    def _observe_wal(self) -> None:
        """DuckDB truncates its WAL when a checkpoint completes: a shrink is a checkpoint. One stat()
        after each commit (about a microsecond) catches every automatic one."""
        size = self._wal_size()
        with self._ckpt_lock:
            if size < self._wal_seen:
                self._checkpoints += 1
            self._wal_seen = size

    def reader(self) -> sql.QueryReader:
        return sql.QueryReader(self.con.cursor(), self.variant or "bitemporal")

    def checkpoint(self, mode: str) -> None:
        self.con.execute(FORCE_CHECKPOINT_SQL if mode == "FULL" else "CHECKPOINT")
        self._observe_wal()

    def settle(self) -> None:
        self.checkpoint("FULL")     # FORCE_CHECKPOINT_SQL: the load's WAL into the file (nothing else runs yet)

    def storage(self) -> StorageStats:
        try:
            db = os.stat(self.path).st_size
        except OSError:
            db = 0
        with self._ckpt_lock:
            return StorageStats(db_bytes=db, wal_bytes=self._wal_size(), checkpoints=self._checkpoints)

    def row_counts(self) -> dict[str, int]:
        return {t: self.con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables(self.variant)}

    def iter_rows(self, table: str) -> Iterator[tuple]:
        cur = self.con.cursor()
        cur.execute(sql.select_all_sql(self.variant or "bitemporal", table))
        while batch := cur.fetchmany(2000):
            yield from batch
        cur.close()

    def counters(self) -> EngineCounters:
        """DuckDB's own account of its memory (duckdb_memory(): buffer manager use by tag), so the runner's
        RSS can be told apart into the engine's share and the harness's."""
        (used,) = self.con.execute("SELECT coalesce(sum(memory_usage_bytes), 0) FROM duckdb_memory()").fetchone()
        with self._ckpt_lock:
            done = self._checkpoints
        return EngineCounters(counters={"wal_truncations": done}, gauges={"engine_heap_bytes": int(used)})

    def info(self) -> EngineInfo:
        eff = {n: self.con.execute(f"SELECT current_setting('{n}')").fetchone()[0]
               for n in engine_setting_names(registry.settings_model(self.name))}
        # the same threshold under its other name: which one a DuckDB version honours is not a guess
        eff["wal_autocheckpoint"] = self.con.execute("SELECT current_setting('wal_autocheckpoint')").fetchone()[0]
        version = self.con.execute("PRAGMA version").fetchone()
        return EngineInfo(library=f"DuckDB {version[0]} ({version[1]})", driver=f"duckdb {duckdb.__version__}",
                          settings=eff)

    def close(self, discard: bool = False) -> None:
        con, self.con = getattr(self, "con", None), None
        if con is not None:
            if discard:     # no checkpoint of the WAL into files about to be deleted
                con.execute("PRAGMA disable_checkpoint_on_shutdown")
            con.close()


ENGINE = DuckDBEngine
