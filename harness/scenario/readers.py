"""A scenario's read side: its readers (connections, offered rate, mix, a long reader) and how `make ceiling`
steps the read rate. Models of spec.py's scenario body, apart: the read side grew with the read benchmark."""
from __future__ import annotations

import os
from typing import Annotated, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from harness.scenario.thresholds import parse_knee_threshold


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class LongRead(Strict):
    hold_s: float = Field(gt=0)
    every_s: float = Field(gt=0)


class Readers(Strict):
    # "auto" never stays: _auto turns it into the cores this process may use (the file may say either)
    threads: Union[Annotated[int, Field(ge=0)], Literal["auto"]] = Field(
        0, description="reader connections (a process each where the engine allows it); auto: one per core the "
                       "harness may use (threads_auto says so)")
    threads_auto: bool = Field(False, description="set by threads: auto, read back in the result")
    rate_per_s: float = Field(0.0, ge=0, description="offered queries per second over all readers; 0 = "
                                                     "unthrottled: each reader asks its next query as the "
                                                     "last one ends (closed loop; the read bench's side)")
    # a mix of scenarios/mixes.yaml by name, or weights by query kind of engines/queries.yaml
    mix: Union[str, dict[str, Annotated[float, Field(ge=0)]]] = {"entity_fetch": 0.5, "attribute_scan": 0.5}
    long_read: Optional[LongRead] = None

    @model_validator(mode="before")
    @classmethod
    def _auto(cls, data):
        """threads: auto -> the cores this process may use, so the readers use the machine they run on."""
        if isinstance(data, dict) and data.get("threads") == "auto":
            data = {**data, "threads": len(os.sched_getaffinity(0)), "threads_auto": True}
        return data


class Ceiling(Strict):
    """How `make ceiling` steps the read rate (harness/walks/ceiling.py)."""
    steps_qps: list[Annotated[float, Field(gt=0)]] = Field([100, 1000, 5000], min_length=1,
                                                            description="the read rates tried first")
    max_qps: float = Field(100_000, gt=0, description="doubling stops here")
    resolution: float = Field(0.1, gt=0, le=1, description="bisect until the first failing rate is within "
                                                           "this fraction above the last passing one")
    thresholds: list[str] = Field([], description="on the knee: knee_read_qps, knee_write_p99_ms, "
                                                  "knee_read_p99_ms, e.g. 'knee_read_qps >= 1000'")

    @field_validator("thresholds")
    @classmethod
    def _knee(cls, v: list[str]) -> list[str]:
        for expr in v:
            parse_knee_threshold(expr)
        return v
