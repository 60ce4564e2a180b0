"""What a scenario may set for sqlite: its PRAGMAs (shared with libsql, a fork that takes the same) and
the binding SQLite runs through. PRAGMA defaults are the reference application's (WAL, synchronous=NORMAL,
wal_autocheckpoint=10000 from its write plan) and SQLite's own for the rest; under the `sized` memory
policy cache_size takes its share of MEM (engine.toml [memory])."""
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from harness.engine_api import HARNESS_SIDE
from harness.units import parse_size_bytes


class Pragmas(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    journal_mode: Literal["WAL", "DELETE", "TRUNCATE", "PERSIST", "MEMORY", "OFF"] = "WAL"
    synchronous: Literal["OFF", "NORMAL", "FULL", "EXTRA"] = "NORMAL"
    # SQLite semantics: negative = KiB, positive = pages. A size string ("256MB") becomes -KiB.
    cache_size: int | str = -2000
    # each reader connection's cache (the same semantics); None: cache_size. Under the sized policy the readers
    # divide cache_size's share (engine.toml [memory] per_reader): each connection's cache is its own, and ten
    # readers at the writer's cache each outgrew MEM scanning (the DC mix, 10 connections, 12-06: OOM-killed).
    # No PRAGMA of its own (the readers' cache_size), so not read back from the writer's connection.
    reader_cache_size: int | str | None = Field(None, description="each reader connection's cache_size; none: "
                                                "cache_size", json_schema_extra=HARNESS_SIDE)
    mmap_size: int | str = 0
    # the reference's write plan (SQLite's own default is 1000)
    wal_autocheckpoint: int = Field(10000, ge=0, description="pages; 0 disables automatic checkpoints")
    busy_timeout: int = Field(5000, ge=0, description="ms")
    journal_size_limit: int | str = Field(-1, description="bytes of WAL file kept after a checkpoint resets it "
                                                          "(-1: no limit, SQLite's default)")
    page_size: int = Field(4096, description="bytes; applied before the schema is created")
    # Not a PRAGMA: the planner's statistics, gathered as PRAGMA optimize does (ANALYZE reading at most
    # ANALYSIS_LIMIT rows per index, so as fast at 5x as at 0.001x) when the database settles after its
    # load. Without them SQLite serves every current-version read through the index on to_block, where
    # most rows share one value (entity_current 36x slower, measured); write statements plan the same.
    analyze: bool = Field(True, description="gather planner statistics when the database settles",
                          json_schema_extra=HARNESS_SIDE)

    # Not PRAGMAs: checkpoints off the commit path (background.py): a second connection in a thread of the
    # writer's process, PASSIVE every checkpoint_background_ms, TRUNCATE once the WAL passes the bound.
    checkpoint_background: bool = Field(False, description="checkpoint from a second connection in the "
                                        "background; the writer's automatic checkpoint is off",
                                        json_schema_extra=HARNESS_SIDE)
    checkpoint_background_ms: int = Field(100, ge=1, description="ms between background PASSIVE checkpoints",
                                          json_schema_extra=HARNESS_SIDE)
    checkpoint_background_truncate: int | str = Field(1 << 30, description="a TRUNCATE checkpoint once the WAL "
                                                      "holds this many bytes, or a size such as 256MB (0: never)",
                                                      json_schema_extra=HARNESS_SIDE)

    @field_validator("journal_size_limit")
    @classmethod
    def _journal_size_limit(cls, v: int | str) -> int:
        return v if isinstance(v, int) else parse_size_bytes(v)

    @field_validator("cache_size", "reader_cache_size")
    @classmethod
    def _cache_size(cls, v: int | str | None) -> int | None:
        return v if v is None or isinstance(v, int) else -(parse_size_bytes(v) // 1024)

    @field_validator("mmap_size", "checkpoint_background_truncate")
    @classmethod
    def _bytes(cls, v: int | str) -> int:
        return parse_size_bytes(v)

    @field_validator("page_size")
    @classmethod
    def _page_size(cls, v: int) -> int:
        if v < 512 or v > 65536 or v & (v - 1):
            raise ValueError("page_size must be a power of two from 512 to 65536")
        return v



class Settings(Pragmas):
    # Not a PRAGMA: how a block's rows reach SQLite (the reference's experiment 4): one executemany per
    # statement, or one execute per row as arkiv's Go code does.
    insert_mode: Literal["executemany", "execute"] = Field(
        "executemany", description="executemany: one call per statement; execute: one call per row",
        json_schema_extra=HARNESS_SIDE)
    # Which SQLite (engines/sqlite/bindings.py): the default is the SQLite libSQL is built on. Not a PRAGMA:
    # the result records the binding in engine_driver and the SQLite it loaded in engine_library.
    library: Literal["apsw", "stdlib", "apsw-newest"] = Field(
        "apsw", description="apsw: APSW's pinned SQLite (libSQL's base); stdlib: Python's sqlite3 module; "
                            "apsw-newest: APSW with the newest SQLite", json_schema_extra=HARNESS_SIDE)
