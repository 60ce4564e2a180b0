"""Entity shapes from the reference (experiments 5-7 and the mendoza averages)."""
from __future__ import annotations

from dataclasses import dataclass

# System attributes take the first slots of each entity's attribute counts (as arkiv indexes them).
SYSTEM_STRING_KEYS = ("$owner", "$creator", "$key")
SYSTEM_NUMERIC_KEYS = ("$expiration", "$createdAtBlock", "$sequence")
ATTRIBUTE_NAMES = 500          # the reference's attribute key pool


@dataclass(frozen=True)
class Shape:
    name: str
    string_attrs: int
    numeric_attrs: int
    payload_bytes_min: int
    payload_bytes_max: int
    long_lived_fraction: float     # the rest are ephemeral (short BTL)

    @property
    def rows_per_entity(self) -> int:
        return self.string_attrs + self.numeric_attrs + 1


SHAPES: dict[str, Shape] = {
    "minimal": Shape("minimal", 2, 1, 1024, 1024, 1.0),
    "typical": Shape("typical", 5, 3, 5 * 1024, 5 * 1024, 1.0),
    "large": Shape("large", 10, 5, 50 * 1024, 50 * 1024, 1.0),
    # mendoza: 15 str + 9 num + ~5 KB, 43% long-lived / 56% ephemeral; 1x = 800K entities, 20M rows.
    "mendoza": Shape("mendoza", 15, 9, 1024, 9 * 1024, 0.44),
}
MENDOZA_1X_ENTITIES = 800_000
