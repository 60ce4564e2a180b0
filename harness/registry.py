"""One lowercase key names an engine everywhere: engines/<name>/, this registry, compose service, result field.
Engine modules are imported lazily so validating a scenario never loads a database driver."""
from __future__ import annotations

import importlib

from pydantic import BaseModel

ENGINE_NAMES: tuple[str, ...] = ("sqlite", "libsql", "postgres", "duckdb", "turso")


def settings_model(name: str) -> type[BaseModel]:
    return importlib.import_module(f"engines.{name}.settings").Settings


def engine_class(name: str):
    return importlib.import_module(f"engines.{name}.adapter").ENGINE


def capabilities(name: str):
    """Capabilities live beside the settings so the orchestrator never needs the driver."""
    return importlib.import_module(f"engines.{name}.settings").CAPABILITIES
