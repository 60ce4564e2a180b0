"""Read query kinds (engines/queries.yaml, an engine's own queries.yaml over it) and read mixes
(scenarios/mixes.yaml), validated, then resolved for one engine, schema variant and placeholder style:
the readers only bind parameters and run statements."""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Literal, Optional

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from harness.errors import ConfigError
from harness.workload.block import MAX_BLOCK
from harness.workload.schema import VARIANTS, keeps_history_apart

ROOT = Path(__file__).resolve().parents[2]
GENERIC_FILE = ROOT / "engines" / "queries.yaml"
MIXES_FILE = ROOT / "scenarios" / "mixes.yaml"
# current_history answers a bitemporal-only kind from its <table>_versions views (current ∪ history)
_BITEMPORAL_CURRENT = f"AND to_block = {MAX_BLOCK}"
_BASE_TABLE = re.compile(r"\b(FROM|JOIN)\s+(string_attributes|numeric_attributes|payloads)\b")
# what a live entity of the sample offers (harness/reads/params.py); a mix's args may fix any of them
PARAMS = ("key", "block", "block_end", "creator", "type", "status", "proposal", "chunk", "gpu_below",
          "attr", "attr_value")
# what a checked kind draws from the DC model's ids instead (harness/reads/dc_check.py)
DC_PARAMS = ("dc_id", "node_id", "vm_type", "min_cpu", "min_ram", "back", "min_hours", "workload_id", "first_node",
             "last_node")
CHECKS = ("nodes_in_dc", "available_gpu_nodes", "workloads_on_node", "pending_workloads", "matching_nodes",
          "node_status_at", "candidate_nodes", "node_workload_ids", "workload_status_node", "node_status_since")
_PARAM = re.compile(r":([a-z_]+)")


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Kind(Strict):
    about: str = ""
    sql: list[str]
    variants: tuple[str, ...] = VARIANTS
    expect_rows: bool = True
    check: Optional[Literal[CHECKS]] = None   # type: ignore[valid-type]  # the model's answer it is checked against
    history_sql: Optional[list[str]] = Field(None, description="on current_history, instead of the tables "
                                             "rewritten to their versions views: what is current from the "
                                             "current tables, what needs history from <table>_versions")

    @field_validator("history_sql", mode="before")
    @classmethod
    def _one_or_many_history(cls, v):
        return [v] if isinstance(v, str) else v

    def runs_on(self, variant: str) -> bool:
        """A bitemporal kind runs on current_history too, over its versions views."""
        return variant in self.variants or (keeps_history_apart(variant) and "bitemporal" in self.variants)

    def statements_for(self, variant: str) -> tuple[list[str], str]:
        """(the statements, the text {current} stands for) on `variant`."""
        if variant == "bitemporal":
            return self.sql, _BITEMPORAL_CURRENT
        if variant in self.variants:
            return self.sql, ""
        if self.history_sql:           # its {current} is on the current tables
            return self.history_sql, ""
        # a versions view holds the current versions at MAX_BLOCK, as the bitemporal table does
        return [_BASE_TABLE.sub(r"\1 \2_versions", s) for s in self.sql], _BITEMPORAL_CURRENT

    @field_validator("sql", mode="before")
    @classmethod
    def _one_or_many(cls, v):
        return [v] if isinstance(v, str) else v

    @model_validator(mode="after")
    def _params_known(self) -> "Kind":
        allowed = DC_PARAMS if self.check else PARAMS
        for stmt in self.sql + (self.history_sql or []):
            unknown = sorted(set(_PARAM.findall(stmt)) - set(allowed))
            if unknown:
                raise ValueError(f"unknown parameter(s) {', '.join(':' + u for u in unknown)} in {stmt!r}; "
                                 f"allowed{' in a checked kind' if self.check else ''}: {', '.join(allowed)}")
        if self.check and (len(self.sql) != 1 or len(self.history_sql or [""]) != 1):
            raise ValueError(f"a checked kind ({self.check}) is one statement answering (block seen, answer)")
        return self


class KindsFile(Strict):
    kinds: dict[str, Kind]


class MixEntry(Strict):
    kind: str
    weight: float = Field(gt=0)
    name: Optional[str] = None
    args: dict[str, str | int] = {}

    @field_validator("args")
    @classmethod
    def _args_known(cls, v: dict) -> dict:
        unknown = sorted(set(v) - set(PARAMS) - set(DC_PARAMS))
        if unknown:
            raise ValueError(f"unknown arg(s) {', '.join(unknown)}; allowed: {', '.join(PARAMS + DC_PARAMS)}")
        return v

    @property
    def label(self) -> str:
        return self.name or self.kind


class Mix(Strict):
    about: str = ""
    queries: list[MixEntry] = Field(min_length=1)


class MixesFile(Strict):
    mixes: dict[str, Mix]


@dataclass(frozen=True)
class Statement:
    sql: str                     # in the engine's placeholder style
    params: tuple[str, ...]      # the parameter behind each placeholder, in order


@dataclass(frozen=True)
class Query:
    """One entry of a mix, ready to run: its statements, where its parameters come from, its weight."""
    name: str
    kind: str
    weight: float
    statements: tuple[Statement, ...]
    args: dict
    drawn: frozenset[str]        # the parameters a live entity of the sample must offer (or the DC draw)
    expect_rows: bool
    check: str | None = None     # checked against the DC model's answer (reads/dc_check.py)


def _load(path: Path, model):
    try:
        raw = yaml.safe_load(path.read_text())
        return model.model_validate(raw)
    except FileNotFoundError:
        raise ConfigError(f"{path}: not found") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: not valid YAML: {e}") from None
    except ValidationError as e:
        where = "; ".join(f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in e.errors())
        raise ConfigError(f"{path}: {where}") from None


@lru_cache(maxsize=None)
def kinds_for(engine: str) -> dict[str, Kind]:
    """The generic kinds, each replaced by the engine folder's own where it has one."""
    kinds = dict(_load(GENERIC_FILE, KindsFile).kinds)
    own = ROOT / "engines" / engine / "queries.yaml"
    if own.exists():
        extra = _load(own, KindsFile).kinds
        unknown = sorted(set(extra) - set(kinds))
        if unknown:
            raise ConfigError(f"{own}: kinds {', '.join(unknown)} are not in {GENERIC_FILE} (an engine overrides "
                              f"a generic kind, it does not add one)")
        kinds.update(extra)
    return kinds


def load_mixes(path: Path = MIXES_FILE) -> dict[str, Mix]:
    return _load(path, MixesFile).mixes


@lru_cache(maxsize=None)
def mixes() -> dict[str, Mix]:
    return load_mixes()


def mix_entries(mix: str | dict[str, float], where: str = "readers.mix") -> list[MixEntry]:
    """A named mix of scenarios/mixes.yaml, or weights by kind."""
    if isinstance(mix, str):
        known = mixes()
        if mix not in known:
            raise ConfigError(f"{where}: unknown mix {mix!r}; {MIXES_FILE.name} has {', '.join(sorted(known))}")
        return list(known[mix].queries)
    return [MixEntry(kind=k, weight=w) for k, w in mix.items() if w > 0]


def check_mix(mix: str | dict[str, float], variant: str, where: str = "readers.mix") -> None:
    """Every kind the mix names exists (generically) and runs on the variant: a scenario error otherwise."""
    check_entries(mix_entries(mix, where), variant, where)


def check_entries(entries: list[MixEntry], variant: str, where: str) -> None:
    kinds = kinds_for("")
    for e in entries:
        if e.kind not in kinds:
            raise ConfigError(f"{where}: unknown query kind {e.kind!r}; {GENERIC_FILE.name} has "
                              f"{', '.join(sorted(kinds))}")
        if not kinds[e.kind].runs_on(variant):
            raise ConfigError(f"{where}: query kind {e.kind!r} runs on the {'/'.join(kinds[e.kind].variants)} "
                              f"schema, not {variant}")


def resolve(mix: str | dict[str, float], engine: str, variant: str, placeholder: str) -> list[Query]:
    check_mix(mix, variant)
    kinds = kinds_for(engine)
    out = []
    for e in mix_entries(mix):
        k = kinds[e.kind]
        stmts = []
        texts, current = k.statements_for(variant)
        for text in texts:
            text = text.replace("{current}", current)
            stmts.append(Statement(_PARAM.sub(placeholder, text), tuple(_PARAM.findall(text))))
        used = {p for s in stmts for p in s.params}
        out.append(Query(e.label, e.kind, e.weight, tuple(stmts), dict(e.args), frozenset(used - set(e.args)),
                         k.expect_rows, k.check))
    names = [q.name for q in out]
    if len(set(names)) != len(names):
        raise ConfigError(f"readers.mix: two entries are called the same ({', '.join(names)}): give them names")
    return out
