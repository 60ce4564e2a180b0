"""Deterministic entity versions: every row of a version derives from (seed, entity id, nonces), so the
model keeps a few integers per live entity instead of its rows, and can rebuild any version's rows."""
from __future__ import annotations

import hashlib
import json

from harness.workload import vocabulary
from harness.workload.block import MAX_BLOCK
from harness.workload.shapes import ATTRIBUTE_NAMES, SYSTEM_NUMERIC_KEYS, SYSTEM_STRING_KEYS, Shape

VALUES_PER_KEY = 64          # small vocabulary per string attribute so attribute scans find rows
CONTENT_TYPES = ("application/json", "application/octet-stream", "text/plain", "image/png")
_USER_NAMES = [f"attr_{i:03d}" for i in range(ATTRIBUTE_NAMES)]
_NAME_DRAWS = 64     # 2-byte draws for distinct names: a mendoza entity needs 18 of 500, and 64 draws
                     # come up short practically never (it would only mean fewer attributes)


def entity_key(seed: int, entity_id: int) -> bytes:
    return hashlib.blake2b(f"{seed}:{entity_id}".encode(), digest_size=32).digest()


def owner_address(owner_id: int) -> str:
    return f"0x{owner_id:040x}"


def _stream(seed: int, entity_id: int, nonce: int, stream: int, nbytes: int) -> bytes:
    """Deterministic bytes for one version's names (stream 0) or values (stream 1): one SHAKE call per
    stream, not a seeded PRNG per entity (5x cheaper; a state build generates 20M rows per 1x)."""
    return hashlib.shake_128(b"%d:%d:%d:%d" % (seed, entity_id, nonce, stream)).digest(nbytes)


class EntityState:
    """The current version of a live entity. A version's rows are a pure function of these fields."""

    __slots__ = ("id", "key", "from_block", "names_nonce", "value_nonce", "owner", "creator",
                 "expiration", "created_at")

    def __init__(self, entity_id: int, key: bytes, from_block: int, names_nonce: int, value_nonce: int,
                 owner: int, expiration: int) -> None:
        self.id, self.key, self.from_block = entity_id, key, from_block
        self.names_nonce, self.value_nonce = names_nonce, value_nonce
        self.owner = self.creator = owner
        self.expiration, self.created_at = expiration, from_block

    def copy(self) -> "EntityState":
        c = EntityState.__new__(EntityState)
        for s in EntityState.__slots__:
            setattr(c, s, getattr(self, s))
        return c


def version_rows(st: EntityState, shape: Shape, seed: int, variant: str,
                 to_block: int = MAX_BLOCK) -> dict[str, list[tuple]]:
    """All rows of the entity's current version, in the variant's DDL column order."""
    n_sys_s = min(len(SYSTEM_STRING_KEYS), shape.string_attrs)
    n_sys_n = min(len(SYSTEM_NUMERIC_KEYS), shape.numeric_attrs)
    n_s_user, n_n_user = shape.string_attrs - n_sys_s, shape.numeric_attrs - n_sys_n
    # names: 2 bytes per draw of a distinct attribute name (duplicates skipped), then payload length
    # and content type
    names = _stream(seed, st.id, st.names_nonce, 0, 2 * _NAME_DRAWS + 5)
    tail = int.from_bytes(names[-5:], "big")
    payload_len = shape.payload_bytes_min + tail % (shape.payload_bytes_max - shape.payload_bytes_min + 1)
    content_type = CONTENT_TYPES[(tail >> 32) % len(CONTENT_TYPES)]
    # values: the application attributes' bytes, 1 byte per generic string value, 5 per generic
    # numeric value, then the payload. The application attributes take the first user slots.
    vals = _stream(seed, st.id, st.value_nonce, 1, vocabulary.APP_BYTES + n_s_user + 5 * n_n_user + payload_len)
    app_s, app_n = vocabulary.app_attributes(st.id, st.key, vals[:vocabulary.APP_BYTES])
    app_s, app_n = app_s[:n_s_user], app_n[:n_n_user]
    n_s_gen, n_n_gen = n_s_user - len(app_s), n_n_user - len(app_n)
    user_keys, seen = [], set()
    for i in range(0, 2 * _NAME_DRAWS, 2):
        if len(user_keys) == n_s_gen + n_n_gen:
            break
        k = _USER_NAMES[(names[i] << 8 | names[i + 1]) % ATTRIBUTE_NAMES]
        if k not in seen:
            seen.add(k)
            user_keys.append(k)
    s_user, n_user = user_keys[:n_s_gen], user_keys[n_s_gen:]
    vals = vals[vocabulary.APP_BYTES:]
    n_at = n_s_user + 5 * n_n_user

    sys_s = {"$owner": owner_address(st.owner), "$creator": owner_address(st.creator),
             "$key": "0x" + st.key.hex()}
    sys_n = {"$expiration": st.expiration, "$createdAtBlock": st.created_at, "$sequence": st.id}
    strings = [(k, sys_s[k]) for k in SYSTEM_STRING_KEYS[:n_sys_s]] + app_s
    strings += [(k, f"v{vals[i] % VALUES_PER_KEY}") for i, k in enumerate(s_user)]
    numerics = [(k, sys_n[k]) for k in SYSTEM_NUMERIC_KEYS[:n_sys_n]] + app_n
    numerics += [(k, int.from_bytes(vals[n_s_user + 5 * i:n_s_user + 5 * i + 5], "big")) for i, k in enumerate(n_user)]
    return layout_rows(st.key, st.from_block, to_block, strings, numerics, vals[n_at:], content_type, variant)


def layout_rows(ek: bytes, fb: int, to_block: int, strings: list[tuple[str, str]], numerics: list[tuple[str, int]],
                payload: bytes, content_type: str, variant: str) -> dict[str, list[tuple]]:
    """One version's attributes and payload as rows of the variant's tables, in DDL column order; the
    payload row carries the attributes as JSON, as arkiv stores them."""
    s_json = json.dumps(dict(strings), separators=(",", ":"), sort_keys=True)
    n_json = json.dumps(dict(numerics), separators=(",", ":"), sort_keys=True)
    if variant == "bitemporal":
        return {
            "string_attributes": [(ek, fb, to_block, k, v) for k, v in strings],
            "numeric_attributes": [(ek, fb, to_block, k, v) for k, v in numerics],
            "payloads": [(ek, fb, to_block, payload, content_type, s_json, n_json)],
        }
    return {
        "string_attributes": [(ek, fb, k, v) for k, v in strings],
        "numeric_attributes": [(ek, fb, k, v) for k, v in numerics],
        "payloads": [(ek, fb, payload, content_type, s_json, n_json)],
    }


def primary_keys(rows: dict[str, list[tuple]], variant: str) -> dict[str, list[tuple]]:
    """The primary keys of `rows` (see block.py for the layouts)."""
    if variant == "bitemporal":
        return {"string_attributes": [(r[0], r[3], r[1]) for r in rows["string_attributes"]],
                "numeric_attributes": [(r[0], r[3], r[1]) for r in rows["numeric_attributes"]],
                "payloads": [(r[0], r[1]) for r in rows["payloads"]]}
    return {"string_attributes": [(r[0], r[2]) for r in rows["string_attributes"]],
            "numeric_attributes": [(r[0], r[2]) for r in rows["numeric_attributes"]],
            "payloads": [(r[0],) for r in rows["payloads"]]}
