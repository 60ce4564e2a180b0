"""The workload's schema, owned by the workload (BenchBase's rule): tables, columns in row order, logical
types, primary keys and indexes of both variants. Engines keep only SQL text and a type mapping (their
engine.toml's [types]); `generic_ddl` renders this schema in those types when an engine folder has no
ddl-<variant>.sql of its own. Row tuples (harness/workload/block.py) follow `columns()` order."""
from __future__ import annotations

from dataclasses import dataclass

TABLES = ("string_attributes", "numeric_attributes", "payloads")
VARIANTS = ("bitemporal", "simple")
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


SCHEMAS: dict[str, dict[str, Table]] = {"bitemporal": _bitemporal(), "simple": _simple()}


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
    return "\n".join(out) + "\n"
