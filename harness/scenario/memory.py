"""MEM, resolved once for the plan: which limit binds which process, and what the engine is given of it.

The memory policy says how an engine is handed its budget:
  sized  the engine is tuned to MEM as a serious deployment would be: each setting its manifest lists under
         [memory] sized takes its fraction of MEM (SQLite's page cache, PostgreSQL's shared_buffers and
         effective_cache_size, DuckDB's memory_limit). The default whenever MEM is set.
  stock  the settings model's defaults, whatever MEM is: the engine as it comes out of the box.
A setting the scenario or SET names is never overridden. Every other part of the harness reads the limits
from the plan's MemoryPlan: one name for each, from the plan to result.json and the report."""
from __future__ import annotations

from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field

POLICIES = ("sized", "stock")
# With MEM, a server engine's client (the runner) runs outside it, under this limit of its own, recorded.
CLIENT_LIMIT_BYTES = 1 << 30


class Memory(BaseModel):
    """A scenario's `memory:` section."""
    model_config = ConfigDict(extra="forbid", frozen=True)
    policy: Literal[POLICIES] = Field("sized", description="sized: the engine's memory settings take their "  # type: ignore[valid-type]
                                                           "manifest's fractions of MEM; stock: the engine's "
                                                           "defaults whatever MEM is")


class MemoryPlan(BaseModel):
    """The limits of one run, owned by the plan."""
    model_config = ConfigDict(extra="forbid", frozen=True)
    policy: Literal[POLICIES] = "stock"  # type: ignore[valid-type]
    data_limit_bytes: Optional[int] = None      # MEM: what the database gets (embedded: the runner; server: the server)
    runner_limit_bytes: Optional[int] = None    # the runner's own: MEM when it hosts the engine, else its client limit
    engine_cache_bytes: Optional[int] = None    # the engine's own cache under the policy (its [memory] cache setting)
    sized_settings: dict[str, str] = {}         # what the policy set, by setting (explicit settings excluded)
    # The runner is outside MEM (a server engine's client), under a limit of its own. Said, not inferred from
    # the two limits: at MEM=1g they are equal, and a server at 1g shared its cgroup with its client.
    runner_is_client: bool = False


def size_value(n_bytes: int, unit: str) -> str:
    """Bytes in the engine's own size syntax, rounded down to whole MiB ('MB' is MiB for SQLite and
    PostgreSQL; DuckDB's binary unit is 'MiB')."""
    return f"{n_bytes >> 20}{unit}"


def resolve(sizing, settings_obj, data_limit_bytes: int | None, server: bool, policy: str, readers: int = 0):
    """(the engine's settings with the policy applied, its MemoryPlan). sizing: the manifest's [memory]; readers:
    the reader connections the run opens, which divide the cache's share where each keeps its own (per_reader)."""
    runner = (CLIENT_LIMIT_BYTES if server else data_limit_bytes) if data_limit_bytes else None
    plan = MemoryPlan(policy=policy if data_limit_bytes else "stock", data_limit_bytes=data_limit_bytes,
                      runner_limit_bytes=runner, runner_is_client=bool(server and data_limit_bytes))
    if plan.policy != "sized":
        return settings_obj, plan
    explicit = settings_obj.model_fields_set
    sized = {k: size_value(int(f * data_limit_bytes), sizing.unit) for k, f in sizing.sized.items()
             if k not in explicit}
    if sizing.per_reader and readers and sizing.cache in sized and sizing.per_reader not in explicit:
        share = int(sizing.sized[sizing.cache] * data_limit_bytes)
        sized[sizing.per_reader] = size_value(share // readers, sizing.unit)
    settings_obj = settings_obj.model_validate({**settings_obj.model_dump(exclude_unset=True), **sized})
    cache = int(sizing.sized[sizing.cache] * data_limit_bytes) if sizing.cache in sized else None
    return settings_obj, plan.model_copy(update={"sized_settings": sized, "engine_cache_bytes": cache})
