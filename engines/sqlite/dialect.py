"""SQL for the SQLite family (sqlite, libsql, turso share it): qmark parameters, one statement per
(variant, table, operation). Row and key layouts are those of harness/workload/block.py."""
import time

from harness.workload.block import MAX_BLOCK

_COLUMNS = {
    "bitemporal": {
        "string_attributes": ("entity_key", "from_block", "to_block", "key", "value"),
        "numeric_attributes": ("entity_key", "from_block", "to_block", "key", "value"),
        "payloads": ("entity_key", "from_block", "to_block", "payload", "content_type",
                     "string_attributes", "numeric_attributes"),
    },
    "simple": {
        "string_attributes": ("entity_key", "block", "key", "value"),
        "numeric_attributes": ("entity_key", "block", "key", "value"),
        "payloads": ("entity_key", "block", "payload", "content_type", "string_attributes",
                     "numeric_attributes"),
    },
}
_PK = {
    "bitemporal": {"string_attributes": ("entity_key", "key", "from_block"),
                   "numeric_attributes": ("entity_key", "key", "from_block"),
                   "payloads": ("entity_key", "from_block")},
    "simple": {"string_attributes": ("entity_key", "key"), "numeric_attributes": ("entity_key", "key"),
               "payloads": ("entity_key",)},
}


def columns(variant: str, table: str) -> tuple[str, ...]:
    return _COLUMNS[variant][table]


def primary_key(variant: str, table: str) -> tuple[str, ...]:
    return _PK[variant][table]


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


__all__ = ["columns", "primary_key", "insert_sql", "delete_by_pk_sql", "terminate_sql",
           "terminate_params", "reader_sql", "select_all_sql", "QueryReader"]
