"""Turso (pyturso): the Rust rewrite of SQLite, driven like SQLite. With journal_mode: mvcc, blocks
run as BEGIN CONCURRENT transactions on its multi-version store."""
from __future__ import annotations

import os
from importlib.metadata import version
from pathlib import Path
from typing import ClassVar, Mapping

import turso

from engines.sqlite.adapter import SQLiteEngine


class TursoEngine(SQLiteEngine):
    name: ClassVar[str] = "turso"
    # turso keeps no -shm wal-index and checkpoints on its own inside its commit: that time stays in `commit`
    harness_autocheckpoint: ClassVar[bool] = False

    @classmethod
    def connect(cls, path: Path, settings: Mapping[str, object], read_only: bool = False):
        return turso.connect(str(path), isolation_level=None)

    @classmethod
    def pragma_sql(cls, settings: Mapping[str, object], writer: bool) -> list[str]:
        # pyturso runs a statement that returns rows only when its result is fetched (the callers fetch
        # every one, or `journal_mode = 'mvcc'` silently never happens)
        out = [f"PRAGMA busy_timeout = {int(settings['busy_timeout'])}"]
        if writer:
            mode = settings["journal_mode"]
            out.append(f"PRAGMA journal_mode = '{mode}'" if mode == "mvcc" else f"PRAGMA journal_mode = {mode}")
        return out + [f"PRAGMA synchronous = {settings['synchronous']}",
                      f"PRAGMA cache_size = {int(settings['cache_size'])}"]

    @classmethod
    def begin_sql(cls, settings: Mapping[str, object]) -> str:
        return "BEGIN CONCURRENT" if settings["journal_mode"] == "mvcc" else "BEGIN IMMEDIATE"

    @classmethod
    def driver(cls, settings: Mapping[str, object]) -> str:
        return f"pyturso {version('pyturso')}"

    @classmethod
    def status(cls, conn, settings: Mapping[str, object]) -> dict[str, int]:
        return {}

    def library(self) -> str:
        return f"Turso (SQLite-compatible {self.sqlite_version()})"

    def _wal_bytes_in_use(self) -> int:
        """Turso keeps no -shm wal-index: report the WAL file (and the MVCC log) as they are on disk."""
        total = 0
        for suffix in ("-wal", "-log"):
            try:
                total += os.stat(f"{self.path}{suffix}").st_size
            except OSError:
                pass
        return total


ENGINE = TursoEngine
