"""The base of result.json's models: immutable, no unknown field; a latency summary in ms."""
from __future__ import annotations

from typing import Optional

from pydantic import BaseModel, ConfigDict


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LatencySummary(Model):
    count: int = 0
    p50: Optional[float] = None
    p95: Optional[float] = None
    p99: Optional[float] = None
    p999: Optional[float] = None
    max: Optional[float] = None
    mean: Optional[float] = None
    stdev: Optional[float] = None
