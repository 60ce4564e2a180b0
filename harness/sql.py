"""Generic SQL over the workload's schema (harness/workload/schema.py), qmark parameters: the fallback an
engine uses unless its folder says otherwise. The SQLite family writes with it; every engine reads with
QueryReader (its placeholder style aside). Row and key layouts are those of schema.columns()."""
import time
from dataclasses import dataclass

from harness.workload.block import Block
from harness.workload.schema import HISTORY, TABLES, columns, keeps_history_apart, primary_key, tables


def insert_sql(variant: str, table: str, rows: int = 1) -> str:
    cols = columns(variant, table)
    one = f"({', '.join('?' * len(cols))})"
    return f"INSERT INTO {table} ({', '.join(cols)}) VALUES {', '.join([one] * rows)}"


def delete_by_pk_sql(variant: str, table: str) -> str:
    return f"DELETE FROM {table} WHERE " + " AND ".join(f"{c} = ?" for c in primary_key(variant, table))


def terminate_sql(variant: str, table: str) -> tuple[str, ...]:
    """The statements that end an entity's current version at a block, each taking terminate_params' pair
    (block, entity_key) as ?1 and ?2: bitemporal sets its rows' end; current_history moves them, ended, to
    the history table; simple deletes them."""
    if variant == "bitemporal":
        return (f"UPDATE {table} SET to_block = ?1 "
                f"WHERE entity_key = ?2 AND from_block <= ?1 AND to_block > ?1",)
    delete = f"DELETE FROM {table} WHERE entity_key = ?2"
    if not keeps_history_apart(variant):
        return (delete,)
    return (move_to_history_sql(table, "?1", "entity_key = ?2"), delete)


def move_to_history_sql(table: str, block: str, where: str) -> str:
    """current_history: copy the current rows that `where` selects into the history table, ended at
    `block` (a placeholder or expression), in its column order."""
    cur, hist = columns("current_history", table), columns("current_history", table + HISTORY)
    select = ", ".join([*cur[:2], block, *cur[2:]])
    return f"INSERT INTO {table}{HISTORY} ({', '.join(hist)}) SELECT {select} FROM {table} WHERE {where}"


def terminate_params(block_number: int, keys: list[bytes]) -> list[tuple]:
    return [(block_number, k) for k in keys]


@dataclass(frozen=True)
class BlockSQL:
    """A block's statements, per table, for one schema variant: generic() here, or an engine's own."""
    variant: str
    insert: dict[str, str]
    delete: dict[str, str]
    terminate: dict[str, tuple[str, ...]]     # a table's statements, in order, with the same parameters

    @classmethod
    def generic(cls, variant: str) -> "BlockSQL":
        # every table's insert: a state's bulk build fills current_history's history tables too
        return cls(variant, insert={t: insert_sql(variant, t) for t in tables(variant)},
                   delete={t: delete_by_pk_sql(variant, t) for t in TABLES},
                   terminate={t: terminate_sql(variant, t) for t in TABLES})


# A design's applier (harness/designs/) records the last block it applied in the transaction that applied it,
# so a replay after a crash starts after it: generic SQL, one row.
APPLIED_TABLE = "block_log_applied"
APPLIED_DDL = (f"CREATE TABLE IF NOT EXISTS {APPLIED_TABLE} (block BIGINT NOT NULL)",
               f"INSERT INTO {APPLIED_TABLE} SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM {APPLIED_TABLE})")
APPLIED_SELECT = f"SELECT block FROM {APPLIED_TABLE}"


def applied_update_sql(placeholder: str) -> str:
    return f"UPDATE {APPLIED_TABLE} SET block = {placeholder}"


def applied_mark(execute) -> int:
    """The applied mark through `execute(sql) -> cursor`, the table made where it is missing."""
    for stmt in APPLIED_DDL:
        execute(stmt)
    return int(execute(APPLIED_SELECT).fetchall()[0][0])


def write_block(conn, begin_sql: str, sql: BlockSQL, block: Block, per_row: bool = False) -> int:
    """ONE transaction on a DB-API connection in autocommit mode: executemany per statement (the
    reference's experiment 4 found it equal to arkiv's per-row execute; per_row runs that instead), rolled
    back on any error. Returns when its COMMIT began (perf_counter_ns): the statements' end. The adapters and
    the bench-overhead control loops of the SQLite family both write through this."""
    return write_blocks(conn, begin_sql, sql, [block], per_row)


def write_blocks(conn, begin_sql: str, sql: BlockSQL, blocks: list[Block], per_row: bool = False,
                 mark: int | None = None) -> int:
    """write_block for several blocks in order in ONE transaction, with `mark` as the applied mark."""
    conn.execute(begin_sql)
    if per_row:
        conn = _PerRow(conn)
    try:
        for block in blocks:
            _block_statements(conn, sql, block)
        if mark is not None:
            conn.execute(applied_update_sql("?"), (mark,))
        statements_end_ns = time.perf_counter_ns()
        conn.execute("COMMIT")
        return statements_end_ns
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _block_statements(conn, sql: BlockSQL, block: Block) -> None:
    for table, pks in block.deletes.items():
        conn.executemany(sql.delete[table], pks)
    if block.terminate_keys:
        params = terminate_params(block.number, block.terminate_keys)
        for table in TABLES:
            for stmt in sql.terminate[table]:
                conn.executemany(stmt, params)
    for table, rows in block.inserts.items():
        conn.executemany(sql.insert[table], rows)


class _PerRow:
    """A connection whose executemany is one execute per row."""

    def __init__(self, conn):
        self.conn = conn

    def execute(self, stmt, params=()):
        return self.conn.execute(stmt, params)

    def executemany(self, stmt, rows) -> None:
        ex = self.conn.execute
        for row in rows:
            ex(stmt, row)

    @property
    def in_transaction(self) -> bool:
        return self.conn.in_transaction


class QueryReader:
    """Read statements (reads/queries.py, resolved with this placeholder style) over any DB-API handle whose
    execute() returns a cursor. Engines differ only in placeholder style and in how they hold a snapshot."""
    placeholder = "?"

    def __init__(self, handle, variant: str):
        self.handle, self.variant = handle, variant

    def run(self, sql: str, params: tuple) -> int:
        """Rows returned, all fetched."""
        return len(self.handle.execute(sql, params).fetchall())

    def rows(self, sql: str, params: tuple) -> list:
        """Every row of a statement (a checked DC query's: the block its snapshot holds, and the answer)."""
        return self.handle.execute(sql, params).fetchall()

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
    """Every row of any table of the variant (a history table's too), in DDL column order."""
    return f"SELECT {', '.join(columns(variant, table))} FROM {table}"
