"""postgresql.conf values a scenario may set. Defaults: the reference's tuning for embedded use
(shared_buffers 256MB, checkpoint_timeout 5min, checkpoint_completion_target 0.9, max_wal_size 1GB)
and PostgreSQL's own for the rest."""
import re
from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, field_validator

from harness.engine_api import HARNESS_SIDE, engine_setting_names

_SIZE = re.compile(r"^\d+\s*(B|kB|MB|GB|TB)?$")
_DURATION = re.compile(r"^\d+\s*(us|ms|s|min|h|d)?$")


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    shared_buffers: str = "256MB"
    synchronous_commit: Literal["on", "off", "local", "remote_write", "remote_apply"] = "on"
    checkpoint_timeout: str = "5min"
    checkpoint_completion_target: float = Field(0.9, ge=0, le=1)
    max_wal_size: str = "1GB"
    min_wal_size: str = "80MB"
    # off: a checkpoint deletes the WAL segments it no longer needs rather than renaming them for reuse
    wal_recycle: Literal["on", "off"] = "on"
    wal_buffers: str = "-1"
    work_mem: str = "4MB"
    maintenance_work_mem: str = "64MB"
    effective_cache_size: str = "4GB"
    wal_compression: Literal["on", "off", "pglz", "lz4", "zstd"] = "off"
    full_page_writes: Literal["on", "off"] = "on"
    autovacuum: Literal["on", "off"] = "on"
    fsync: Literal["on", "off"] = "on"
    # on: pg_stat_wal times every WAL write and sync (a block's commit split, harness/runner/phases.py); a
    # clock read per WAL write, against a write or an fsync
    track_wal_io_timing: Literal["on", "off"] = "on"
    # a layout setting (engine.toml state_settings): a starting state is built with it. Below 100 a B-tree page
    # keeps room for inserts in the middle, so a random key splits fewer pages, for a larger index
    index_fillfactor: int = Field(90, ge=10, le=100, description="the secondary B-tree indexes' fillfactor "
                                  "(90: PostgreSQL's own default)", json_schema_extra=HARNESS_SIDE)
    bin_dir: Optional[str] = Field(None, description="PostgreSQL's bin directory; default: the newest under /usr/lib/postgresql",
                                   json_schema_extra=HARNESS_SIDE)
    os_user: str = Field("arkbench", description="the non-root user the server runs as (created if missing)",
                         json_schema_extra=HARNESS_SIDE)

    @field_validator("shared_buffers", "max_wal_size", "min_wal_size", "work_mem", "maintenance_work_mem",
                     "effective_cache_size")
    @classmethod
    def _size(cls, v: str) -> str:
        if not _SIZE.match(v):
            raise ValueError("a PostgreSQL size such as 256MB or 1GB (units B, kB, MB, GB, TB)")
        return v

    @field_validator("wal_buffers")
    @classmethod
    def _wal_buffers(cls, v: str) -> str:
        if v != "-1" and not _SIZE.match(v):
            raise ValueError("-1 (auto) or a PostgreSQL size such as 16MB")
        return v

    @field_validator("checkpoint_timeout")
    @classmethod
    def _duration(cls, v: str) -> str:
        if not _DURATION.match(v):
            raise ValueError("a PostgreSQL duration such as 5min or 300s")
        return v

    def server_conf(self) -> dict[str, str]:
        """postgresql.conf values: every setting but the harness-side ones (bin_dir, os_user)."""
        return {k: str(getattr(self, k)) for k in engine_setting_names(type(self)) if getattr(self, k) is not None}
