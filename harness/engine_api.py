"""The engine contract (docs/design.md): a small Protocol, capability flags instead of engine-name branches."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Iterator, Mapping, Protocol

from harness.workload.block import Block

TABLES = ("string_attributes", "numeric_attributes", "payloads")


@dataclass(frozen=True)
class Capabilities:
    server: bool                      # a separate server process holds the data (gets the memory limit)
    wal: bool                         # has a write-ahead log whose size we report
    mvcc: bool                        # readers never block the writer
    readers_in_process_only: bool     # readers must be threads of the runner (one process per file)
    checkpoint_modes: tuple[str, ...] = ()   # what checkpoint(mode) accepts; empty: no manual checkpoint


@dataclass(frozen=True)
class StorageStats:
    db_bytes: int             # main database file(s)
    wal_bytes: int            # WAL in use now (not the file's high-water mark)
    checkpoints: int          # checkpoints completed since open (automatic and manual)


@dataclass
class EngineInfo:
    version: str
    settings: dict[str, object] = field(default_factory=dict)   # effective, read back from the engine
    # a server engine: the memory limit its server process sees (MEM applies to it, not to the runner)
    server_memory_limit_bytes: int | None = None


class Reader(Protocol):
    def entity_fetch(self, entity_key: bytes) -> int: ...          # rows returned
    def attribute_scan(self, key: str, value: str) -> int: ...
    def hold_snapshot(self, duration_s: float) -> None: ...         # a long-running read transaction
    def close(self) -> None: ...


class EngineBase:
    """Defaults shared by the adapters."""

    def prepare_block(self, block: Block) -> object:
        """Convert a block to the engine's native input (Arrow tables, column arrays). Called in the
        block feed process on an instance that is never opened, ahead of time, so conversion stays off
        the timed path; apply_block receives the (unpickled) result. Must not touch a connection."""
        return block


class Engine(Protocol):
    name: ClassVar[str]
    capabilities: ClassVar[Capabilities]

    def open(self, settings: Mapping[str, object], data_dir: Path) -> None: ...
    def create_schema(self, variant: str) -> None: ...          # "bitemporal" | "simple"
    def prepare_block(self, block: Block) -> object: ...         # off the timed path (see EngineBase)
    def apply_block(self, prepared: object) -> None: ...         # ONE transaction; the runner times it
    def reader(self) -> Reader: ...
    def checkpoint(self, mode: str) -> None: ...
    # After the load, before the clock: finish the work a bulk load leaves pending (statistics, a
    # checkpoint), so the measured phase starts from the same state however long the pause before it.
    def settle(self) -> None: ...
    def storage(self) -> StorageStats: ...                       # cheap; called by the 1 s sampler thread
    def row_counts(self) -> dict[str, int]: ...
    def iter_rows(self, table: str) -> Iterator[tuple]: ...      # every stored row, DDL column order
    def info(self) -> EngineInfo: ...
    def close(self) -> None: ...
