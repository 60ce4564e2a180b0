"""The workload's schema, owned by the workload (BenchBase's rule): tables, columns in row order, logical
types, primary keys and indexes of both variants. Engines keep only SQL text and a type mapping (their
engine.toml's [types]); `generic_ddl` renders this schema in those types when an engine folder has no
ddl-<variant>.sql of its own. Row tuples (harness/workload/block.py) follow `columns()` order."""
from __future__ import annotations

from dataclasses import dataclass

from harness.workload.block import MAX_BLOCK

TABLES = ("string_attributes", "numeric_attributes", "payloads")
VARIANTS = ("bitemporal", "simple", "current_history", "current_history_indexed")
HISTORY = "_history"        # current_history: a base table's closed versions
VERSIONS = "_versions"      # current_history: a base table's every version, as a view
LOGICAL_TYPES = ("bytes", "text", "int64")


@dataclass(frozen=True)
class Column:
    name: str
    type: str                       # one of LOGICAL_TYPES
    default: str | None = None      # SQL literal


@dataclass(frozen=True)
class Index:
    name: str
    columns: tuple[str, ...]        # "from_block DESC" keeps its direction


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[Column, ...]
    primary_key: tuple[str, ...]
    indexes: tuple[Index, ...] = ()


def _payload_columns(block_columns: tuple[Column, ...]) -> tuple[Column, ...]:
    return (Column("entity_key", "bytes"), *block_columns, Column("payload", "bytes"),
            Column("content_type", "text", "''"), Column("string_attributes", "text", "'{}'"),
            Column("numeric_attributes", "text", "'{}'"))


def _bitemporal() -> dict[str, Table]:
    span = (Column("from_block", "int64"), Column("to_block", "int64"))
    out = {}
    for t, value_type in (("string_attributes", "text"), ("numeric_attributes", "int64")):
        idx = [Index(f"{t}_entity_key_value_index", ("from_block", "to_block", "key", "value")),
               Index(f"{t}_kv_temporal_idx", ("key", "value", "from_block DESC", "to_block DESC")),
               Index(f"{t}_entity_key_index", ("from_block", "to_block", "key")),
               Index(f"{t}_delete_index", ("to_block",))]
        if t == "string_attributes":
            idx.append(Index(f"{t}_entity_kv_idx", ("entity_key", "key", "from_block DESC")))
        out[t] = Table(t, (Column("entity_key", "bytes"), *span, Column("key", "text"), Column("value", value_type)),
                       ("entity_key", "key", "from_block"), tuple(idx))
    out["payloads"] = Table("payloads", _payload_columns(span), ("entity_key", "from_block"),
                            (Index("payloads_delete_index", ("to_block",)),))
    return out


def _simple() -> dict[str, Table]:
    block = (Column("block", "int64"),)
    out = {t: Table(t, (Column("entity_key", "bytes"), *block, Column("key", "text"), Column("value", vt)),
                    ("entity_key", "key"), (Index(f"{t}_kv_index", ("key", "value")),))
           for t, vt in (("string_attributes", "text"), ("numeric_attributes", "int64"))}
    out["payloads"] = Table("payloads", _payload_columns(block), ("entity_key",),
                            (Index("payloads_block_index", ("block",)),))
    return out


def _current_history(indexed: bool = False) -> dict[str, Table]:
    """The simple schema's tables for the current versions; the closed ones in bitemporal-layout tables with
    their primary key alone (an entity's history is a prefix scan of it: no secondary index to maintain).
    indexed (current_history_indexed): the reads across entities' history get indexes of their own, as the
    bitemporal schema has them: by attribute and start block in the history tables (the newest versions of a
    type or a creator), by start block in the history and the current strings (a time window)."""
    out = _simple()
    for name, t in _bitemporal().items():
        idx = (Index(f"{name}{HISTORY}_kv_temporal_idx", ("key", "value", "from_block DESC")),
               Index(f"{name}{HISTORY}_from_block_idx", ("from_block",))) if indexed and name != "payloads" else ()
        out[name + HISTORY] = Table(name + HISTORY, t.columns, t.primary_key, idx)
    if indexed:
        s = out["string_attributes"]
        out["string_attributes"] = Table(s.name, s.columns, s.primary_key,
                                         s.indexes + (Index("string_attributes_block_index", ("block",)),))
    return out


SCHEMAS: dict[str, dict[str, Table]] = {"bitemporal": _bitemporal(), "simple": _simple(),
                                        "current_history": _current_history(),
                                        "current_history_indexed": _current_history(indexed=True)}


def tables(variant: str) -> tuple[str, ...]:
    """Every table of the variant: TABLES, then current_history's history tables."""
    return tuple(SCHEMAS[variant])


def keeps_history_apart(variant: str) -> bool:
    """A closed version moves to `<table>_history` (current_history) rather than staying in place."""
    return TABLES[0] + HISTORY in SCHEMAS[variant]


def history_row(current_row: tuple, to_block: int) -> tuple:
    """current_history: a current (simple-layout) row as its history table holds it once closed at
    `to_block`: (entity_key, from_block, to_block, ...the rest unchanged)."""
    return current_row[:2] + (to_block,) + current_row[2:]


def versions_view_sql(variant: str, table: str, int64_type: str) -> str | None:
    """current_history: the view `<table>_versions`, the bitemporal table over current ∪ history."""
    if not keeps_history_apart(variant):
        return None
    hist = SCHEMAS["bitemporal"][table]
    rest = [c.name for c in hist.columns[3:]]
    current = ", ".join(["entity_key", "block AS from_block",
                         f"CAST({MAX_BLOCK} AS {int64_type}) AS to_block", *rest])
    every = ", ".join(c.name for c in hist.columns)
    return (f"CREATE VIEW {table}{VERSIONS} AS SELECT {current} FROM {table} "
            f"UNION ALL SELECT {every} FROM {table}{HISTORY};")


def table(variant: str, name: str) -> Table:
    return SCHEMAS[variant][name]


def columns(variant: str, name: str) -> tuple[str, ...]:
    return tuple(c.name for c in SCHEMAS[variant][name].columns)


def primary_key(variant: str, name: str) -> tuple[str, ...]:
    return SCHEMAS[variant][name].primary_key


def column_type(variant: str, name: str, column: str) -> str:
    return next(c.type for c in SCHEMAS[variant][name].columns if c.name == column)


def generic_ddl(variant: str, types: dict[str, str]) -> str:
    """CREATE TABLE and CREATE INDEX statements in an engine's types (types: logical type -> SQL type)."""
    out = []
    for t in SCHEMAS[variant].values():
        cols = [f"    {c.name} {types[c.type]} NOT NULL" + (f" DEFAULT {c.default}" if c.default else "")
                for c in t.columns]
        cols.append(f"    PRIMARY KEY ({', '.join(t.primary_key)})")
        out.append(f"CREATE TABLE {t.name} (\n" + ",\n".join(cols) + "\n);")
        out += [f"CREATE INDEX {i.name} ON {t.name} ({', '.join(i.columns)});" for i in t.indexes]
    out += [v for t in TABLES if (v := versions_view_sql(variant, t, types["int64"]))]
    return "\n".join(out) + "\n"
