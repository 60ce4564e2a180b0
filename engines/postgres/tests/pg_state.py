"""A built state's server opened for a few statements and stopped (the state is a test's own copy)."""
from pathlib import Path

from engines.postgres.adapter import PostgresEngine
from harness.state import store


def query(state_dir: Path, sql: str) -> list[tuple]:
    e = PostgresEngine()
    e.open({}, state_dir / store.DATA)
    try:
        return e.conn.execute(sql).fetchall()
    finally:
        e.close(discard=True)
