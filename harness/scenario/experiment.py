"""scenarios/experiments/*.yaml: the reference's seed experiments as arms of one scenario. Each arm is SET
items over the experiment's own; every arm's figure is read against the experiment's baseline arm, and, where
the reference measured the same comparison, beside the reference's ratio, whose figures the file holds with
the table they come from (never code)."""
from __future__ import annotations

from pathlib import Path
from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, model_validator

from harness import registry
from harness.errors import ConfigError
from harness.scenario.load import load_model, resolve_path

EXPERIMENTS_DIR = Path(__file__).resolve().parents[2] / "scenarios" / "experiments"
FIGURES = {"rows_per_s": "committed rows/s", "commit_p50_ms": "commit p50 ms", "commit_p99_ms": "commit p99 ms"}


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Arm(Strict):
    set: list[str] = []
    says: str = ""


class Reference(Strict):
    source: str = Field(description="the reference's table the values come from")
    setup: str = Field(description="how the reference measured them (machine, file, batch, settings)")
    figure: str = Field(description="what the values are, in the reference's words")
    baseline: str = Field(description="the arm the reference's ratios are taken against")
    values: dict[str, float] = Field(min_length=2)


class Experiment(Strict):
    description: str
    scenario: str
    engine: str = "sqlite"
    figure: Literal[tuple(FIGURES)] = "rows_per_s"  # type: ignore[valid-type]
    set: list[str] = Field([], description="SET items every arm runs with")
    baseline: str
    ladder: bool = Field(False, description="the arms are rungs, each adding to the one before: the report says "
                                            "each rung's cost and names the dearest")
    arms: dict[str, Arm] = Field(min_length=2)
    reference: Optional[Reference] = None

    @model_validator(mode="after")
    def _names(self) -> "Experiment":
        if self.baseline not in self.arms:
            raise ValueError(f"baseline: {self.baseline!r} is not one of the arms ({', '.join(self.arms)})")
        if self.engine not in registry.names():
            raise ValueError(f"engine: {self.engine!r}; known: {', '.join(registry.names())}")
        try:
            resolve_path(self.scenario)
        except ConfigError as e:
            raise ValueError(f"scenario: {e}") from None
        ref = self.reference
        if ref is not None:
            missing = [a for a in [ref.baseline, *ref.values] if a not in self.arms]
            if missing:
                raise ValueError(f"reference: {missing[0]!r} is not one of the arms ({', '.join(self.arms)})")
            if ref.baseline not in ref.values:
                raise ValueError(f"reference.values: no value for its baseline {ref.baseline!r}")
        return self


def load_experiment(path: Path) -> Experiment:
    return load_model(path, Experiment)


def experiment_files(names: list[str] | None = None) -> list[Path]:
    files = sorted(EXPERIMENTS_DIR.glob("*.yaml"))
    if not names:
        return files
    by_name = {f.stem: f for f in files}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise ConfigError(f"EXPERIMENTS: {unknown[0]!r} is not under scenarios/experiments/; known: "
                          f"{', '.join(by_name)}")
    return [by_name[n] for n in names]
