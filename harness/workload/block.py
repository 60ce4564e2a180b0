"""A block as the engine receives it: fully built before its transaction starts, grouped per table and
per statement so each engine can ship it on its fast path (executemany, COPY, Arrow) unchanged."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

MAX_BLOCK = 9223372036854775807   # to_block of a current version, as in the reference's read queries

# Row layouts (DDL column order), per schema variant:
#   bitemporal  string/numeric: (entity_key, from_block, to_block, key, value)
#               payloads:       (entity_key, from_block, to_block, payload, content_type, string_attributes, numeric_attributes)
#   simple      string/numeric: (entity_key, block, key, value)
#               payloads:       (entity_key, block, payload, content_type, string_attributes, numeric_attributes)
# Primary keys (for reorg deletes):
#   bitemporal  string/numeric: (entity_key, key, from_block); payloads: (entity_key, from_block)
#   simple      string/numeric: (entity_key, key);             payloads: (entity_key,)


@dataclass(slots=True)
class Block:
    number: int
    kind: str                                    # "ops" | "reorg" | "load"
    variant: str                                 # "bitemporal" | "simple"
    # Applied in this order, in one transaction:
    deletes: dict[str, list[tuple]] = field(default_factory=dict)    # by primary key
    terminate_keys: list[bytes] = field(default_factory=list)        # end the current version at `number`
    inserts: dict[str, list[tuple]] = field(default_factory=dict)
    rows_written: int = 0                        # rows inserted + terminated + deleted
    ops: Counter = field(default_factory=Counter)
