"""Scenario YAML -> validated pydantic models. Unknown keys are errors everywhere."""
from __future__ import annotations

import re
from typing import Annotated, Literal, Optional

from pydantic import AfterValidator, ConfigDict, Field, create_model, field_validator, model_validator

from harness import registry
from harness.errors import ConfigError
from harness.reads.queries import check_mix, kinds_for, mix_entries
from harness.scenario.memory import Memory
from harness.scenario.readers import Ceiling, LongRead, Readers, Strict   # noqa: F401  (the scenario's models, here)
from harness.scenario.thresholds import CRASH_METRICS, parse_threshold
from harness.units import parse_size_bytes
from harness.workload.dc_tables import WRITE_MIXES
from harness.workload.shapes import SHAPES


def _each(parse, v: list[str]) -> list[str]:
    """Every item parsed; the first that is refused named by its index."""
    for i, item in enumerate(v):
        try:
            parse(item)
        except ValueError as e:
            raise ValueError(f"[{i}] {e}") from None
    return v


def _check_thresholds(v: list[str]) -> list[str]:
    return _each(parse_threshold, v)


ThresholdExprs = Annotated[list[str], AfterValidator(_check_thresholds)]


def _low_high(v: tuple[int, int]) -> tuple[int, int]:
    if not 1 <= v[0] <= v[1]:
        raise ValueError("must be [low, high] with 1 <= low <= high")
    return v


BlockRange = Annotated[tuple[int, int], AfterValidator(_low_high)]     # [low, high] blocks, 1 <= low <= high


class OpWeights(Strict):
    create: float = Field(0.0, ge=0)
    update: float = Field(0.0, ge=0)
    delete: float = Field(0.0, ge=0)
    extend: float = Field(0.0, ge=0)
    change_owner: float = Field(0.0, ge=0)


class DataCentres(Strict):
    """The reference's Data Center model beside (or instead of) mendoza's entities (harness/workload/dc.py)."""
    data_centres: int = Field(2, ge=1, le=99, description="DCs in the load: 2 ≈ 1x, 4 ≈ 2x, 11 ≈ 5x, 21 ≈ 10x")
    fraction: float = Field(1.0, gt=0, le=1, description="of a DC's 100K nodes and 500K workloads (5 per node "
                                                          "either way), for small profiles")
    write_mix: Literal[tuple(WRITE_MIXES)] = Field(  # type: ignore[valid-type]
        "dc_heavy", description="the reference's write mixes: the DC events' share of a block's rows "
                                "(mendoza_only 0, dc_light 30%, dc_heavy 70%, dc_only 100%)")
    event_btl_blocks: BlockRange = Field((150, 9000), description="an event entity's lifetime in blocks")
    history_versions: Optional[int] = Field(
        None, ge=0, le=8, description="the seed's passes revising every node and workload once, its own: unset, "
                                      "load.history_versions. A DC beside mendoza whose reads meet the DC's "
                                      "history alone sets it, and mendoza's rows stay the scale's")


def _sizes(v: list[str]) -> list[str]:
    _each(parse_size_bytes, v)
    if [parse_size_bytes(s) for s in v] != sorted(parse_size_bytes(s) for s in v):
        raise ValueError("sizes in increasing order")
    return v


class Crash(Strict):
    """A crash scenario (harness/crash/): the block stream, killed with SIGKILL and restarted on the same files."""
    kills: int = Field(6, ge=1, le=200)
    at: list[Literal["commit", "checkpoint", "anywhere", "apply", "idle", "rotate"]] = Field(
        ["commit", "checkpoint", "anywhere"], min_length=1,
        description="where each kill is aimed, in turn: inside a block's commit (under a block log: its "
                    "record's append), inside a checkpoint, inside a block log's apply transaction (apply), "
                    "as a block log opens its next segment (rotate), between blocks (idle), or at whatever the "
                    "engine is doing when it is due")
    after_blocks: BlockRange = Field((5, 20), description="blocks each life commits before its kill is due, "
                                                          "drawn from the seed")
    mode: Literal["kill", "power_cut"] = Field(
        "kill", description="kill: SIGKILL (the OS keeps what was written); power_cut: also drop the writes "
                            "not yet synced")
    wal_bytes: Optional[Annotated[list[str], AfterValidator(_sizes)]] = Field(
        None, description="recovery by WAL size: one kill once the WAL holds each size (checkpoints off), "
                          "instead of `kills` and `at`")
    tail_blocks: int = Field(10, ge=1, description="blocks after the last restart, before the final check")


class Workload(Strict):
    variant: Literal["bitemporal", "simple", "current_history", "current_history_indexed"] = Field(
        "bitemporal", alias="schema")
    shape: Literal[tuple(SHAPES)] = "mendoza"  # type: ignore[valid-type]
    seed: int = 1
    block_interval_ms: float = Field(2000.0, ge=0, description="0 = unthrottled (as fast as the engine goes)")
    rows_per_block: int = Field(500, ge=1)
    ops: OpWeights = OpWeights(create=0.4, update=0.3, delete=0.05, extend=0.15, change_owner=0.1)
    reorg_fraction: float = Field(0.0, ge=0, le=1)
    ephemeral_btl_blocks: BlockRange = (150, 9000)
    extend_blocks: BlockRange = (10, 1000)
    long_lived_fraction: Optional[float] = Field(None, ge=0, le=1)
    writes: bool = Field(True, description="false: a read-only run, the readers alone after the load")
    indexes: Optional[list[str]] = Field(None, description="the secondary indexes to create, by name (the "
                                                           "primary keys stay); unset: all of the schema's")
    dc: Optional[DataCentres] = Field(None, description="the Data Center model's entities and load events")
    crash: Optional[Crash] = Field(None, description="kill the engine and restart it on its files (harness/crash/)")

    @model_validator(mode="after")
    def _something_to_do(self) -> "Workload":
        if self.reorg_fraction < 1 and not any(self.ops.model_dump().values()):
            raise ValueError("ops: at least one operation weight must be > 0 unless reorg_fraction is 1")
        return self


class Load(Strict):
    scale: float = Field(0.001, ge=0, description="fraction of mendoza 1x (800K entities, 20M rows)")
    batch_rows: int = Field(25_000, ge=1)
    expiry_spread_blocks: int = Field(1_150_000, ge=1)
    method: Literal["state", "organic"] = Field(
        "state", description="state: clone a cached starting state built at bulk speed (harness/state); "
                             "organic: replay the load row by row through the engine's transactional path")
    history_versions: int = Field(0, ge=0, le=8, description="passes after the creates revising every entity once: "
                                  "each leaves an ended version per entity (in place under bitemporal, in the "
                                  "history tables under current_history, none under simple), so history reads "
                                  "meet a history; 1: a history as large as the current tables")
    age_blocks: int = Field(50, ge=0, description="blocks of the scenario's own mix applied untimed after the "
                                                   "load: a bulk-built B-tree is denser than a grown one")
    aged_state: bool = Field(False, description="age once into a starting state of its own (harness/state/aged.py) "
                                                "that every cell of the same layout and workload clones, instead "
                                                "of ageing each clone; the matrix's cells share one")
    age_rows_per_block: Optional[int] = Field(None, ge=1, description="rows per block of an aged state's ageing; "
                                              "none: the workload's. A rows knee gives every step the scenario's "
                                              "own, so its steps start from one state, aged once")
    preload: bool = Field(False, description="read the cloned database once inside MEM before the engine opens "
                                             "it (the reference's vmtouch -t), so a cell starts warm with what "
                                             "fits; false: it starts cold (evicted)")


    @model_validator(mode="after")
    def _ageing(self) -> "Load":
        if self.age_rows_per_block is not None and not self.aged_state:
            raise ValueError("age_rows_per_block: sizes an aged state's blocks: set aged_state: true too (a clone "
                             "aged in its cell ages at the workload's own)")
        return self


class Phases(Strict):
    warmup_s: float = Field(2.0, ge=0)
    measure_s: float = Field(20.0, gt=0)
    cooldown_s: float = Field(0.0, ge=0, description="idle after the measured phase, before the verification")
    horizon_s: Optional[float] = Field(None, gt=0, description="carry each accumulating figure's trend to this "
                                       "many seconds (the criterion's hour) and fail a threshold it would cross by "
                                       "then; unset: trends reported, not judged")
    horizon_scale: Optional[float] = Field(None, gt=0, description="the scale the horizon's hour is asked at (a "
                                           "verdict sets its criterion's target.scale): a smaller cell, writing "
                                           "the same rows a second, grows that much faster relative to its size, so "
                                           "a figure that follows its size is carried to horizon_s x scale / "
                                           "horizon_scale (runner/trends.py); unset: horizon_s for every figure")
    # The reference's read protocol counts queries: at the offered rate they are a duration, since query k of
    # the open-loop schedule is due at k / rate whatever the engine does; they replace warmup_s / measure_s.
    warmup_queries: Optional[int] = Field(None, ge=0, description="warmup as read queries at readers.rate_per_s")
    measure_queries: Optional[int] = Field(None, gt=0, description="measured phase as read queries at "
                                                                     "readers.rate_per_s")

    def size_horizon(self, scale: float) -> tuple[float | None, str | None]:
        """(seconds, why) a figure that follows the database's size is carried to at `scale`: the share of the
        criterion's hour in which this cell's database grows as much, relative to its size, as the hour grows it at
        horizon_scale (2026-12-02: the 1x stand-in's applier busy share over its 600 s matched the 5x hour's within
        7%, while its slope per hour was 2-6x the hour's own); horizon_s where the cell is not smaller; never short of
        the measured phase (a smoke cell's share of the hour is seconds: a trend is carried forward, not back)."""
        if not self.horizon_s or not self.horizon_scale or scale >= self.horizon_scale:
            return self.horizon_s, None
        return max(self.measure_s, self.horizon_s * scale / self.horizon_scale), (
            f"the database's growth over {self.horizon_s / 60:g} min at scale {self.horizon_scale:g}")

    def at_rate(self, read_rate_per_s: float) -> "Phases":
        """Query counts as seconds at the readers' offered rate (unthrottled readers: the seconds stand)."""
        if not read_rate_per_s:
            return self
        update = {f"{p}_s": n / read_rate_per_s for p in ("warmup", "measure")
                  if (n := getattr(self, f"{p}_queries")) is not None}
        return self.model_copy(update=update)


class Checkpoint(Strict):
    every_blocks: int = Field(0, ge=0, description="manual checkpoint after every N blocks; 0 = never")
    mode: Literal["PASSIVE", "FULL", "RESTART", "TRUNCATE", "strongest"] = Field(
        "PASSIVE", description="strongest: the strongest the engine has (its capabilities' last)")


class Io(Strict):
    """What a run measures of its I/O beyond the device and residency figures it always records."""
    index_residency: bool = Field(False, description="residency per table and index at both ends of the measured "
                                                     "phase, where the engine maps its pages (SQLite's dbstat): "
                                                     "reads the whole file once, after the clock")


class BlockLog(Strict):
    """The tree's last leaf, async writes (harness/designs/block_log.py): a block is acknowledged once its record
    is durable in an append-only log on the data mount; an applier applies what has arrived behind it."""
    group_blocks: int = Field(1, ge=1, description="the most logged blocks one apply transaction takes (what has "
                                                   "arrived, up to this)")
    lag_bound_blocks: Optional[int] = Field(None, ge=1, description="the apply lag's p99 must stay under this many "
                                            "blocks; unset: scenarios/decision.yaml's leaf.lag_bound_blocks")
    utilisation_bound: Optional[float] = Field(None, gt=0, le=1, description="the applier's busy share of the "
                                               "measured phase must stay under this; unset: scenarios/decision.yaml's "
                                               "leaf.utilisation_bound")
    segment_bytes: str = Field("64MiB", description="the log's segment size (a segment is deleted whole once every "
                                                    "block in it is durably applied); small ones rotate often, as a "
                                                    "fault campaign wants")

    @field_validator("segment_bytes")
    @classmethod
    def _segment(cls, v: str) -> str:
        if parse_size_bytes(v) < 1:
            raise ValueError("a size of at least 1 byte, e.g. 64MiB or 4KiB")
        return v


# One optional field per registered engine, typed by that engine's own Settings model.
EngineSettings = create_model(
    "EngineSettings", __config__=ConfigDict(extra="forbid", frozen=True),
    **{name: (Optional[registry.settings_model(name)], None) for name in registry.names()},
)


class Body(Strict):
    """Everything a profile may override."""
    description: str = ""
    workload: Workload
    load: Load = Load()
    phases: Phases = Phases()
    readers: Readers = Readers()
    checkpoint: Checkpoint = Checkpoint()
    ceiling: Ceiling = Ceiling()
    io: Io = Io()
    engines: EngineSettings = EngineSettings()  # type: ignore[valid-type]
    memory: Memory = Memory()
    durability: Optional[Literal["commit", "checkpoint"]] = Field(
        None, description="commit: every engine durable at commit (SQLite synchronous=FULL); checkpoint: "
                          "durable at checkpoint (SQLite NORMAL, PostgreSQL synchronous_commit=off); unset: "
                          "each engine's default (the reference application's)")
    thresholds: ThresholdExprs = []
    integrity: Literal["model", "counts"] = "model"
    block_log: Optional[BlockLog] = Field(None, description="a design in front of the engine: acknowledge once "
                                          "logged, apply behind (the log is synced per block unless durability: "
                                          "checkpoint)")

    @model_validator(mode="after")
    def _mix(self) -> "Body":
        if not self.workload.writes and not self.readers.threads:
            raise ValueError("workload.writes is false: a read-only run needs readers.threads > 0")
        if not self.workload.writes and self.block_log:
            # a read-only cell reads its state's files linked; the log's applier opening them writes (12-06)
            raise ValueError("block_log: a design in front of the writes, and workload.writes is false: a read-only "
                             "run has none to log: leave block_log unset")
        if (self.phases.warmup_queries is not None or self.phases.measure_queries is not None) \
                and not self.readers.threads:
            raise ValueError("phases.warmup_queries / measure_queries count read queries: they need "
                             "readers.threads > 0")
        crash_only = [e for e in self.thresholds if parse_threshold(e).metric in CRASH_METRICS]
        if crash_only and not self.workload.crash:
            raise ValueError(f"thresholds: {crash_only[0]!r} measures restarts: it needs workload.crash")
        if self.workload.crash and (self.readers.threads or not self.workload.writes):
            raise ValueError("workload.crash: a crash run writes and has no readers (readers.threads: 0)")
        if self.workload.crash and "checkpoint" in self.workload.crash.at and not self.checkpoint.every_blocks \
                and not self.workload.crash.wal_bytes:
            raise ValueError("workload.crash.at: checkpoint needs checkpoints to land in (checkpoint.every_blocks > 0)")
        for point in ("apply", "rotate"):
            if self.workload.crash and point in self.workload.crash.at and not self.block_log:
                raise ValueError(f"workload.crash.at: {point} is a block log's: it needs block_log")
        if self.readers.threads:
            try:
                check_mix(self.readers.mix, self.workload.variant)
            except ConfigError as e:
                raise ValueError(str(e)) from None
            checked = [e.label for e in mix_entries(self.readers.mix) if kinds_for("")[e.kind].check]
            if checked and not self.workload.dc:
                raise ValueError(f"readers.mix: {', '.join(checked)} ask the Data Center model, which this "
                                 "scenario has not: set workload.dc")
        return self


PROFILE_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


class Scenario(Body):
    name: str
    default_profile: Optional[str] = None     # default: quick if defined, else the first profile
    profiles: dict[str, dict] = {}

    @model_validator(mode="after")
    def _profiles(self) -> "Scenario":
        for p in self.profiles:
            if not PROFILE_NAME.match(p):
                raise ValueError(f"profiles: bad profile name {p!r}; use lowercase letters, digits, _")
        if self.default_profile is not None and self.default_profile not in self.profiles:
            raise ValueError(f"default_profile: {self.default_profile!r} is not one of the profiles "
                             f"({', '.join(self.profiles) or 'none defined'})")
        return self

    def pick_profile(self, asked: str | None) -> str | None:
        if asked or not self.profiles:
            return asked
        return self.default_profile or ("quick" if "quick" in self.profiles else next(iter(self.profiles)))
