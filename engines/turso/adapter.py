"""Turso (pyturso): the Rust rewrite of SQLite, driven like SQLite. With journal_mode: mvcc, blocks
run as BEGIN CONCURRENT transactions on its multi-version store."""
from __future__ import annotations

import os
from importlib.metadata import version
from pathlib import Path
from typing import ClassVar, Mapping

import turso

from engines.sqlite.adapter import SQLiteEngine
from engines.turso.settings import CAPABILITIES
from harness.engine_api import Capabilities, EngineInfo


class TursoEngine(SQLiteEngine):
    name: ClassVar[str] = "turso"
    capabilities: ClassVar[Capabilities] = CAPABILITIES

    def _connect(self, path: Path, read_only: bool = False):
        return turso.connect(str(path), isolation_level=None)

    def _apply_pragmas(self, conn, settings: Mapping[str, object], writer: bool) -> None:
        # pyturso runs a statement that returns rows only when its result is fetched: fetch every one,
        # or `journal_mode = 'mvcc'` silently never happens.
        pragmas = [f"busy_timeout = {int(settings['busy_timeout'])}"]
        if writer:
            mode = settings["journal_mode"]
            pragmas.append(f"journal_mode = '{mode}'" if mode == "mvcc" else f"journal_mode = {mode}")
            self.begin_sql = "BEGIN CONCURRENT" if mode == "mvcc" else "BEGIN IMMEDIATE"
        pragmas += [f"synchronous = {settings['synchronous']}", f"cache_size = {int(settings['cache_size'])}"]
        for p in pragmas:
            conn.execute(f"PRAGMA {p}").fetchall()

    def _wal_bytes_in_use(self) -> int:
        """Turso keeps no -shm wal-index: report the WAL file (and the MVCC log) as they are on disk."""
        total = 0
        for suffix in ("-wal", "-log"):
            try:
                total += os.stat(f"{self.path}{suffix}").st_size
            except OSError:
                pass
        return total

    def info(self) -> EngineInfo:
        base = super().info()
        return EngineInfo(version=f"Turso (pyturso {version('pyturso')}, SQLite-compatible "
                                  f"{base.version.split()[-1]})", settings=base.settings)


ENGINE = TursoEngine
