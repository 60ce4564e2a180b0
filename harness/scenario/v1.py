"""scenarios/v1.yaml: the reference's V1 go/no-go as data (harness/walks/v1.py walks it). The write rates, the read
rates the ceiling search starts from, the criteria every step is judged on, what "go" needs, and per profile
the share of the 621K entities loaded."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from harness.reads.queries import mixes
from harness.scenario.load import load_model, load_scenario, resolve_path
from harness.scenario.spec import ThresholdExprs
from harness.workload.dc_tables import NODES_PER_DC, WORKLOADS_PER_NODE
from harness.workload.shapes import MENDOZA_1X_ENTITIES

V1_FILE = Path(__file__).resolve().parents[2] / "scenarios" / "v1.yaml"
MENDOZA_SHARE = 21_000 / 621_000     # of the entities: mendoza's beside the DC seed
DATA_CENTRES = 1                     # V1's Data Center: its seed is one DC's nodes and workloads


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Go(Strict):
    write_rows_per_s: float = Field(gt=0)
    read_qps: float = Field(gt=0)


class V1Profile(Strict):
    share: float = Field(gt=0, le=1, description="of the 621K entities, for smaller profiles")


Rates = Annotated[list[Annotated[float, Field(gt=0)]], Field(min_length=1)]


class V1(Strict):
    description: str = ""
    scenario: str = Field(description="the scenario whose DC model, read mix and profiles the steps run")
    mix: Optional[str] = Field(None, description="the read mix of scenarios/mixes.yaml the steps ask instead "
                                                 "of the scenario's")
    entities: int = Field(gt=0, description="the DC seed and mendoza's entities at share 1")
    write_rows_per_s: Rates
    read_qps: Rates
    max_read_qps: float = Field(gt=0)
    criteria: ThresholdExprs = Field(min_length=1)
    go: Go
    profiles: dict[str, V1Profile] = Field(min_length=1)

    @field_validator("mix")
    @classmethod
    def _mix_known(cls, v: str | None) -> str | None:
        if v is not None and v not in mixes():
            raise ValueError(f"unknown mix {v!r}; scenarios/mixes.yaml has {', '.join(sorted(mixes()))}")
        return v

    @field_validator("write_rows_per_s", "read_qps")
    @classmethod
    def _ascending(cls, v: list[float]) -> list[float]:
        if v != sorted(set(v)):
            raise ValueError("rates go up, each once")
        return v

    @model_validator(mode="after")
    def _scenario(self) -> "V1":
        sc, _ = load_scenario(resolve_path(self.scenario))
        if sc.workload.dc is None or not sc.readers.threads:
            raise ValueError(f"scenario: {self.scenario} must have the Data Center model (workload.dc) and readers")
        missing = [p for p in self.profiles if p not in sc.profiles]
        if missing:
            raise ValueError(f"profiles: {', '.join(missing)} not among {self.scenario}'s ({', '.join(sc.profiles)})")
        return self

    def dc_entities(self, share: float) -> tuple[float, float]:
        """(DC fraction, mendoza scale) that load `share` of the entities: DATA_CENTRES DCs of 600K hold most of
        them, the rest are mendoza's (1x is 800K)."""
        dcs = DATA_CENTRES * NODES_PER_DC * (1 + WORKLOADS_PER_NODE)
        return (share * self.entities * (1 - MENDOZA_SHARE) / dcs,
                share * self.entities * MENDOZA_SHARE / MENDOZA_1X_ENTITIES)


def load_v1(path: Path = V1_FILE) -> V1:
    return load_model(path, V1)
