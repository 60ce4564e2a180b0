"""Generic SQL over the workload's schema (harness/workload/schema.py), qmark parameters: the fallback an
engine uses unless its folder says otherwise. The SQLite family writes with it; every engine reads with
QueryReader (its placeholder style aside). Row and key layouts are those of schema.columns()."""
import time
from dataclasses import dataclass

from harness.workload.block import MAX_BLOCK, Block
from harness.workload.schema import TABLES, columns, primary_key


def insert_sql(variant: str, table: str, rows: int = 1) -> str:
    cols = columns(variant, table)
    one = f"({', '.join('?' * len(cols))})"
    return f"INSERT INTO {table} ({', '.join(cols)}) VALUES {', '.join([one] * rows)}"


def delete_by_pk_sql(variant: str, table: str) -> str:
    return f"DELETE FROM {table} WHERE " + " AND ".join(f"{c} = ?" for c in primary_key(variant, table))


def terminate_sql(variant: str, table: str) -> str:
    """bitemporal: params (block, entity_key); simple: params (entity_key,)."""
    if variant == "bitemporal":
        return (f"UPDATE {table} SET to_block = ?1 "
                f"WHERE entity_key = ?2 AND from_block <= ?1 AND to_block > ?1")
    return f"DELETE FROM {table} WHERE entity_key = ?"


def terminate_params(variant: str, block_number: int, keys: list[bytes]) -> list[tuple]:
    return [(block_number, k) for k in keys] if variant == "bitemporal" else [(k,) for k in keys]


@dataclass(frozen=True)
class BlockSQL:
    """A block's statements, per table, for one schema variant: generic() here, or an engine's own."""
    variant: str
    insert: dict[str, str]
    delete: dict[str, str]
    terminate: dict[str, str]

    @classmethod
    def generic(cls, variant: str) -> "BlockSQL":
        return cls(variant, insert={t: insert_sql(variant, t) for t in TABLES},
                   delete={t: delete_by_pk_sql(variant, t) for t in TABLES},
                   terminate={t: terminate_sql(variant, t) for t in TABLES})


def write_block(conn, begin_sql: str, sql: BlockSQL, block: Block) -> None:
    """ONE transaction on a DB-API connection in autocommit mode: executemany per statement (the
    reference's experiment 4 found it equal to arkiv's per-row execute), rolled back on any error. The
    adapters and the bench-overhead control loops of the SQLite family both write through this."""
    conn.execute(begin_sql)
    try:
        for table, pks in block.deletes.items():
            conn.executemany(sql.delete[table], pks)
        if block.terminate_keys:
            params = terminate_params(sql.variant, block.number, block.terminate_keys)
            for table in TABLES:
                conn.executemany(sql.terminate[table], params)
        for table, rows in block.inserts.items():
            conn.executemany(sql.insert[table], rows)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def reader_sql(variant: str) -> dict[str, list[str] | str]:
    """The reference's entity fetch (three queries) and attribute scan (Mix A 'workload by status')."""
    current = f" AND to_block = {MAX_BLOCK}" if variant == "bitemporal" else ""
    return {
        "entity_fetch": [
            f"SELECT key, value FROM string_attributes WHERE entity_key = ?{current}",
            f"SELECT key, value FROM numeric_attributes WHERE entity_key = ?{current}",
            f"SELECT payload, content_type FROM payloads WHERE entity_key = ?{current}",
        ],
        "attribute_scan": "SELECT DISTINCT entity_key FROM string_attributes WHERE key = ? AND value = ? LIMIT 100",
    }


class QueryReader:
    """The reference's read queries over any DB-API handle whose execute() returns a cursor. Engines
    differ only in placeholder style and in how they hold a snapshot open."""
    placeholder = "?"

    def __init__(self, handle, variant: str):
        self.handle = handle
        sql = reader_sql(variant)
        self._fetch = [q.replace("?", self.placeholder) for q in sql["entity_fetch"]]
        self._scan = sql["attribute_scan"].replace("?", self.placeholder)

    def entity_fetch(self, entity_key: bytes) -> int:
        return sum(len(self.handle.execute(q, (entity_key,)).fetchall()) for q in self._fetch)

    def attribute_scan(self, key: str, value: str) -> int:
        return len(self.handle.execute(self._scan, (key, value)).fetchall())

    def hold_snapshot(self, duration_s: float) -> None:
        """A long-running read transaction: it pins a snapshot (and so the WAL) until it ends."""
        self.handle.execute("BEGIN")
        try:
            self.handle.execute("SELECT count(*) FROM (SELECT 1 FROM payloads LIMIT 1) s").fetchall()
            time.sleep(duration_s)
        finally:
            self.handle.execute("COMMIT")

    def close(self) -> None:
        self.handle.close()


def select_all_sql(variant: str, table: str) -> str:
    return f"SELECT {', '.join(columns(variant, table))} FROM {table}"
