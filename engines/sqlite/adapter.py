"""SQLite on the stdlib sqlite3 module: one transaction per block, executemany per statement (the
reference's experiment 4 found it equal to arkiv's per-row execute), PRAGMAs from the scenario."""
from __future__ import annotations

import os
import sqlite3
import struct
import threading
from pathlib import Path
from typing import ClassVar, Iterator, Mapping

from engines.sqlite import dialect
from engines.sqlite.settings import CAPABILITIES
from harness.engine_api import TABLES, Capabilities, EngineBase, EngineInfo, StorageStats
from harness.workload.block import Block

_DDL_DIR = Path(__file__).parent
PRAGMAS = ("journal_mode", "synchronous", "cache_size", "mmap_size", "wal_autocheckpoint", "busy_timeout")
_SHM_MXFRAME = struct.Struct("=I")   # wal-index header: u32 mxFrame at offset 16, native byte order
_WAL_HEADER = struct.Struct(">IIII")  # magic, version, page size, checkpoint sequence
# No background work to wait for after the load; an empty WAL makes the first autocheckpoint land at the
# same point of the measured phase whatever the load left.
SETTLE_CHECKPOINT = "TRUNCATE"


class SQLiteEngine(EngineBase):
    name: ClassVar[str] = "sqlite"
    capabilities: ClassVar[Capabilities] = CAPABILITIES
    db_filename: ClassVar[str] = "arkiv.db"
    begin_sql: str = "BEGIN IMMEDIATE"

    # --- connection plumbing, overridden by SQLite-family engines (libsql, turso) ------------------
    def _connect(self, path: Path, read_only: bool = False):
        uri = f"file:{path}?mode=ro" if read_only else f"file:{path}"
        return sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)

    def _apply_pragmas(self, conn, settings: Mapping[str, object], writer: bool) -> None:
        conn.execute(f"PRAGMA busy_timeout = {int(settings['busy_timeout'])}")
        if writer:
            conn.execute(f"PRAGMA page_size = {int(settings['page_size'])}")
            conn.execute(f"PRAGMA journal_mode = {settings['journal_mode']}")
            conn.execute(f"PRAGMA wal_autocheckpoint = {int(settings['wal_autocheckpoint'])}")
        conn.execute(f"PRAGMA synchronous = {settings['synchronous']}")
        conn.execute(f"PRAGMA cache_size = {int(settings['cache_size'])}")
        conn.execute(f"PRAGMA mmap_size = {int(settings['mmap_size'])}")

    # --- contract ------------------------------------------------------------------------------
    def open(self, settings: Mapping[str, object], data_dir: Path) -> None:
        self.settings = dict(settings)
        self.data_dir = Path(data_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.path = self.data_dir / self.db_filename
        self.conn = self._connect(self.path)
        self._apply_pragmas(self.conn, self.settings, writer=True)
        self.variant: str | None = None
        self._ckpt_lock = threading.Lock()
        self._shm_fd: int | None = None       # the -shm, held open (see _wal_bytes_in_use)
        self._ckpt_seen = self._wal_checkpoint_seq() or 0   # a WAL created from now on starts at 0
        self._ckpt_count = 0

    def create_schema(self, variant: str) -> None:
        self.conn.executescript((_DDL_DIR / f"ddl-{variant}.sql").read_text())
        self._prepare(variant)

    def _prepare(self, variant: str) -> None:
        self.variant = variant
        self._insert = {t: dialect.insert_sql(variant, t) for t in TABLES}
        self._delete = {t: dialect.delete_by_pk_sql(variant, t) for t in TABLES}
        self._terminate = {t: dialect.terminate_sql(variant, t) for t in TABLES}

    def apply_block(self, block: Block) -> None:
        c = self.conn
        c.execute(self.begin_sql)
        try:
            for table, pks in block.deletes.items():
                c.executemany(self._delete[table], pks)
            if block.terminate_keys:
                params = dialect.terminate_params(block.variant, block.number, block.terminate_keys)
                for table in TABLES:
                    c.executemany(self._terminate[table], params)
            for table, rows in block.inserts.items():
                c.executemany(self._insert[table], rows)
            c.execute("COMMIT")
        except BaseException:
            if c.in_transaction:
                c.execute("ROLLBACK")
            raise

    def reader(self) -> dialect.QueryReader:
        conn = self._connect(self.path, read_only=True)
        self._apply_pragmas(conn, self.settings, writer=False)
        return dialect.QueryReader(conn, self.variant or "bitemporal")

    def checkpoint(self, mode: str) -> None:
        if mode not in self.capabilities.checkpoint_modes:
            raise ValueError(f"checkpoint mode {mode!r}; allowed: {', '.join(self.capabilities.checkpoint_modes)}")
        self.conn.execute(f"PRAGMA wal_checkpoint({mode})").fetchall()

    def settle(self) -> None:
        self.checkpoint(SETTLE_CHECKPOINT)

    def storage(self) -> StorageStats:
        return StorageStats(db_bytes=_size(self.path), wal_bytes=self._wal_bytes_in_use(),
                            checkpoints=self._checkpoints())

    def row_counts(self) -> dict[str, int]:
        return {t: self.conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES}

    def iter_rows(self, table: str) -> Iterator[tuple]:
        cur = self.conn.execute(dialect.select_all_sql(self.variant or "bitemporal", table))
        while batch := cur.fetchmany(2000):
            yield from batch

    def info(self) -> EngineInfo:
        version = self.conn.execute("select sqlite_version()").fetchone()[0]
        eff = {}
        for p in PRAGMAS + ("page_size",):
            row = self.conn.execute(f"PRAGMA {p}").fetchone()
            if row is not None:          # turso answers nothing for pragmas it ignores
                eff[p] = row[0]
        return EngineInfo(version=f"SQLite {version}", settings=eff)

    def close(self) -> None:
        conn, self.conn = getattr(self, "conn", None), None
        if conn is not None:
            conn.close()
        fd, self._shm_fd = getattr(self, "_shm_fd", None), None
        if fd is not None:            # only now: closing it drops this process's locks on the -shm
            os.close(fd)

    # --- WAL observation without touching the database ----------------------------------------
    def _wal_bytes_in_use(self) -> int:
        """Frames in the WAL now (wal-index mxFrame), not the file size: SQLite reuses the WAL file from
        its start after a checkpoint, so the file only shows the high-water mark.

        The -shm file is opened once and held until close(): SQLite's locks on it are POSIX locks, which
        any close() of any descriptor of that file in this process drops. Reading it through a fresh
        descriptor each second released the engine's own locks; another process opening the database
        then truncated the wal-index under the engine's mapping (SIGBUS)."""
        with self._ckpt_lock:
            if self._shm_fd is None:
                try:
                    self._shm_fd = os.open(f"{self.path}-shm", os.O_RDONLY)
                except OSError:
                    return 0
            hdr = os.pread(self._shm_fd, 48, 0)
        if len(hdr) < 48:
            return 0
        page = struct.unpack_from("=H", hdr, 14)[0]
        page = 65536 if page == 1 else page
        (mx_frame,) = _SHM_MXFRAME.unpack_from(hdr, 16)
        return 32 + mx_frame * (page + 24) if mx_frame else 0

    def _wal_checkpoint_seq(self) -> int | None:
        try:
            with open(f"{self.path}-wal", "rb") as f:
                hdr = f.read(16)
        except OSError:
            return None
        if len(hdr) < 16:
            return None
        magic, _, _, seq = _WAL_HEADER.unpack(hdr)
        return seq if magic in (0x377F0682, 0x377F0683) else None

    def _checkpoints(self) -> int:
        """Each WAL restart after a completed checkpoint bumps the header's checkpoint sequence number."""
        with self._ckpt_lock:
            seq = self._wal_checkpoint_seq()
            if seq is not None and seq > self._ckpt_seen:
                self._ckpt_count += seq - self._ckpt_seen
                self._ckpt_seen = seq
            return self._ckpt_count


def _size(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


ENGINE = SQLiteEngine
