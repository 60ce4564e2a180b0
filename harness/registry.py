"""Engines are discovered, not listed: every engines/<name>/engine.toml is one engine (ClickBench's
rule). The manifest says what the harness must know without importing the driver: the adapter class,
the settings model, capabilities, the SQL type mapping, the control loop, images and the extra Python
distributions. The folder name is the engine's key everywhere (scenario field, result, image tag).
harness/registry_cli.py serves the Makefile and docker/images.sh."""
from __future__ import annotations

import functools
import importlib
import re
import sys
import tomllib
from pathlib import Path
from typing import Literal, Mapping, Optional, Sequence

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from harness.engine_api import REQUIRED_METHODS, Capabilities, LoggedBlock, index_name
from harness.errors import ConfigError
from harness.validation import format_error
from harness.workload.schema import LOGICAL_TYPES, VARIANTS, generic_ddl

ENGINES_DIR = Path(importlib.import_module("engines").__path__[0])
MANIFEST = "engine.toml"
SHARED_RUNNER_DOCKERFILE = "docker/runner.Dockerfile"   # repo-relative; an engine may bring its own
NAME = re.compile(r"^[a-z][a-z0-9_]*$")                  # a scenario field and an image tag component
SIDE_DIR = "arkbench-side"    # under the Python prefix: <prefix>/arkbench-side/<engine>/<name>
SIDE_NAME = re.compile(r"^[a-z][a-z0-9_-]*$")
PINNED = re.compile(r"^[A-Za-z0-9_.-]+==[A-Za-z0-9_.+-]+$")
OBJECT_REF = re.compile(r"^[a-z_][a-z0-9_]*:[A-Za-z_][A-Za-z0-9_]*$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CapabilityOverride(_Strict):
    server: Optional[bool] = None
    wal: Optional[bool] = None
    checkpoint_modes: Optional[tuple[str, ...]] = None
    groups_blocks: Optional[bool] = None


class Image(_Strict):
    dockerfile: str = SHARED_RUNNER_DOCKERFILE   # relative to the engine folder, or the shared one
    target: Optional[str] = None


class Images(_Strict):
    runner: Image = Image()
    server: Optional[Image] = None               # a server engine's server container


class MemorySizing(_Strict):
    """[memory]: how the engine is given MEM under the `sized` policy (harness/scenario/memory.py)."""
    sized: dict[str, float] = {}      # setting -> its fraction of MEM
    cache: Optional[str] = None       # which of them is the engine's own cache (reported beside the limit)
    unit: str = "MB"                  # the engine's size syntax for whole MiB
    # the setting that sizes each reader connection's cache, where every connection keeps a cache of its own
    # (SQLite's pager): the readers divide the cache's share, so ten readers scanning hold what one would
    per_reader: Optional[str] = None

    @model_validator(mode="after")
    def _fractions(self) -> "MemorySizing":
        for k, f in self.sized.items():
            if not 0 < f <= 1:
                raise ValueError(f"sized.{k} = {f}: a fraction of MEM, > 0 and <= 1")
        if self.cache is not None and self.cache not in self.sized:
            raise ValueError(f"cache = {self.cache!r}: must be one of sized's settings ({', '.join(self.sized) or 'none'})")
        if self.per_reader is not None and self.cache is None:
            raise ValueError(f"per_reader = {self.per_reader!r}: divides the cache's share: set cache too")
        return self


class Durability(_Strict):
    """[durability]: what a commit guarantees at the engine's settings, and the settings that match a
    scenario's `durability: commit | checkpoint`."""
    setting: Optional[str] = None     # the setting that decides it; none: one guarantee whatever the settings
    select: dict[str, str] = {}       # "commit" | "checkpoint" -> the setting's value that gives it
    says: dict[str, str]              # the setting's value (or "*") -> what a commit then guarantees
    # the setting's value (or "*") -> the worst failure an acknowledged commit outlives (harness/crash):
    # power_cut (synced at commit), process_kill (in the OS's hands at commit, not synced), nothing
    survives: dict[str, Literal["power_cut", "process_kill", "nothing"]]

    @model_validator(mode="after")
    def _consistent(self) -> "Durability":
        bad = [k for k in self.select if k not in ("commit", "checkpoint")]
        if bad:
            raise ValueError(f"select.{bad[0]}: allowed keys are commit and checkpoint")
        if self.setting is None and set(self.says) != {"*"}:
            raise ValueError("says: without a setting, one entry keyed \"*\"")
        missing = [v for v in self.select.values() if v not in self.says]
        if missing:
            raise ValueError(f"says: no entry for {missing[0]!r}, a value select names")
        if set(self.survives) != set(self.says):
            raise ValueError(f"survives: one entry per entry of says ({', '.join(self.says)})")
        return self

    def _value(self, settings: Mapping[str, object]) -> str:
        return "*" if self.setting is None else str(settings.get(self.setting))

    def guarantee(self, settings: Mapping[str, object]) -> str:
        value = self._value(settings)
        return self.says.get(value, f"{self.setting}={value}: not described in engine.toml [durability]")

    def survived(self, settings: Mapping[str, object]) -> str:
        """What an acknowledged commit outlives at these settings; nothing where engine.toml does not say."""
        return self.survives.get(self._value(settings), "nothing")


class Manifest(_Strict):
    name: str = ""                               # the folder's name (filled in)
    description: str
    adapter: str = Field(description="module:Class inside the folder")
    settings: str = Field(description="module:Model inside the folder (imports no driver)")
    baseline: str = Field(description="module:Class, bench-overhead's control loop")
    requirements: tuple[str, ...] = ()           # Python distributions beyond the harness's own
    # Another build of a distribution, installed apart (pip --target side_path(engine, name)) for a setting
    # to load instead of the pinned one: e.g. sqlite's {"apsw-newest" = "apsw==3.54.1.0"}
    side_requirements: dict[str, str] = {}
    # Debian packages it needs: installed on the host by `make install` (local runtime), baked into the
    # local base image (docker/build-base.sh) when no registry answers
    debian_packages: tuple[str, ...] = ()
    capabilities: Capabilities
    # capabilities that change when a setting is set, e.g. libsql's `url` makes it a server's client
    capabilities_with: dict[str, CapabilityOverride] = {}
    types: dict[str, str] = Field(description=f"SQL type of each logical type: {', '.join(LOGICAL_TYPES)}")
    contract_settings: dict[str, dict] = {}      # extra settings the contract suite runs it with
    # settings that shape a starting state's files (harness/state): one state is built per value of them
    state_settings: tuple[str, ...] = ()
    # another engine whose starting states this one opens as its own (the same files: libSQL's are SQLite's),
    # built by that engine's bulk path and shared between their steps (tests/contract/test_shared_states.py)
    state_of: Optional[str] = None
    memory: MemorySizing = MemorySizing()
    durability: Durability
    images: Images = Images()

    @field_validator("adapter", "settings", "baseline")
    @classmethod
    def _ref(cls, v: str) -> str:
        if not OBJECT_REF.match(v):
            raise ValueError(f"'module:Name' inside the engine folder, e.g. 'adapter:MyEngine'; got {v!r}")
        return v

    @field_validator("side_requirements")
    @classmethod
    def _side(cls, v: dict[str, str]) -> dict[str, str]:
        for name, req in v.items():
            if not SIDE_NAME.match(name) or not PINNED.match(req):
                raise ValueError(f"{name} = {req!r}: a name of lowercase letters, digits, '-' and '_', and one "
                                 "distribution pinned with ==, e.g. apsw-newest = \"apsw==3.54.1.0\"")
        return v

    @field_validator("types")
    @classmethod
    def _types(cls, v: dict[str, str]) -> dict[str, str]:
        if set(v) != set(LOGICAL_TYPES):
            raise ValueError(f"one SQL type for each of {', '.join(LOGICAL_TYPES)}; got {', '.join(sorted(v)) or 'none'}")
        return v

    @model_validator(mode="after")
    def _server_image(self) -> "Manifest":
        if self.capabilities.server and self.images.server is None:
            raise ValueError("capabilities.server is true: [images.server] must name the server's image")
        return self

    def dockerfile(self, role: str) -> str:
        """Repo-relative path of the Dockerfile for `role` ("runner" or "server")."""
        image = getattr(self.images, role)
        if image.dockerfile == SHARED_RUNNER_DOCKERFILE:
            return image.dockerfile
        return str((ENGINES_DIR / self.name / image.dockerfile).relative_to(ENGINES_DIR.parent))


def load_manifest(folder: Path) -> Manifest:
    path = folder / MANIFEST
    if not NAME.match(folder.name):
        raise ConfigError(f"{folder}: an engine folder's name is its key: lowercase letters, digits, '_'")
    try:
        raw = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: not valid TOML: {e}") from None
    try:
        m = Manifest.model_validate({**raw, "name": folder.name})
    except ValidationError as e:
        raise ConfigError(format_error(path, e, Manifest)) from None
    return m


@functools.cache
def manifests() -> dict[str, Manifest]:
    found = sorted(p.parent for p in ENGINES_DIR.glob(f"*/{MANIFEST}"))
    out = {f.name: load_manifest(f) for f in found}
    for name, m in out.items():        # one hop, to an engine that builds its own
        if m.state_of is not None and (m.state_of not in out or m.state_of == name or out[m.state_of].state_of):
            raise ConfigError(f"engines/{name}/{MANIFEST}: state_of: {m.state_of!r}; allowed: another engine that "
                              f"builds its own states ({', '.join(n for n, o in out.items() if n != name and not o.state_of)})")
    return out


def names() -> tuple[str, ...]:
    return tuple(manifests())


def manifest(name: str) -> Manifest:
    try:
        return manifests()[name]
    except KeyError:
        raise ConfigError(f"unknown engine {name!r}; allowed: {', '.join(names())}") from None


def _object(name: str, ref: str):
    module, attr = ref.split(":")
    return getattr(importlib.import_module(f"engines.{name}.{module}"), attr)


def settings_model(name: str) -> type[BaseModel]:
    return _object(name, manifest(name).settings)


def engine_class(name: str):
    m = manifest(name)
    cls = _object(name, m.adapter)
    check_required_methods(m, cls)
    check_capability_methods(m, cls)
    return cls


def check_required_methods(m: Manifest, cls: type) -> None:
    """The contract's methods (engine_api.REQUIRED_METHODS), all defined, before any run relies on one."""
    missing = [n for n in REQUIRED_METHODS if not callable(getattr(cls, n, None))]
    if missing:
        raise ConfigError(f"{ENGINES_DIR / m.name / MANIFEST}: adapter: {m.adapter} lacks {', '.join(missing)}; "
                          f"an adapter defines {', '.join(REQUIRED_METHODS)} (harness/engine_api)")


# (capability, its value that needs the method, the adapter's method, what for)
CAPABILITY_METHODS = (("readers_in_process_only", False, "reader_factory", "for a reader process to open its reader"),
                      ("drop_index_frees_space", True, "drop_indexes", "to derive a state with fewer indexes"),
                      ("reindex_builds_layout", True, "rebuild_indexes", "to derive a state at other layout settings"))


def check_capability_methods(m: Manifest, cls: type) -> None:
    """A capability that the harness acts on through an adapter method (readers as processes open their reader
    through reader_factory(); a state with fewer indexes is derived through drop_indexes())."""
    for flag, needs, method, why in CAPABILITY_METHODS:
        if getattr(m.capabilities, flag) == needs and not callable(getattr(cls, method, None)):
            raise ConfigError(f"{ENGINES_DIR / m.name / MANIFEST}: capabilities.{flag}: {str(needs).lower()}, but "
                              f"{m.adapter} has no {method}() {why}; allowed: {str(not needs).lower()}, or add "
                              f"{method}() to the adapter")


def preparer(name: str, log_records: bool = False):
    """block -> what the runner hands apply_block, made ahead of the clock: the adapter's prepared form, or
    under a block log its record (engine_api.LoggedBlock). On an instance never opened: conversion only."""
    prepare = engine_class(name)().prepare_block
    return (lambda b: LoggedBlock.of(b, prepare(b))) if log_records else prepare


def baseline_loop(name: str):
    return _object(name, manifest(name).baseline)


def capabilities(name: str, settings: Mapping[str, object] | None = None) -> Capabilities:
    """The manifest's capabilities, with those of any `capabilities_with` setting the run sets."""
    m = manifest(name)
    caps = m.capabilities
    for setting, override in m.capabilities_with.items():
        if settings and settings.get(setting) is not None:
            caps = caps.model_copy(update=override.model_dump(exclude_none=True))
    return caps


def ddl(name: str, variant: str, indexes: Sequence[str] | None = None) -> str:
    """The engine's own ddl-<variant>.sql when it has one (or the engine's whose states it opens: state_of),
    else the workload's schema in its types; with `indexes`, only those secondary indexes (by name; the primary
    keys stay)."""
    if variant not in VARIANTS:
        raise ValueError(f"schema variant {variant!r}; allowed: {', '.join(VARIANTS)}")
    own = ENGINES_DIR / name / f"ddl-{variant}.sql"
    if not own.is_file() and manifest(name).state_of:
        own = ENGINES_DIR / manifest(name).state_of / f"ddl-{variant}.sql"
    text = own.read_text() if own.is_file() else generic_ddl(variant, manifest(name).types)
    if indexes is None:
        return text
    tables, index_stmts = _split(text)
    names = {index_name(s): s for s in index_stmts}
    unknown = [i for i in indexes if i not in names]
    if unknown:
        raise ConfigError(f"workload.indexes: {', '.join(unknown)} is not an index of {name}'s {variant} schema; "
                          f"its indexes: {', '.join(names)}")
    return "\n".join(tables + [s for n, s in names.items() if n in indexes])


def _split(text: str) -> tuple[list[str], list[str]]:
    tables, indexes = [], []
    text = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("--"))
    for stmt in (s.strip() for s in text.split(";")):
        if stmt:
            (indexes if re.match(r"CREATE\s+(UNIQUE\s+)?INDEX\b", stmt, re.I) else tables).append(stmt + ";")
    return tables, indexes


def index_names(name: str, variant: str) -> list[str]:
    """The secondary indexes of the engine's schema, in DDL order."""
    return [index_name(s) for s in _split(ddl(name, variant))[1]]


def ddl_split(name: str, variant: str, indexes: Sequence[str] | None = None) -> tuple[str, str]:
    """(CREATE TABLE statements, CREATE INDEX statements) of ddl(): a bulk build creates the indexes
    after the rows are in."""
    tables, index_stmts = _split(ddl(name, variant, indexes))
    return "\n".join(tables), "\n".join(index_stmts)


def side_path(engine: str, name: str) -> Path:
    """Where `make install` and the images put a side requirement: beside the interpreter's packages."""
    return Path(sys.prefix) / SIDE_DIR / engine / name


def image_name(engine: str, role: str = "runner") -> str:
    """An image's name (arkbench/<name>:<version>): the engine's for its runner, <engine>-<role> else."""
    return engine if role == "runner" else f"{engine}-{role}"


def image_builds(m: Manifest) -> list[tuple[str, str, str, str | None]]:
    """(image name, role, repo-relative Dockerfile, target) of each image the engine declares, runner
    first (a server image builds FROM it). Checked here, where images are built: the images themselves
    carry no docker/ folder."""
    out = []
    for role in ("runner", "server"):
        image = getattr(m.images, role)
        if image is None:
            continue
        if not (ENGINES_DIR.parent / m.dockerfile(role)).is_file():
            raise ConfigError(f"{ENGINES_DIR / m.name / MANIFEST}: images.{role}.dockerfile: "
                              f"{m.dockerfile(role)} does not exist")
        out.append((image_name(m.name, role), role, m.dockerfile(role), image.target))
    return out
