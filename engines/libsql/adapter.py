"""Embedded libSQL through the `libsql` package: libSQL's own build of the engine (its
`sqlite_version()` differs from the stdlib sqlite3's; both are recorded), driven exactly like SQLite.
Never libsql-client with a file: URL, which silently runs the stdlib sqlite3. With a server URL set,
every call goes to remote.RemoteLibSQL instead (libsql-client against sqld)."""
from __future__ import annotations

import dataclasses
import functools
import os
from importlib.metadata import version
from pathlib import Path
from typing import ClassVar, Iterator, Mapping

import libsql

from engines.libsql.remote import remote_reader
from engines.sqlite.adapter import SQLiteEngine
from harness import registry
from harness.engine_api import EngineInfo, StorageStats
from harness.workload.block import Block

# libsql 0.1.x binds a Python int above 2**31-1 as a double: an INTEGER column stores it back as an
# integer only while the double is exact, so 2**53+1 becomes 2**53 and 2**63-1 stays REAL (found by the
# integrity check; engines/libsql/tests). Such values are bound as decimal text instead, which the
# INTEGER column affinity stores as the exact integer.
_EXACT_DOUBLE = 1 << 53


def _exact(row: tuple) -> tuple:
    return tuple(str(v) if type(v) is int and not -_EXACT_DOUBLE <= v <= _EXACT_DOUBLE else v for v in row)


class LibSQLEngine(SQLiteEngine):
    name: ClassVar[str] = "libsql"

    remote = None      # a remote.RemoteLibSQL in server mode

    @classmethod
    def connect(cls, path: Path, settings: Mapping[str, object], read_only: bool = False):
        # libsql.connect has no uri= flag; readers get their own read-write handle and only read.
        return libsql.connect(str(path), isolation_level=None)

    @classmethod
    def driver(cls, settings: Mapping[str, object]) -> str:
        return f"libsql {version('libsql')}"

    @classmethod
    def status(cls, conn, settings: Mapping[str, object]) -> dict[str, int]:
        return {}      # the binding exposes no sqlite3_db_status

    def library(self) -> str:
        return f"libSQL (SQLite {self.sqlite_version()})"

    def open(self, settings: Mapping[str, object], data_dir: Path) -> None:
        if not settings.get("url"):
            return super().open(settings, data_dir)
        from engines.libsql.remote import RemoteLibSQL
        self.settings, self.variant = dict(settings), None
        self.remote = RemoteLibSQL(str(settings["url"]), os.environ.get("LIBSQL_AUTH_TOKEN"))

    def create_schema(self, variant: str, indexes=None) -> None:
        if not self.remote:
            return super().create_schema(variant, indexes)
        self.remote.create_schema(registry.ddl(self.name, variant, indexes))
        self._prepare(variant)

    def apply_block(self, block: Block) -> None:
        (self.remote or super()).apply_block(block)

    def apply_group(self, blocks: list[Block], mark: int | None) -> None:
        if self.remote:
            raise NotImplementedError("a block log's applier needs the embedded libSQL (server mode applies one "
                                      "block per batch)")
        super().apply_group(blocks, mark)

    def reader_factory(self):
        if not self.remote:
            return super().reader_factory()
        return functools.partial(remote_reader, self.remote.url, self.variant or "bitemporal")

    def checkpoint(self, mode: str) -> None:
        if not self.remote:
            return super().checkpoint(mode)
        self.remote.handle.execute(f"PRAGMA wal_checkpoint({mode})")

    def settle(self) -> None:
        if not self.remote:
            return super().settle()
        for stmt in self.settle_sql(self.settings):
            self.remote.handle.execute(stmt)

    def storage(self) -> StorageStats:
        return self.remote.storage() if self.remote else super().storage()

    def row_counts(self) -> dict[str, int]:
        return self.remote.row_counts(self.variant) if self.remote else super().row_counts()

    def iter_rows(self, table: str) -> Iterator[tuple]:
        if self.remote:
            return self.remote.iter_rows(self.variant or "bitemporal", table)
        return super().iter_rows(table)

    def close(self, discard: bool = False) -> None:
        remote, self.remote = self.remote, None
        if remote:
            remote.close()
        super().close(discard)

    def prepare_block(self, block: Block) -> Block:
        # Also in server mode (the feed process never opens the engine): the text is stored as INTEGER.
        return dataclasses.replace(
            block, inserts={t: [_exact(r) for r in rows] for t, rows in block.inserts.items()},
            deletes={t: [_exact(k) for k in keys] for t, keys in block.deletes.items()})

    def counters(self):
        return None if self.remote else super().counters()

    def info(self) -> EngineInfo:
        if self.remote:
            own = self.remote.scalar("select sqlite_version()")
            return EngineInfo(library=f"libSQL server (SQLite {own}) at {self.remote.url}",
                              driver=f"libsql-client {version('libsql-client')}",
                              settings={"url": self.remote.url}, related={"sqlite": own})
        return super().info()


ENGINE = LibSQLEngine
