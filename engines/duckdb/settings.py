"""DuckDB settings a scenario may set."""
import re
from typing import Literal, Union

from pydantic import BaseModel, ConfigDict, Field, field_validator


_SIZE = re.compile(r"^\d+(\.\d+)?\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)$", re.IGNORECASE)


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    # "auto": 75% of the memory limit the runner sees (DuckDB's own default is 80% of host RAM,
    # which ignores a cgroup limit); else a DuckDB size such as "2GB".
    memory_limit: str = "auto"
    threads: Union[int, Literal["auto"]] = Field("auto", description="'auto' = the CPUs this process may use")
    checkpoint_threshold: str = "16MB"
    # false lets DuckDB write and scan in any order: less memory and more parallelism for bulk work
    preserve_insertion_order: bool = True

    @field_validator("memory_limit", "checkpoint_threshold")
    @classmethod
    def _size(cls, v: str, info) -> str:
        if (v == "auto" and info.field_name == "memory_limit") or _SIZE.match(v):
            return v
        raise ValueError("a size such as 512MB or 2GB" + (", or auto" if info.field_name == "memory_limit" else ""))

    @field_validator("threads")
    @classmethod
    def _threads(cls, v):
        if v != "auto" and v < 1:
            raise ValueError("threads must be >= 1 or auto")
        return v
