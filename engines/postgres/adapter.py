"""PostgreSQL through psycopg 3. A private server per run (server.py). Each block is one transaction
sent in pipeline mode: per table one set-based statement over unnest()ed column arrays for the reorg
deletes, the terminations and the inserts. The arrays are built in prepare_block, off the timed path."""
from __future__ import annotations

import functools
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Iterator, Mapping

import psycopg

from engines.postgres.server import ExternalServer, PostgresServer, ServerError
from engines.postgres.settings import Settings
from harness import registry, sql
from harness.engine_api import TABLES, EngineBase, tables, EngineCounters, EngineInfo, StorageStats, timed, timed_ddl
from harness.engine_api import server_contract
from harness.workload import schema
from harness.workload.block import Block

# What autovacuum would do at a time of its choosing, inside or outside the measured phase: statistics
# and visibility/hint bits for the freshly loaded tables; then the load's dirty pages.
SETTLE_SQL = ("VACUUM (ANALYZE)", "CHECKPOINT")
# A state build's server (set on its command line, never in postgresql.conf: a run's server starts with
# the scenario's values): no fsync or full-page images for a cluster that is copied once complete, and
# memory and WAL room for COPY and the index builds. No recycled WAL: a 1x build would leave 7-11 GB of spent
# segments beside ~12 GB of tables, for every clone to copy and every preload to read in their place.
BUILD_CONF = {"fsync": "off", "full_page_writes": "off", "synchronous_commit": "off", "autovacuum": "off",
              "maintenance_work_mem": "1GB", "max_wal_size": "16GB", "checkpoint_timeout": "1h",
              "wal_recycle": "off"}


def block_sql(variant: str) -> sql.BlockSQL:
    """Set-based statements: unnest() over one array parameter per column, typed by the manifest."""
    types = registry.manifest("postgres").types

    def unnest(t: str, cols: tuple[str, ...]) -> str:
        return "unnest(" + ", ".join(f"%s::{types[schema.column_type(variant, t, c)]}[]" for c in cols) + ")"
    insert, delete, terminate = {}, {}, {}
    for t in TABLES:
        cols, pk = schema.columns(variant, t), schema.primary_key(variant, t)
        insert[t] = f"INSERT INTO {t} ({', '.join(cols)}) SELECT * FROM {unnest(t, cols)}"
        delete[t] = f"DELETE FROM {t} WHERE ({', '.join(pk)}) IN (SELECT * FROM {unnest(t, pk)})"
        terminate[t] = (_terminate_sql(variant, t),)
    return sql.BlockSQL(variant, insert, delete, terminate)


def _terminate_sql(variant: str, t: str) -> str:
    """One statement per table: bitemporal ends the rows in place; current_history deletes them and inserts
    what the DELETE returned, ended, into the history table (one pass, no second lookup); simple deletes."""
    keys = "entity_key = ANY(%(keys)s::bytea[])"
    if variant == "bitemporal":
        return f"UPDATE {t} SET to_block = %(b)s WHERE {keys} AND from_block <= %(b)s AND to_block > %(b)s"
    if not schema.keeps_history_apart(variant):
        return f"DELETE FROM {t} WHERE {keys}"
    cur, hist = schema.columns(variant, t), schema.columns(variant, t + schema.HISTORY)
    ended = ", ".join([*cur[:2], "%(b)s::bigint", *cur[2:]])
    return (f"WITH moved AS (DELETE FROM {t} WHERE {keys} RETURNING {', '.join(cur)}) "
            f"INSERT INTO {t}{schema.HISTORY} ({', '.join(hist)}) SELECT {ended} FROM moved")


def with_fillfactor(index_sql: str, fillfactor: int) -> str:
    """The CREATE INDEX statements with their B-tree fillfactor (PostgreSQL's default, 90, left unsaid)."""
    if fillfactor == 90:
        return index_sql
    return re.sub(r"\);", f") WITH (fillfactor = {int(fillfactor)});", index_sql)


_COPY_ESCAPES = str.maketrans({"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"})


def copy_text(variant: str, table: str, rows: list[tuple]) -> bytes:
    """Rows in COPY's text format (tab-separated, backslash escapes; bytea as \\x hex)."""
    kinds = [schema.column_type(variant, table, c) for c in schema.columns(variant, table)]
    enc = {"int64": str, "text": lambda v: v.translate(_COPY_ESCAPES), "bytes": lambda v: "\\\\x" + v.hex()}
    fns = [enc[k] for k in kinds]
    return "".join("\t".join([f(v) for f, v in zip(fns, r)]) + "\n" for r in rows).encode()


@dataclass
class Prepared:
    block: Block
    deletes: dict[str, list[list]] = field(default_factory=dict)    # table -> one list per PK column
    inserts: dict[str, list[list]] = field(default_factory=dict)    # table -> one list per column


def prepare(block: Block) -> Prepared:
    return Prepared(block=block,
                    deletes={t: [list(c) for c in zip(*pks)] for t, pks in block.deletes.items() if pks},
                    inserts={t: [list(c) for c in zip(*rows)] for t, rows in block.inserts.items() if rows})


def write_block(conn: psycopg.Connection, q: sql.BlockSQL, p: Prepared) -> int:
    return write_blocks(conn, q, [p])


def write_blocks(conn: psycopg.Connection, q: sql.BlockSQL, ps: list[Prepared], mark: int | None = None) -> int:
    """ONE transaction, its statements pipelined: the adapter and the bench-overhead control loop both write
    with it. BEGIN, the statements in a pipeline whose end awaits their results, then COMMIT on its own, so the
    two are timed apart (two loopback round trips more than one pipeline for all). A sync in the middle of a
    pipeline (Pipeline.sync) was seen to hang psycopg 3.3 with a 1x block's arrays; a pipeline's exit does not.
    Returns when the statements' results were all in (perf_counter_ns)."""
    conn.execute("BEGIN")
    try:
        with conn.pipeline():
            cur = conn.cursor()
            for p in ps:
                _block_statements(cur, q, p)
            if mark is not None:
                cur.execute(sql.applied_update_sql("%s"), (mark,))
        statements_end_ns = time.perf_counter_ns()
        conn.execute("COMMIT")
    except BaseException:
        if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            conn.execute("ROLLBACK")
        raise
    return statements_end_ns


def _block_statements(cur, q: sql.BlockSQL, p: Prepared) -> None:
    for t, cols in p.deletes.items():
        cur.execute(q.delete[t], cols)
    if p.block.terminate_keys:
        params = {"b": p.block.number, "keys": p.block.terminate_keys}
        for t in TABLES:
            for stmt in q.terminate[t]:
                cur.execute(stmt, params)
    for t, cols in p.inserts.items():
        cur.execute(q.insert[t], cols)


# The server's account of the measured phase's writes (counters(); PostgreSQL 15-16 views, 17's where they
# moved): WAL records, full-page images, bytes, writes and syncs with their time (track_wal_io_timing), the
# checkpoints and the buffers they wrote, buffers written by backends themselves (the checkpointer and the
# background writer fell behind). Times are in µs (counters are integers).
SERVER_STATS_SQL = ("SELECT wal_records, wal_fpi, wal_bytes::bigint, wal_buffers_full, wal_write, wal_sync, "
                    "(wal_write_time * 1000)::bigint, (wal_sync_time * 1000)::bigint FROM pg_stat_wal")
SERVER_STATS = ("wal_records", "wal_fpi", "wal_bytes", "wal_buffers_full", "wal_writes", "wal_syncs",
                "wal_write_time_us", "wal_sync_time_us")
BGWRITER_SQL = ("SELECT checkpoints_timed + checkpoints_req, checkpoints_req, (checkpoint_write_time * 1000)::bigint, "
                "(checkpoint_sync_time * 1000)::bigint, buffers_checkpoint, buffers_clean, buffers_backend, "
                "buffers_backend_fsync FROM pg_stat_bgwriter")
BGWRITER = ("checkpoints", "checkpoints_requested", "checkpoint_write_time_us", "checkpoint_sync_time_us",
            "buffers_checkpoint", "buffers_clean", "buffers_backend", "buffers_backend_fsync")


# the schema's secondary indexes (c: each one's pg_class row)
_SECONDARY = ("FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace "
              "WHERE n.nspname = 'public' AND NOT i.indisprimary")
SECONDARY_INDEXES_SQL = f"SELECT c.relname {_SECONDARY} ORDER BY 1"
# the fillfactor each secondary index has (its reloptions, else B-tree's default 90)
INDEX_FILLFACTOR_SQL = ("SELECT DISTINCT coalesce((SELECT split_part(o, '=', 2) FROM unnest(c.reloptions) o "
                        f"WHERE o LIKE 'fillfactor=%'), '90') {_SECONDARY}")


class PostgresEngine(EngineBase):
    name: ClassVar[str] = "postgres"

    def open(self, settings: Mapping[str, object], data_dir: Path) -> None:
        s = Settings.model_validate(dict(settings))
        self._data_dir = Path(data_dir)
        external = server_contract.external_server()     # docker runtime: a container of its own
        if external:
            self.server = ExternalServer(*external, s.os_user)
        else:
            self.server = PostgresServer(Path(data_dir), s.server_conf(), s.bin_dir, s.os_user)
        try:
            self.server.start()
            self.conn = psycopg.connect(self.server.conninfo(), autocommit=True)
            self._stats_conn = psycopg.connect(self.server.conninfo(), autocommit=True)
        except BaseException:
            self.server.stop()
            raise
        self._stats_lock = threading.Lock()
        self.settings_names = list(s.server_conf())
        self._fillfactor = s.index_fillfactor
        self.variant: str | None = None
        self._phases: dict[str, float] | None = None
        self._ckpt_at_open = self._checkpoint_counter()

    def create_schema(self, variant: str, indexes=None) -> None:
        tables, index_sql = registry.ddl_split(self.name, variant, indexes)
        self.conn.execute(tables + "\n" + with_fillfactor(index_sql, self._fillfactor))
        self.use_schema(variant)

    def use_schema(self, variant: str) -> None:
        self.variant, self._sql = variant, block_sql(variant)

    # --- a state build: COPY into tables with only their primary keys, then the indexes ------------
    @classmethod
    def build_settings(cls, settings: Mapping[str, object]) -> dict:
        return {**settings, **BUILD_CONF}

    def bulk_begin(self, variant: str, indexes=None) -> None:
        if not self.server.keeps_cluster_in_data_dir():
            raise ServerError(f"{self._data_dir}: user {self.server.user} cannot enter every folder down to it, so "
                              "the cluster would be built elsewhere and lost; use a STATES folder every user may enter")
        tables, index_sql = registry.ddl_split(self.name, variant, indexes)
        self._index_sql = with_fillfactor(index_sql, self._fillfactor)
        self.conn.execute(tables)
        self.use_schema(variant)

    def prepare_bulk(self, variant: str, rows: dict[str, list[tuple]]) -> dict[str, bytes]:
        """COPY's text format, built in the build's workers: the server parses it, the writer only ships it."""
        return {t: copy_text(variant, t, rs) for t, rs in rows.items()}

    def bulk_insert(self, data: dict[str, bytes]) -> None:
        with self.conn.transaction():
            cur = self.conn.cursor()
            for t, payload in data.items():
                with cur.copy(f"COPY {t} ({', '.join(schema.columns(self.variant, t))}) FROM STDIN") as cp:
                    cp.write(payload)

    def bulk_finish(self, settings: Mapping[str, object]) -> None:
        self.bulk_phases_s = timed_ddl(self.conn.execute, self._index_sql)
        self.bulk_phases_s["settle"] = timed(self.settle)

    def prepare_block(self, block: Block) -> Prepared:
        return prepare(block)

    def apply_block(self, p: Prepared) -> None:
        self.apply_group([p], None)

    def apply_group(self, ps: list[Prepared], mark: int | None) -> None:
        t0 = time.perf_counter_ns()
        t1 = write_blocks(self.conn, self._sql, ps, mark)
        self._phases = {"statements": (t1 - t0) / 1e6, "commit": (time.perf_counter_ns() - t1) / 1e6}

    def block_phases(self) -> dict[str, float] | None:
        return self._phases

    def applied_mark(self) -> int:
        return sql.applied_mark(self.conn.execute)

    def counters(self) -> EngineCounters:
        """The server's WAL and checkpoint statistics (SERVER_STATS, BGWRITER), cumulative since the cluster
        began; a view a version lacks is left out."""
        out = {}
        with self._stats_lock:
            for query, names in ((SERVER_STATS_SQL, SERVER_STATS), (BGWRITER_SQL, BGWRITER)):
                try:
                    row = self._stats_conn.execute(query).fetchone()
                except psycopg.errors.UndefinedColumn:       # 17+: pg_stat_checkpointer and pg_stat_io
                    continue
                out.update({n: int(v) for n, v in zip(names, row) if v is not None})
        return EngineCounters(counters=out, gauges={})

    def reader(self) -> "PostgresReader":
        return self.reader_factory()()

    def reader_factory(self):
        return functools.partial(open_reader, self.server.conninfo(), self.variant or "bitemporal")

    def drop_indexes(self, names: list[str]) -> None:
        """A state derived from one with every index (harness/state/derive.py): the index files go with them."""
        for name in names:
            self.conn.execute(f"DROP INDEX {name}")        # names from the schema's DDL (registry.index_name)

    def rebuild_indexes(self) -> None:
        """A bulk-built state at another index_fillfactor, derived from the default's (harness/state/derive.py):
        each secondary index rebuilt from the rows as bulk_finish's CREATE INDEX builds it, then settled."""
        for (name,) in self.conn.execute(SECONDARY_INDEXES_SQL).fetchall():
            self.conn.execute(f"ALTER INDEX {name} SET (fillfactor = {int(self._fillfactor)})")
            self.conn.execute(f"REINDEX INDEX {name}")
        self.settle()

    def checkpoint(self, mode: str) -> None:
        self.conn.execute("CHECKPOINT")          # the one mode its manifest declares

    def settle(self) -> None:
        for sql in SETTLE_SQL:
            self.conn.execute(sql)

    def _checkpoint_counter(self) -> int:
        with self._stats_lock:
            try:
                row = self._stats_conn.execute(
                    "SELECT checkpoints_timed + checkpoints_req FROM pg_stat_bgwriter").fetchone()
            except psycopg.errors.UndefinedColumn:        # PostgreSQL 17+: pg_stat_checkpointer
                row = self._stats_conn.execute(
                    "SELECT num_timed + num_requested FROM pg_stat_checkpointer").fetchone()
        return int(row[0])

    def storage(self) -> StorageStats:
        """db: pg_database_size; WAL: bytes written since the last checkpoint's redo point (what crash
        recovery would replay, the analogue of SQLite's un-checkpointed WAL); checkpoints completed."""
        with self._stats_lock:
            db, wal = self._stats_conn.execute(
                "SELECT pg_database_size(current_database()), "
                "pg_wal_lsn_diff(pg_current_wal_lsn(), (SELECT redo_lsn FROM pg_control_checkpoint()))"
            ).fetchone()
        # NULL where the server cannot say yet (no checkpoint's redo point just after a crash recovery)
        return StorageStats(db_bytes=int(db or 0), wal_bytes=None if wal is None else int(wal),
                            checkpoints=self._checkpoint_counter() - self._ckpt_at_open)

    def row_counts(self) -> dict[str, int]:
        return {t: self.conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables(self.variant)}

    def iter_rows(self, table: str) -> Iterator[tuple]:
        with psycopg.connect(self.server.conninfo()) as conn:
            with conn.cursor(name="dump") as cur:
                cur.itersize = 2000
                cur.execute(sql.select_all_sql(self.variant or "bitemporal", table))
                yield from cur

    def info(self) -> EngineInfo:
        version = self.conn.execute("SHOW server_version").fetchone()[0]
        eff = {n: self.conn.execute(f"SHOW {n}").fetchone()[0] for n in self.settings_names}
        eff["server_user"] = self.server.user
        found = sorted(int(r[0]) for r in self.conn.execute(INDEX_FILLFACTOR_SQL).fetchall())
        if found:                       # read back from the indexes themselves (a cloned state's, say)
            eff["index_fillfactor"] = found[0] if len(found) == 1 else found
        return EngineInfo(library=f"PostgreSQL {version}", driver=f"psycopg {psycopg.__version__} "
                          f"(libpq {psycopg.pq.version() // 10000}.{psycopg.pq.version() % 10000}, {psycopg.pq.__impl__})", settings=eff,
                          data_limit_bytes_seen=self.server.limit_bytes_seen())

    def close(self, discard: bool = False) -> None:
        for c in (getattr(self, "conn", None), getattr(self, "_stats_conn", None)):
            if c is not None:
                c.close()
        self.conn = None
        server = getattr(self, "server", None)
        if server is not None:
            server.stop(immediate=discard)


def open_reader(conninfo: str, variant: str) -> "PostgresReader":
    return PostgresReader(psycopg.connect(conninfo, autocommit=True), variant)


class PostgresReader(sql.QueryReader):
    placeholder = "%s"

    def hold_snapshot(self, duration_s: float) -> None:
        with self.handle.transaction():
            self.handle.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            self.handle.execute("SELECT count(*) FROM (SELECT 1 FROM payloads LIMIT 1) s").fetchone()
            time.sleep(duration_s)


ENGINE = PostgresEngine
