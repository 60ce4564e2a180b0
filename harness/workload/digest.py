"""Order-independent digest of a table's rows: the sum of per-row 128-bit hashes (mod 2**128) and a count.
Additive, so the model updates it per row as blocks are generated, and an engine's full scan gives the
same value whatever order rows come back in."""
from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass, field

_MOD = 1 << 128


def row_hash_nbytes(row: tuple) -> tuple[int, int]:
    """The row's 128-bit hash and its logical size (values' bytes, str in characters, 8 per integer: the
    denominator of storage bloat). One pass and one blake2b call over the joined encoding (the same bytes
    as hashing value by value): this runs for every row the feed generates, its largest cost."""
    parts: list[bytes] = []
    nbytes = 0
    for v in row:
        t = type(v)
        if t is int:
            parts.append(b"I%d;" % v)
            nbytes += 8
        elif t is bytes:
            parts += (b"B%d:" % len(v), v)
            nbytes += len(v)
        elif t is str:
            b = v.encode()
            parts += (b"S%d:" % len(b), b)
            nbytes += len(v)
        elif v is None:
            parts.append(b"N;")
        elif isinstance(v, (bytes, bytearray, memoryview)):
            b = bytes(v)
            parts += (b"B%d:" % len(b), b)
            nbytes += len(b)
        elif isinstance(v, int):
            parts.append(b"I%d;" % v)
            nbytes += 8
        elif isinstance(v, str):
            b = v.encode()
            parts += (b"S%d:" % len(b), b)
            nbytes += len(v)
        else:
            raise TypeError(f"unsupported value type in a row: {type(v).__name__}")
    return int.from_bytes(hashlib.blake2b(b"".join(parts), digest_size=16).digest(), "big"), nbytes


def row_hasher(types: tuple[str, ...]):
    """row_hash_nbytes specialised for rows of known logical types (schema.LOGICAL_TYPES): the same bytes
    hashed in one formatting call instead of a loop over values, about 3x faster. The model and a state
    build hash every row they generate with it; an engine's rows (whose types vary by driver) go through
    row_hash_nbytes."""
    fmt, args, sizes = [], [], []
    for i, t in enumerate(types):
        if t == "int64":
            fmt.append("I%d;")
            args.append(f"r[{i}]")
            sizes.append("8")
        elif t == "bytes":
            fmt.append("B%d:%b")
            args += [f"len(r[{i}])", f"r[{i}]"]
            sizes.append(f"len(r[{i}])")
        elif t == "text":
            fmt.append("S%d:%b")
            args += [f"len(e{i})", f"e{i}"]
            sizes.append(f"len(r[{i}])")
        else:
            raise ValueError(f"unknown logical type {t!r}")
    encodes = "".join(f"    e{i} = r[{i}].encode()\n" for i, t in enumerate(types) if t == "text")
    src = (f"def h(r):\n{encodes}    return (int.from_bytes(blake2b(b'{''.join(fmt)}' % ({', '.join(args)},), "
           f"digest_size=16).digest(), 'big'), {' + '.join(sizes)})\n")
    scope = {"blake2b": hashlib.blake2b}
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
    """Digest engine rows: {table: iterable of rows} -> {table: 'count:sum'}."""
    sd = StateDigest()
    for name, rows in tables.items():
        t = sd.table(name)
        for row in rows:
            t.add(row)
    return sd.as_dict()
