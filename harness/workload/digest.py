"""Order-independent digest of a table's rows: the sum of per-row 128-bit hashes (mod 2**128) and a count.
Additive, so the model updates it per row as blocks are generated, and an engine's full scan gives the
same value whatever order rows come back in.

A row's hash is XXH3-128 over its marshal encoding at format version 2: C all the way (0.7 µs a row, 5x
the Python-formatted blake2b it replaced), and as strict as the values: int, float, bytes, str and None
encode apart, ints exactly (hash(-1) == hash(-2) rules out Python's own), and version 2 writes neither
references nor interning, so the same values give the same bytes in any process. A bytes-like value
(memoryview, bytearray) encodes as bytes. The integrity check hashes every row of a state with it, and
the model every row it generates."""
from __future__ import annotations

import functools
import marshal
from dataclasses import dataclass, field

from xxhash import xxh3_128_intdigest

_MOD = 1 << 128
_MARSHAL_VERSION = 2      # the last without references or interned strings: bytes fixed by the values alone


def _plain(v):
    """A value marshal refuses, as the logical type it stands for (an int or str subclass, a buffer)."""
    if isinstance(v, int):
        return int(v)
    if isinstance(v, str):
        return str(v)
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v)
    raise TypeError(f"unsupported value type in a row: {type(v).__name__}")


def row_hash(row: tuple) -> int:
    try:
        return xxh3_128_intdigest(marshal.dumps(row, _MARSHAL_VERSION))
    except ValueError:          # unmarshallable: a driver's own int or str type
        return xxh3_128_intdigest(marshal.dumps(tuple(_plain(v) for v in row), _MARSHAL_VERSION))


def row_nbytes(row: tuple) -> int:
    """The row's logical size (values' bytes, str in characters, 8 per integer): storage bloat's denominator."""
    n = 0
    for v in row:
        if isinstance(v, int):
            n += 8
        elif v is not None:
            n += len(v)
    return n


def row_hash_nbytes(row: tuple) -> tuple[int, int]:
    return row_hash(row), row_nbytes(row)


def row_hasher(types: tuple[str, ...]):
    """row_hash_nbytes for rows of known logical types (schema.LOGICAL_TYPES), the size summed without a
    loop: the model and a state build run it for every row they generate."""
    sizes = []
    for i, t in enumerate(types):
        if t == "int64":
            sizes.append("8")
        elif t in ("bytes", "text"):
            sizes.append(f"len(r[{i}])")
        else:
            raise ValueError(f"unknown logical type {t!r}")
    src = f"def h(r):\n    return xxh(dumps(r, {_MARSHAL_VERSION})), {' + '.join(sizes)}\n"
    scope = {"xxh": xxh3_128_intdigest, "dumps": marshal.dumps}
    exec(src, scope)        # generated from the types alone: no input reaches it
    return scope["h"]


@dataclass
class TableDigest:
    total: int = 0
    count: int = 0
    nbytes: int = 0
    nbytes_added: int = 0      # never decreases: the bytes of every row written so far (a rewrite too)
    hasher: object = field(default=row_hash_nbytes, repr=False, compare=False)

    def add(self, row: tuple) -> None:
        h, n = self.hasher(row)
        self.total = (self.total + h) % _MOD
        self.count += 1
        self.nbytes += n
        self.nbytes_added += n

    def _hash_sum(self, rows) -> tuple[int, int]:
        """The rows' hash sum and logical bytes, in one loop of locals (the model's per-row cost)."""
        hasher, total, nbytes = self.hasher, 0, 0
        for row in rows:
            h, n = hasher(row)
            total += h
            nbytes += n
        return total, nbytes

    def add_many(self, rows) -> None:
        total, nbytes = self._hash_sum(rows)
        self.total = (self.total + total) % _MOD
        self.count += len(rows)
        self.nbytes += nbytes
        self.nbytes_added += nbytes

    def remove_many(self, rows) -> None:
        total, nbytes = self._hash_sum(rows)
        self.total = (self.total - total) % _MOD
        self.count -= len(rows)
        self.nbytes -= nbytes

    def remove(self, row: tuple) -> None:
        h, n = self.hasher(row)
        self.total = (self.total - h) % _MOD
        self.count -= 1
        self.nbytes -= n

    def merge(self, total: int, count: int, nbytes: int) -> None:
        """Add another set of rows' digest (their hash sum, count and logical bytes)."""
        self.total = (self.total + total) % _MOD
        self.count += count
        self.nbytes += nbytes

    def hexdigest(self) -> str:
        return f"{self.count}:{self.total:032x}"


@dataclass
class StateDigest:
    tables: dict[str, TableDigest] = field(default_factory=dict)
    variant: str | None = None        # rows of the workload's schema: hashed by row_hasher

    def __post_init__(self) -> None:
        if self.variant:         # every table of the schema, even one no row has reached yet (a history table)
            from harness.workload import schema
            for name in schema.tables(self.variant):
                self.table(name)

    def table(self, name: str) -> TableDigest:
        d = self.tables.get(name)
        if d is None:
            d = self.tables[name] = TableDigest(hasher=table_hasher(self.variant, name) if self.variant else row_hash_nbytes)
        return d

    @property
    def logical_bytes(self) -> int:
        return sum(d.nbytes for d in self.tables.values())

    @property
    def logical_bytes_added(self) -> int:
        return sum(d.nbytes_added for d in self.tables.values())

    def as_dict(self) -> dict[str, str]:
        return {name: d.hexdigest() for name, d in sorted(self.tables.items())}


@functools.cache
def table_hasher(variant: str, table: str):
    from harness.workload import schema
    return row_hasher(tuple(c.type for c in schema.table(variant, table).columns))


def digest_rows(tables: dict[str, "object"]) -> dict[str, str]:
    """Digest engine rows: {table: iterable of rows} -> {table: 'count:sum'}. Hashes only (the logical
    size is the model's): this loop is the integrity check's own cost beside the engine's scan."""
    out = {}
    for name, rows in sorted(tables.items()):
        total = count = 0
        for row in rows:
            total += row_hash(row)
            count += 1
        out[name] = TableDigest(total=total % _MOD, count=count).hexdigest()
    return out
