"""The hand-written control loop for `make bench-overhead`: the raw sqlite3 driver and the same SQL,
no harness. Shared by the SQLite family (libsql, turso) with their own connect()."""
from pathlib import Path

from engines.sqlite.adapter import SETTLE_CHECKPOINT, SQLiteEngine

_DDL = Path(__file__).parent


def make(connect):
    class Loop:
        def __init__(self, data_dir: Path, settings: dict, variant: str):
            data_dir.mkdir(parents=True, exist_ok=True)
            self.c = connect(str(data_dir / "loop.db"))
            for p in ("journal_mode", "synchronous", "cache_size"):
                self.c.execute(f"PRAGMA {p} = {settings[p]}").fetchall()
            self.c.executescript((_DDL / f"ddl-{variant}.sql").read_text())
            self.bt = variant == "bitemporal"

        def apply(self, b) -> None:
            c = self.c
            c.execute(SQLiteEngine.begin_sql)
            for t, pks in b.deletes.items():
                where = "entity_key = ? AND key = ? AND from_block = ?" if t != "payloads" else "entity_key = ? AND from_block = ?"
                c.executemany(f"DELETE FROM {t} WHERE {where}", pks)
            for t in ("string_attributes", "numeric_attributes", "payloads"):
                c.executemany(f"UPDATE {t} SET to_block = ?1 WHERE entity_key = ?2 AND from_block <= ?1 AND to_block > ?1",
                              [(b.number, k) for k in b.terminate_keys])
            for t, rows in b.inserts.items():
                c.executemany(f"INSERT INTO {t} VALUES ({', '.join('?' * len(rows[0]))})", rows)
            c.execute("COMMIT")

        def settle(self) -> None:
            self.c.execute(f"PRAGMA wal_checkpoint({SETTLE_CHECKPOINT})").fetchall()

        def close(self) -> None:
            self.c.close()
    return Loop


def _connect(path: str):
    import sqlite3
    return sqlite3.connect(path, isolation_level=None)


Loop = make(_connect)
