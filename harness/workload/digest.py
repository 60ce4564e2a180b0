"""Order-independent digest of a table's rows: the sum of per-row 128-bit hashes (mod 2**128) and a count.
Additive, so the model updates it per row as blocks are generated, and an engine's full scan gives the
same value whatever order rows come back in."""
from __future__ import annotations

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


def row_hash(row: tuple) -> int:
    return row_hash_nbytes(row)[0]


@dataclass
class TableDigest:
    total: int = 0
    count: int = 0
    nbytes: int = 0

    def add(self, row: tuple) -> None:
        h, n = row_hash_nbytes(row)
        self.total = (self.total + h) % _MOD
        self.count += 1
        self.nbytes += n

    def remove(self, row: tuple) -> None:
        h, n = row_hash_nbytes(row)
        self.total = (self.total - h) % _MOD
        self.count -= 1
        self.nbytes -= n

    def hexdigest(self) -> str:
        return f"{self.count}:{self.total:032x}"


@dataclass
class StateDigest:
    tables: dict[str, TableDigest] = field(default_factory=dict)

    def table(self, name: str) -> TableDigest:
        return self.tables.setdefault(name, TableDigest())

    @property
    def logical_bytes(self) -> int:
        return sum(d.nbytes for d in self.tables.values())

    def as_dict(self) -> dict[str, str]:
        return {name: d.hexdigest() for name, d in sorted(self.tables.items())}


def digest_rows(tables: dict[str, "object"]) -> dict[str, str]:
    """Digest engine rows: {table: iterable of rows} -> {table: 'count:sum'}."""
    sd = StateDigest()
    for name, rows in tables.items():
        t = sd.table(name)
        for row in rows:
            t.add(row)
    return sd.as_dict()
