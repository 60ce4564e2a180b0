"""The Python bindings the sqlite engine can run SQLite through (the `library` setting):
  stdlib       Python's sqlite3 module: whatever SQLite the interpreter links (Debian's 3.40.1 here);
  apsw         APSW pinned in engine.toml's requirements: its wheel bundles exactly that SQLite release
               (3.45.1, the SQLite libSQL 0.1.11 is built on), so the tree's SQLite → libSQL step
               measures the fork and nothing else;
  apsw-newest  APSW with the newest SQLite, installed beside it (engine.toml's side_requirements): the
               verdict's control, "would a plain SQLite upgrade have done?".
Both hand the adapter a connection with the DB-API calls harness.sql.write_block uses (execute,
executemany, in_transaction, executescript, close). Only APSW exposes SQLite's status counters."""
from __future__ import annotations

import functools
import platform
import sqlite3
import sys
from pathlib import Path

from harness import registry
from harness.errors import ConfigError

ENGINE = "sqlite"
DEFAULT = "apsw"


class Stdlib:
    name = "stdlib"

    def connect(self, path: Path, read_only: bool = False):
        uri = f"file:{path}?mode=ro" if read_only else f"file:{path}"
        return sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)

    def driver(self) -> str:
        return f"Python {platform.python_version()} sqlite3 module"

    def status(self, conn) -> dict[str, int]:
        return {}            # sqlite3_db_status is not exposed by the stdlib module


# SQLite's per-connection page cache counters (sqlite3_db_status), cumulative since the connection opened.
# In WAL mode a page the cache writes is a WAL frame appended (or a spill of a dirty page mid-transaction).
_COUNTERS = {"page_cache_hits": "SQLITE_DBSTATUS_CACHE_HIT", "page_cache_misses": "SQLITE_DBSTATUS_CACHE_MISS",
             "page_cache_writes": "SQLITE_DBSTATUS_CACHE_WRITE", "page_cache_spills": "SQLITE_DBSTATUS_CACHE_SPILL"}
_GAUGES = {"page_cache_used_bytes": "SQLITE_DBSTATUS_CACHE_USED"}


class APSW:
    def __init__(self, name: str):
        self.name = name
        self.apsw = _import_apsw(name)
        self._connection = type("Connection", (self.apsw.Connection,), {"executescript": _executescript})

    def connect(self, path: Path, read_only: bool = False):
        a = self.apsw
        flags = a.SQLITE_OPEN_READONLY if read_only else a.SQLITE_OPEN_READWRITE | a.SQLITE_OPEN_CREATE
        return self._connection(str(path), flags=flags)

    def driver(self) -> str:
        return f"APSW {self.apsw.apsw_version()}"

    def status(self, conn) -> dict[str, int]:
        a = self.apsw
        out = {k: conn.status(getattr(a, op))[0] for k, op in {**_COUNTERS, **_GAUGES}.items()}
        # SQLite's whole heap in the process, page caches included (sqlite3_status64: no overflow)
        out["engine_heap_bytes"] = a.status(a.SQLITE_STATUS_MEMORY_USED)[0]
        # sqlite3_db_status is 32-bit: past 2 GiB the cache's size wraps, so it is unknown, never negative
        if not 0 <= out["page_cache_used_bytes"] < 1 << 31 or conn_cache_may_exceed_2gib(conn):
            del out["page_cache_used_bytes"]
        return out


def conn_cache_may_exceed_2gib(conn) -> bool:
    """A cache allowed past 2 GiB can have wrapped sqlite3_db_status's int back into range."""
    size = next(iter(conn.execute("PRAGMA cache_size")))[0]
    page = next(iter(conn.execute("PRAGMA page_size")))[0]
    return (-size * 1024 if size < 0 else size * page) >= 1 << 31


COUNTER_NAMES = tuple(_COUNTERS)     # monotone: the runner records their measured-phase increase


@functools.cache          # one per library and process: the adapter asks on every connect
def binding(library: str) -> Stdlib | APSW:
    return Stdlib() if library == "stdlib" else APSW(library)


def _import_apsw(library: str):
    """The pinned APSW from site-packages, or a side install by its name. A process holds one `apsw`
    module: asking for another build than the one already imported is refused, never silently served."""
    side = None if library == DEFAULT else registry.side_path(ENGINE, library)
    if side is not None and not side.is_dir():
        raise ConfigError(f"engines.sqlite.library: {library!r} is not installed ({side} is missing); "
                          "run `make install` (or `make images` for the docker runtime)")
    if side is not None and "apsw" not in sys.modules:
        sys.path.insert(0, str(side))
        try:
            import apsw
        finally:
            sys.path.remove(str(side))
    import apsw
    loaded = Path(apsw.__file__).resolve()
    if not loaded.is_relative_to(side.resolve()) if side else registry.SIDE_DIR in loaded.parts:
        raise ConfigError(f"engines.sqlite.library: {library!r} asked, but this process already runs APSW "
                          f"{apsw.apsw_version()} from {apsw.__file__}; one APSW build per process")
    return apsw


def _executescript(conn, script: str) -> None:
    for _ in conn.execute(script):      # APSW runs every statement of a string in execute()
        pass
