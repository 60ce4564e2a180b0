"""Turso (the Rust rewrite of SQLite, pyturso) settings. Pragmas it accepts but ignores are rejected
here, so no scenario silently runs without a setting it asked for."""
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from harness.units import parse_size_bytes

_IGNORED = {
    "wal_autocheckpoint": "turso ignores the wal_autocheckpoint pragma (it checkpoints on its own schedule)",
    "mmap_size": "turso ignores the mmap_size pragma (it does not memory-map the database)",
}


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    journal_mode: Literal["WAL", "mvcc"] = "WAL"     # mvcc: BEGIN CONCURRENT transactions
    synchronous: Literal["OFF", "NORMAL", "FULL"] = "NORMAL"
    cache_size: int | str = -2000
    busy_timeout: int = Field(5000, ge=0, description="ms")

    @model_validator(mode="before")
    @classmethod
    def _reject_ignored(cls, data):
        if isinstance(data, dict):
            for k, why in _IGNORED.items():
                if k in data:
                    raise ValueError(f"{k}: {why}; remove it from engines.turso")
        return data

    @field_validator("cache_size")
    @classmethod
    def _cache_size(cls, v: int | str) -> int:
        return v if isinstance(v, int) else -(parse_size_bytes(v) // 1024)
