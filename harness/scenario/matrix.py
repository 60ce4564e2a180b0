"""scenarios/matrix.yaml: the optimisation matrix as data. Per engine, named options; each is engine settings,
settings sized as fractions of MEM, and/or scenario overrides (SET's dotted keys), turned here into the
--set items of one cell. Settings are checked against the engine's own Settings model when the file is
read, so a bad value names the file, the option and the field before anything runs."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from harness import registry
from harness.errors import ConfigError
from harness.scenario.memory import size_value
from harness.scenario.load import load_model
from harness.validation import format_error

MATRIX_FILE = Path(__file__).resolve().parents[2] / "scenarios" / "matrix.yaml"


class Option(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    says: str = Field(description="the option in a few words, for the table and the verdict")
    group: str = Field(description="options of one group are alternatives: a combination takes at most one")
    cost: int = Field(0, ge=0, description="the decision walk tries options cheapest first")
    settings: dict[str, Any] = Field({}, description="engine settings, as the scenario's engines.<engine> takes them")
    sized: dict[str, float] = Field({}, description="engine settings as a fraction of MEM, in the engine's size unit")
    set: dict[str, Any] = Field({}, description="scenario overrides by dotted key, as SET takes them")
    scale: dict[str, float] = Field({}, description="scenario numbers by dotted key, times a factor of the "
                                                    "profile's own value")
    trade_off: Optional[str] = Field(None, description="what the option gives up (history, indexes, throughput, "
                                                       "durability): reported beside its gain, never combined or "
                                                       "applied silently")
    reads: bool = Field(False, description="it changes what reads can use: the matrix also runs its read mix")

    @model_validator(mode="after")
    def _something(self) -> "Option":
        if not (self.settings or self.sized or self.set or self.scale):
            raise ValueError("an option sets something: settings, sized, set or scale")
        if any(not 0 < f <= 1 for f in self.sized.values()):
            raise ValueError("sized: each fraction of MEM is in (0, 1]")
        return self

    @property
    def logs_blocks(self) -> bool:
        """A design with a block log in front: its acknowledgement is the log's, its engine applies behind it."""
        return any(k.startswith("block_log.") for k in self.set)

    def overrides(self, engine: str, mem_bytes: int | None, plan_values: dict[str, Any]) -> list[str]:
        """The option as --set items for `engine` at MEM; plan_values: the baseline plan's by dotted key."""
        items = [f"engines.{engine}.{k}={_yaml(v)}" for k, v in self.settings.items()]
        if self.sized:
            if not mem_bytes:
                raise ConfigError(f"option {self.says!r} sizes settings from MEM: give MEM")
            unit = registry.manifest(engine).memory.unit
            items += [f"engines.{engine}.{k}={size_value(int(f * mem_bytes), unit)}" for k, f in self.sized.items()]
        for k, f in self.scale.items():
            v = plan_values.get(k)
            if not isinstance(v, (int, float)):
                raise ConfigError(f"option {self.says!r}: scale: {k} is not a number of the scenario (got {v!r})")
            items.append(f"{k}={max(1, round(v * f)) if isinstance(v, int) else v * f}")
        return items + [f"{k}={_yaml(v)}" for k, v in self.set.items()]


def flat_values(d: dict, prefix: str = "") -> dict:
    """A plan's values by dotted key (workload.rows_per_block), as an option's `scale` names them."""
    out = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        out.update(flat_values(v, key + ".") if isinstance(v, dict) else {key: v})
    return out


def _yaml(v: Any) -> str:
    return json.dumps(v)     # JSON is YAML's flow style; a string quoted, so "OFF" stays a string


class EngineMatrix(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    reads: str = Field("read_mix_a", description="the read scenario run beside options with reads: true")
    options: dict[str, Option]


class CellRule(BaseModel):
    """How a matrix measures each of its cells: the same starting database, aged once; a fixed window of blocks
    judged on service p50 (the p99 of 20 blocks is their max); the rows checked by their counts."""
    model_config = ConfigDict(extra="forbid", frozen=True)
    warmup_blocks: Optional[int] = Field(10, ge=0, description="the warm-up in blocks at the scenario's cadence "
                                                              "(none: the profile's warmup_s)")
    measure_blocks: Optional[int] = Field(20, gt=0, description="the measured phase in blocks at the scenario's "
                                                               "cadence (none: the profile's measure_s)")
    settle: bool = Field(True, description="an option's cell ends once its service p50 can no longer beat the "
                                           "baseline's less the noise (it did not help); a cell that may help runs "
                                           "every block")
    settle_budget: Optional[float] = Field(3.0, gt=1, description="with settle, an option's cell also ends once its "
                                           "clock (warm-up included) has run this many times the baseline's with "
                                           "every measured block over that limit (none: never)")
    aged_state: bool = Field(True, description="the cells clone one aged state per layout (load.aged_state)")
    integrity: Literal["model", "counts"] = Field("counts", description="counts: each table's rows against the "
                                                                       "model's count (model: every row)")
    index_residency: bool = Field(False, description="residency per index after the clock (io.index_residency): "
                                                     "it reads the whole file once, half a minute at 1x")

    def overrides(self, block_interval_ms: float, duration_given: bool) -> list[str]:
        """The rule as --set items for every cell of the matrix (DURATION, where given, keeps its seconds)."""
        out = [f"load.aged_state={_yaml(self.aged_state)}", f"integrity={self.integrity}",
               f"io.index_residency={_yaml(self.index_residency)}"]
        if self.warmup_blocks is not None and block_interval_ms:
            out.append(f"phases.warmup_s={self.warmup_blocks * block_interval_ms / 1000:g}")
        if self.measure_blocks and block_interval_ms and not duration_given:
            out.append(f"phases.measure_s={self.measure_blocks * block_interval_ms / 1000:g}")
        return out


class Matrix(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    description: str = ""
    cells: CellRule = CellRule()
    noise: float = Field(0.1, gt=0, lt=1, description="a p99 change smaller than this share of the baseline's "
                                                      "is noise: the option neither helped nor hurt")
    engines: dict[str, EngineMatrix]


def load_matrix(path: Path = MATRIX_FILE) -> Matrix:
    m = load_model(path, Matrix)
    for engine, em in m.engines.items():
        if engine not in registry.names():
            raise ConfigError(f"{path}: engines.{engine}: no such engine; known: {', '.join(registry.names())}")
        model = registry.settings_model(engine)
        for name, opt in em.options.items():
            unknown = [k for k in opt.sized if k not in model.model_fields]
            if unknown:
                raise ConfigError(f"{path}: engines.{engine}.options.{name}.sized: {unknown[0]!r} is not a "
                                  f"{engine} setting; allowed: {', '.join(model.model_fields)}")
            try:
                model.model_validate({**opt.settings, **{k: "1MB" for k in opt.sized}})
            except ValidationError as e:
                raise ConfigError(format_error(path, e, model, prefix=f"engines.{engine}.options.{name}.settings")) \
                    from None
    return m
