"""Read a scenario file, validate it and every profile merged onto it; errors are one line naming the
file, the field path and what is allowed (exit 2)."""
from __future__ import annotations

from pathlib import Path
from typing import TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from harness.errors import ConfigError
from harness.scenario.spec import Body, Scenario
from harness.validation import format_error

SCENARIO_DIR = Path(__file__).resolve().parents[2] / "scenarios"
OTHER_FILES = ("decision", "mixes", "matrix", "v1")      # under scenarios/ but no scenarios (harness/scenario/files.py)


M = TypeVar("M", bound=BaseModel)


def load_model(path: Path, model: type[M]) -> M:
    """A YAML file under scenarios/ that is no scenario (decision tree, matrix, experiment), validated as
    `model`; every failure one ConfigError naming the file (and the field)."""
    try:
        return model.model_validate(yaml.safe_load(path.read_text()))
    except OSError as e:
        raise ConfigError(f"{path}: cannot read: {e.strerror}") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: not valid YAML: {e}") from None
    except ValidationError as e:
        raise ConfigError(format_error(path, e, model)) from None


def resolve_path(name_or_path: str) -> Path:
    """A name under scenarios/ or a path to a YAML file."""
    p = Path(name_or_path)
    if p.suffix in (".yaml", ".yml") or p.exists():
        if not p.is_file():
            raise ConfigError(f"{p}: no such scenario file")
        return p
    candidate = SCENARIO_DIR / f"{name_or_path}.yaml"
    if not candidate.is_file():
        known = sorted(x.stem for x in SCENARIO_DIR.glob("*.yaml") if x.stem not in OTHER_FILES)
        raise ConfigError(f"unknown scenario {name_or_path!r}; known: {', '.join(known)} (or give a path to a .yaml file)")
    return candidate


def deep_merge(base: dict, overlay: dict) -> dict:
    out = dict(base)
    for k, v in overlay.items():
        out[k] = deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def load_scenario(path: Path) -> tuple[Scenario, dict]:
    """Return the validated scenario and its raw mapping (profiles are merged onto the raw mapping)."""
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark else ""
        raise ConfigError(f"{path}:{where} not valid YAML: {getattr(e, 'problem', e)}") from None
    except OSError as e:
        raise ConfigError(f"{path}: cannot read: {e.strerror}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: a scenario is a mapping of fields, got {type(raw).__name__}")
    raw.setdefault("name", path.stem)
    try:
        scenario = Scenario.model_validate(raw)
    except ValidationError as e:
        raise ConfigError(format_error(path, e, Scenario)) from None
    base = {k: v for k, v in raw.items() if k not in ("name", "default_profile", "profiles")}
    for pname, overlay in scenario.profiles.items():
        if not isinstance(overlay, dict):
            raise ConfigError(f"{path}: profiles.{pname}: a profile is a mapping of overrides")
        try:
            Body.model_validate(deep_merge(base, overlay))
        except ValidationError as e:
            raise ConfigError(format_error(path, e, Body, prefix=f"profiles.{pname}")) from None
    return scenario, raw
