"""libSQL server mode: a libSQL server (sqld) reached with libsql-client (Hrana over ws/http). Each
block is ONE batch, which the client runs as one transaction in one round trip. Integers travel as
decimal strings in Hrana, so the embedded driver's 2**53 rounding does not apply here."""
from __future__ import annotations

import os
import time
from typing import Iterator

from harness import sql
from harness.engine_api import TABLES, StorageStats, tables
from harness.workload.block import Block

INSERT_ROWS_PER_STATEMENT = 200       # 7 columns x 200 rows stays far below SQLite's 32766 parameters


def connect(url: str, auth_token: str | None):
    import libsql_client
    return libsql_client.create_client_sync(url, auth_token=auth_token)


def block_statements(block: Block) -> list:
    """The block as libsql-client Statements, in the order of the embedded engines' apply_block."""
    from libsql_client import Statement
    v, out = block.variant, []
    for t, pks in block.deletes.items():
        stmt = sql.delete_by_pk_sql(v, t)
        out += [Statement(stmt, list(pk)) for pk in pks]
    if block.terminate_keys:
        params = sql.terminate_params(block.number, block.terminate_keys)
        for t in TABLES:
            for stmt in sql.terminate_sql(v, t):
                out += [Statement(stmt, list(p)) for p in params]
    for t, rows in block.inserts.items():
        for i in range(0, len(rows), INSERT_ROWS_PER_STATEMENT):
            chunk = rows[i:i + INSERT_ROWS_PER_STATEMENT]
            out.append(Statement(sql.insert_sql(v, t, rows=len(chunk)), [x for r in chunk for x in r]))
    return out


class _Rows:
    def __init__(self, rs) -> None:
        self.rows = [tuple(r) for r in rs.rows]

    def fetchall(self) -> list[tuple]:
        return self.rows


class Handle:
    """The DB-API subset QueryReader uses, over a libsql-client connection."""

    def __init__(self, client) -> None:
        self.client = client

    def execute(self, sql: str, params=()) -> _Rows:
        return _Rows(self.client.execute(sql, list(params)))

    def close(self) -> None:
        self.client.close()


class RemoteReader(sql.QueryReader):
    def hold_snapshot(self, duration_s: float) -> None:
        # Over Hrana a BEGIN ... COMMIT pair must share one stream: the client's transaction object.
        with self.handle.client.transaction() as tx:
            tx.execute("SELECT count(*) FROM (SELECT 1 FROM payloads LIMIT 1) s")
            time.sleep(duration_s)
            tx.rollback()


def remote_reader(url: str, variant: str) -> "RemoteReader":
    """A reader of its own, in the runner or a reader process; the token comes from the environment, never
    through the pipe to a reader process."""
    return RemoteReader(Handle(connect(url, os.environ.get("LIBSQL_AUTH_TOKEN"))), variant)


class RemoteLibSQL:
    """What LibSQLEngine delegates to when a server URL is set."""

    def __init__(self, url: str, auth_token: str | None) -> None:
        self.url, self.auth_token = url, auth_token
        self.handle = Handle(connect(url, auth_token))

    def create_schema(self, ddl: str) -> None:
        from libsql_client import Statement
        self.handle.client.batch([Statement(s) for s in ddl.split(";") if s.strip()])

    def apply_block(self, block: Block) -> None:
        self.handle.client.batch(block_statements(block))

    def scalar(self, sql: str):
        return self.handle.execute(sql).fetchall()[0][0]

    def storage(self) -> StorageStats:
        # The server's files are not ours to stat: the database size is what the engine reports. WAL
        # size and checkpoints are not visible through the protocol and read as 0.
        return StorageStats(db_bytes=self.scalar("PRAGMA page_count") * self.scalar("PRAGMA page_size"),
                            wal_bytes=0, checkpoints=0)

    def row_counts(self, variant: str | None) -> dict[str, int]:
        return {t: self.scalar(f"SELECT count(*) FROM {t}") for t in tables(variant)}

    def iter_rows(self, variant: str, table: str, page_rows: int = 5000) -> Iterator[tuple]:
        # keyset pages over rowid: one bounded response per request
        cols = ", ".join(sql.columns(variant, table))
        last = -1 << 63
        while rows := self.handle.execute(f"SELECT rowid, {cols} FROM {table} WHERE rowid > ? "
                                          f"ORDER BY rowid LIMIT {page_rows}", (last,)).fetchall():
            last = rows[-1][0]
            yield from (r[1:] for r in rows)

    def close(self) -> None:
        self.handle.close()
