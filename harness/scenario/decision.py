"""scenarios/decision.yaml: the reference's decision tree and its criteria, validated like a scenario
(one-line errors naming the file and the field). harness/verdict.py walks it."""
from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import Field, ValidationError, field_validator

from harness import registry
from harness.errors import ConfigError
from harness.scenario.load import resolve_path
from harness.validation import format_error
from harness.scenario.model import Strict, ThresholdExprs

DECISION_FILE = Path(__file__).resolve().parents[2] / "scenarios" / "decision.yaml"


class Target(Strict):
    scale: float = Field(gt=0)
    measure_s: float = Field(gt=0)


class Criterion(Strict):
    name: str
    scenario: str
    thresholds: ThresholdExprs = Field(min_length=1)
    target: Target

    @field_validator("scenario")
    @classmethod
    def _scenario(cls, v: str) -> str:
        try:
            resolve_path(v)
        except ConfigError as e:
            raise ValueError(str(e)) from None
        return v


class Step(Strict):
    engine: str
    decision: str

    @field_validator("engine")
    @classmethod
    def _engine(cls, v: str) -> str:
        if v not in registry.names():
            raise ValueError(f"unknown engine {v!r}; allowed: {', '.join(registry.names())}")
        return v


class DecisionTree(Strict):
    description: str = ""
    steps: list[Step] = Field(min_length=1)
    otherwise: str
    criteria: list[Criterion] = Field(min_length=1)
    mems: dict[str, list[str]] = {}


def load_decision(path: Path = DECISION_FILE) -> DecisionTree:
    try:
        raw = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as e:
        raise ConfigError(f"{path}: cannot read: {e}") from None
    try:
        return DecisionTree.model_validate(raw)
    except ValidationError as e:
        raise ConfigError(format_error(path, e, DecisionTree)) from None


