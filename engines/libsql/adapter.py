"""Embedded libSQL through the `libsql` package: libSQL's own build of the engine (its
`sqlite_version()` differs from the system SQLite's), driven exactly like SQLite. Never libsql-client
with a file: URL, which silently runs the stdlib sqlite3."""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import ClassVar

import libsql

from engines.libsql.settings import CAPABILITIES
from engines.sqlite.adapter import SQLiteEngine
from harness.engine_api import Capabilities, EngineInfo
from harness.workload.block import Block

# libsql 0.1.x binds a Python int above 2**53 through a double: 2**63-1 is stored as REAL and 2**53+1
# becomes 2**53 (found by the integrity check). Such values are bound as decimal text instead, which
# the INTEGER column affinity stores as the exact integer.
_EXACT_DOUBLE = 1 << 53


def _exact(row: tuple) -> tuple:
    return tuple(str(v) if type(v) is int and not -_EXACT_DOUBLE <= v <= _EXACT_DOUBLE else v for v in row)


class LibSQLEngine(SQLiteEngine):
    name: ClassVar[str] = "libsql"
    capabilities: ClassVar[Capabilities] = CAPABILITIES

    def _connect(self, path: Path, read_only: bool = False):
        # libsql.connect has no uri= flag; readers get their own read-write handle and only read.
        return libsql.connect(str(path), isolation_level=None)

    def prepare_block(self, block: Block) -> Block:
        return dataclasses.replace(
            block, inserts={t: [_exact(r) for r in rows] for t, rows in block.inserts.items()},
            deletes={t: [_exact(k) for k in keys] for t, keys in block.deletes.items()})

    def info(self) -> EngineInfo:
        base = super().info()
        return EngineInfo(version=f"libSQL (SQLite {base.version.split()[-1]}, libsql package "
                                  f"{_package_version()})", settings=base.settings)


def _package_version() -> str:
    from importlib.metadata import version
    return version("libsql")


ENGINE = LibSQLEngine
