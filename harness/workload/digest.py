"""Order-independent digest of a table's rows: the sum of per-row 128-bit hashes (mod 2**128) and a count.
Additive, so the model updates it per row as blocks are generated, and an engine's full scan gives the
same value whatever order rows come back in."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

_MOD = 1 << 128


def row_hash(row: tuple) -> int:
    # One blake2b call over the joined encoding (the same bytes as hashing value by value): this runs
    # for every row the feed generates, so it is the generator's largest cost.
    parts: list[bytes] = []
    for v in row:
        t = type(v)
        if t is int:
            parts.append(b"I%d;" % v)
        elif t is bytes:
            parts += (b"B%d:" % len(v), v)
        elif t is str:
            b = v.encode()
            parts += (b"S%d:" % len(b), b)
        elif v is None:
            parts.append(b"N;")
        elif isinstance(v, (bytes, bytearray, memoryview)):
            b = bytes(v)
            parts += (b"B%d:" % len(b), b)
        elif isinstance(v, int):
            parts.append(b"I%d;" % v)
        elif isinstance(v, str):
            b = v.encode()
            parts += (b"S%d:" % len(b), b)
        else:
            raise TypeError(f"unsupported value type in a row: {type(v).__name__}")
    return int.from_bytes(hashlib.blake2b(b"".join(parts), digest_size=16).digest(), "big")


def row_nbytes(row: tuple) -> int:
    """Logical size of a row: its values' bytes, 8 per integer (the denominator of storage bloat)."""
    return sum(8 if type(v) is int or isinstance(v, int) else len(v) for v in row)


@dataclass
class TableDigest:
    total: int = 0
    count: int = 0
    nbytes: int = 0

    def add(self, row: tuple) -> None:
        self.total = (self.total + row_hash(row)) % _MOD
        self.count += 1
        self.nbytes += row_nbytes(row)

    def remove(self, row: tuple) -> None:
        self.total = (self.total - row_hash(row)) % _MOD
        self.count -= 1
        self.nbytes -= row_nbytes(row)

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
