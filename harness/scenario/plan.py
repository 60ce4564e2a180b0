"""Scenario x engine x profile x memory x scale -> RunPlan, with every default resolved. The plan is
written to the run directory and is all the runner (in its child process or container) reads."""
from __future__ import annotations

import dataclasses
import os
import secrets
import time
from pathlib import Path
from typing import Literal, Optional

import yaml
from pydantic import Field, ValidationError

from harness import registry
from harness.engine_api import Capabilities
from harness.errors import ConfigError
from harness.reads.queries import resolve as resolve_queries
from harness.scenario import memory as memory_policy
from harness.scenario.load import deep_merge, load_scenario, resolve_path
from harness.validation import format_error
from harness.scenario.spec import Body, Ceiling, Checkpoint, Io, Load, Phases, Readers, Strict, Workload
from harness.scenario.thresholds import WAL_METRICS, parse_threshold, scaled_thresholds
from harness.units import parse_size_bytes
from harness.workload.dc_tables import WRITE_MIXES, DcSpec
from harness.workload.generator import WorkloadSpec
from harness.workload.shapes import MENDOZA_1X_ENTITIES

PLAN_VERSION = 2
MEM_FLOOR_BYTES = 32 << 20      # the smallest MEM a runner starts in (_mem_bytes says what was measured)


class StateRef(Strict):
    """The starting state a run cloned (harness/state), set by the runtime once the clone is in place."""
    id: str
    model: str          # the compact model file, read by the feed (on the host, outside the limit)
    aged_blocks: int = 0    # blocks of the mix the state already holds (an aged state): the feed sends none


class BlockLogPlan(Strict):
    """A scenario's block_log, resolved (harness/designs/block_log.py)."""
    group_blocks: int
    lag_bound_blocks: int
    utilisation_bound: float = 0.85
    segment_bytes: int = 64 << 20
    sync: bool                       # fdatasync every record before the acknowledgement
    # the engine's own commit outlives a power cut: a record may go once applied; else only once a checkpoint
    # has made its apply durable (a power cut takes back the engine's unsynced commits, never the log's records)
    applied_is_durable: bool = False


# What a block log must also meet, beside the scenario's own (its acknowledgement is the run's commit_ms):
# - the rows offered are applied, and the apply lag neither exceeds the bound nor grows over the measured phase
#   (by more than one group's worth of blocks: a queue that gains less than that is only jitter);
# - the applier keeps up with room to spare: busy under the leaf's utilisation bound (decision.yaml says why),
#   and drained after the clock within the lag bound's blocks at the cadence (what it trailed by at the end);
# - the log stays bounded: its bytes gain less than two segments over the phase (one is the sawtooth of a
#   segment filling and going; a log that releases nothing gains every block's bytes).
def block_log_thresholds(b: BlockLogPlan, block_interval_ms: float) -> list[str]:
    drain_bound_s = b.lag_bound_blocks * block_interval_ms / 1000
    return [f"p99(apply_lag_blocks) < {b.lag_bound_blocks}", "rate(applied_rows) >= 95%",
            f"last(apply_lag_growth_blocks) < {max(2, b.group_blocks)}",
            f"last(apply_utilisation) < {b.utilisation_bound:g}",
            *([f"last(apply_drain_s) < {drain_bound_s:g}"] if drain_bound_s else []),
            "last(log_growth_segments) < 2"]


def _block_log(body) -> BlockLogPlan | None:
    if body.block_log is None:
        return None
    b = body.block_log
    bound, busy = b.lag_bound_blocks, b.utilisation_bound
    if bound is None or busy is None:
        from harness.scenario.decision import load_decision
        leaf = load_decision().leaf
        if leaf is None:
            unset = "lag_bound_blocks" if bound is None else "utilisation_bound"
            raise ConfigError(f"block_log.{unset}: unset, and scenarios/decision.yaml has no leaf to take it from")
        bound = leaf.lag_bound_blocks if bound is None else bound
        busy = leaf.utilisation_bound if busy is None else busy
    return BlockLogPlan(group_blocks=b.group_blocks, lag_bound_blocks=bound, utilisation_bound=busy,
                        segment_bytes=parse_size_bytes(b.segment_bytes), sync=body.durability != "checkpoint")


def _durability(guarantee: str, survives: str, block_log: BlockLogPlan | None) -> dict:
    """What an acknowledgement guarantees: the engine's commit, or a block log's record (synced: a power cut
    spares it; written: a process kill does), whatever the engine behind it promises."""
    if block_log is None:
        return {"durability": guarantee, "survives": survives}
    return {"durability": f"acknowledged once its block log record is {'fdatasync' if block_log.sync else 'written'}"
                          f"'ed (the engine behind it: {guarantee})",
            "survives": "power_cut" if block_log.sync else "process_kill"}


class RunPlan(Strict):
    version: int = PLAN_VERSION
    run_id: str
    scenario: str
    scenario_file: str
    profile: str
    engine: str
    engine_settings: dict
    capabilities: Capabilities                       # the manifest's, for these settings
    runtime: Literal["local", "docker"]
    memory: memory_policy.MemoryPlan = memory_policy.MemoryPlan()   # the limits (MEM and the runner's) and the policy's settings
    durability: Optional[str] = None                 # what a commit guarantees at engine_settings (engine.toml)
    survives: str = "nothing"                        # the worst failure an acknowledged commit outlives there
    scale: float
    load_entities: int
    workload: Workload
    load: Load
    phases: Phases
    readers: Readers
    checkpoint: Checkpoint
    ceiling: Ceiling = Ceiling()
    io: Io = Io()
    thresholds: list[str] = Field(default_factory=list)
    integrity: Literal["model", "counts"]
    early_abort: bool = False        # stop the measured phase once a threshold can no longer pass
    settle_service_p50_ms: Optional[float] = None   # (make matrix) stop it once service p50 cannot go below this
    settle_budget_s: Optional[float] = None         # (make matrix) or past this clock with every block over it
    run_dir: str
    data_dir: str
    keep_data: bool = False
    take_state: bool = False         # (DROP_STATES=1) no later cell clones the state: move its data in
    take_base_state: bool = False    # (DROP_STATES=1) no later cell needs the aged state's base: age it in place
    continue_from: Optional[str] = None   # a continued state's id (state/continued.py): taken in place of its own
    keep_continued: bool = False     # its database after it and the model at its last block: a continued state
    command: Optional[str] = None    # (make run) the command as a user types it: what a published run names
    block_log: Optional[BlockLogPlan] = None    # a design in front of the engine (harness/designs/)
    state: Optional[StateRef] = None

    @property
    def design(self) -> str | None:
        """The design in front of the engine (harness/designs/), by name; None: the engine alone. What the runner,
        the feed and the crash lives ask, rather than each design's own field."""
        return "block_log" if self.block_log is not None else None

    def write(self, path: Path) -> None:
        path.write_text(yaml.safe_dump(self.model_dump(mode="json", by_alias=True), sort_keys=False))

    def unsized_engine_settings(self) -> dict:
        """engine_settings without what the memory policy set: a state's build runs outside MEM."""
        if not self.memory.sized_settings:
            return dict(self.engine_settings)
        defaults = registry.settings_model(self.engine)().model_dump(mode="json")
        return {**self.engine_settings, **{k: defaults[k] for k in self.memory.sized_settings}}

    @property
    def checked_reads(self) -> bool:
        """Readers ask DC queries whose answers are checked (reads/dc_check.py)."""
        return bool(self.readers.threads) and any(q.check for q in resolve_queries(self.readers.mix, self.engine,
                                                                                   self.workload.variant, "?"))

    @property
    def dc_dims(self) -> tuple[int, int] | None:
        """(data centres, nodes per DC) whose ids the DC queries draw, or None without the DC model."""
        dc = self.workload_spec().dc
        return (dc.data_centres, dc.nodes_per_dc) if dc else None

    def workload_spec(self) -> WorkloadSpec:
        w = self.workload
        dc = DcSpec(w.dc.data_centres, w.dc.fraction, WRITE_MIXES[w.dc.write_mix], w.dc.event_btl_blocks,
                     w.dc.history_versions) \
            if w.dc else None
        return WorkloadSpec(shape=w.shape, seed=w.seed, variant=w.variant, rows_per_block=w.rows_per_block,
                            op_weights=w.ops.model_dump(), reorg_fraction=w.reorg_fraction,
                            ephemeral_btl_blocks=w.ephemeral_btl_blocks, extend_blocks=w.extend_blocks,
                            long_lived_fraction=w.long_lived_fraction, dc=dc,
                            history_versions=self.load.history_versions)

    def ageing_spec(self) -> WorkloadSpec:
        """The workload an aged state is aged with: the plan's, at load.age_rows_per_block where set."""
        spec = self.workload_spec()
        rows = self.load.age_rows_per_block
        return dataclasses.replace(spec, rows_per_block=rows) if rows else spec

    @classmethod
    def read(cls, path: Path) -> "RunPlan":
        return cls.model_validate(yaml.safe_load(path.read_text()))


def with_durability(durability, settings_obj, asked: str | None):
    """A scenario's `durability: commit | checkpoint` as the engine's matching setting (engine.toml's
    [durability] select); an engine with one guarantee keeps it, and a scenario that also names the setting
    otherwise is refused."""
    value = durability.select.get(asked) if asked and durability.setting else None
    if value is None:
        return settings_obj
    own = getattr(settings_obj, durability.setting)
    if durability.setting in settings_obj.model_fields_set and str(own) != value:
        raise ConfigError(f"durability: {asked} means {durability.setting}={value} for this engine, but the "
                          f"scenario also sets {durability.setting}={own}; drop one of them")
    return settings_obj.model_validate({**settings_obj.model_dump(exclude_unset=True), durability.setting: value})


def _checkpoint(c: Checkpoint, caps: Capabilities) -> Checkpoint:
    """checkpoint.mode strongest as the engine's own (its capabilities list it last)."""
    if c.mode != "strongest" or not caps.strongest_checkpoint:
        return c
    return c.model_copy(update={"mode": caps.strongest_checkpoint})


def parse_overrides(items: list[str]) -> dict:
    """['engines.sqlite.cache_size=1GB', 'phases.measure_s=30'] -> nested dict; values are YAML scalars."""
    out: dict = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key or any(not part for part in key.split(".")):
            raise ConfigError(f"--set {item!r}: expected dotted.key=value, e.g. engines.sqlite.cache_size=1GB")
        node = out
        *parents, leaf = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ConfigError(f"--set {item!r}: {part} is already set to a value")
        node[leaf] = yaml.safe_load(value) if value else ""
    return out


def resolve_plan(scenario: str, engine: str, *, profile: str | None = None, scale: float | None = None,
                 duration_s: float | None = None, mem: str | None = None, runtime: str = "local",
                 results_root: Path = Path("results"), data_root: Path | None = None,
                 keep_data: bool = False, overrides: list[str] = (), thresholds: list[str] | None = None,
                 early_abort: bool = False) -> RunPlan:
    """thresholds, when given, replace the scenario's (a decision tree's criteria)."""
    registry.manifest(engine)      # an unknown engine: one line naming the ones there are
    path = resolve_path(scenario)
    sc, body, profile = _body(path, profile, overrides, thresholds)
    if scale is not None and scale < 0:
        raise ConfigError(f"SCALE: must be >= 0, got {scale}")
    if duration_s is not None and duration_s <= 0:
        raise ConfigError(f"DURATION: must be > 0 seconds, got {duration_s}")
    settings, caps, memory, man = _engine_settings(path, engine, body, _mem_bytes(mem))
    phases = body.phases.at_rate(body.readers.rate_per_s) if body.readers.threads else body.phases
    if duration_s is not None:    # DURATION is seconds, whatever the scenario counts
        phases = phases.model_copy(update={"measure_s": duration_s, "measure_queries": None})
    load = body.load if scale is None else body.load.model_copy(update={"scale": scale})

    block_log = _block_log(body)
    if block_log:
        block_log = block_log.model_copy(update={"applied_is_durable": man.durability.survived(settings) == "power_cut"})
    # a crash run has no measured phase to judge a lag over: its own criteria (no acknowledged block lost) hold
    extra = [t for t in block_log_thresholds(block_log, body.workload.block_interval_ms) if t not in body.thresholds] \
        if block_log and not body.workload.crash else []
    run_id = f"{time.strftime('%Y%m%d-%H%M%S')}-{engine}-{sc.name}-{profile or 'base'}-{secrets.token_hex(2)}"
    run_dir = (results_root / run_id).resolve()
    data_dir = ((data_root or Path("data")) / run_id).resolve()
    return RunPlan(
        run_id=run_id, scenario=sc.name, scenario_file=str(path), profile=profile or "base", engine=engine,
        engine_settings=settings, capabilities=caps, runtime=runtime,  # type: ignore[arg-type]
        memory=memory, **_durability(man.durability.guarantee(settings), man.durability.survived(settings), block_log),
        scale=load.scale,
        load_entities=round(load.scale * MENDOZA_1X_ENTITIES), workload=body.workload, load=load,
        phases=phases, readers=body.readers, checkpoint=_checkpoint(body.checkpoint, caps), ceiling=body.ceiling, io=body.io,
        thresholds=[*body.thresholds, *extra], block_log=block_log,
        integrity=body.integrity, early_abort=early_abort, run_dir=str(run_dir), data_dir=str(data_dir), keep_data=keep_data)


def _body(path: Path, profile: str | None, overrides, thresholds) -> tuple:
    """(the scenario, its body with the profile, the overrides and the given thresholds merged on, the profile)."""
    sc, raw = load_scenario(path)
    profile = sc.pick_profile(profile)
    if profile and profile not in sc.profiles:
        raise ConfigError(f"{path}: profile {profile!r} not defined; allowed: {', '.join(sc.profiles) or '(none)'}")
    base = {k: v for k, v in raw.items() if k not in ("name", "default_profile", "profiles")}
    merged = deep_merge(base, sc.profiles[profile]) if profile else base
    own = merged
    if overrides:
        merged = deep_merge(merged, parse_overrides(overrides))
    if thresholds is not None:
        merged = {**merged, "thresholds": list(thresholds)}
    try:
        body = Body.model_validate(merged)
        if overrides and thresholds is None and "thresholds" not in parse_overrides(overrides):
            body = _rate_lines_kept_as_share(Body.model_validate(own), body)
        return sc, body, profile
    except ValidationError as e:
        raise ConfigError(format_error(path, e, Body, prefix="(with --set)" if overrides else "")) from None


def _offered_rows_per_s(w: Workload) -> float | None:
    return w.rows_per_block * 1000 / w.block_interval_ms if w.rows_per_block and w.block_interval_ms else None


def _rate_lines_kept_as_share(own: Body, body: Body) -> Body:
    """The scenario's own lines where SET changes the offered rate of rows (workload.rows_per_block or
    block_interval_ms): an absolute rate of rows keeps its share of it (p99_5x's 5000 of 6000 rows/s is 250 at
    600 rows a block), as a knee's rows step and a curve's block size keep it; else no such run could pass, on
    arithmetic. Given criteria (a walk's, a decision tree's) are theirs to scale and are left as they are."""
    was, now = _offered_rows_per_s(own.workload), _offered_rows_per_s(body.workload)
    if not was or not now or was == now:
        return body
    return body.model_copy(update={"thresholds": list(scaled_thresholds(body.thresholds, now / was))})


def _mem_bytes(mem: str | None) -> int | None:
    """MEM in bytes: enforceable (a runner starts in it) and binding (no more than this machine's RAM)."""
    if not mem:
        return None
    try:
        data_limit_bytes = parse_size_bytes(mem)
    except ValueError as e:
        raise ConfigError(f"MEM: {e}") from None
    # measured: a runner OOM-killed at start under 32 MiB locally; in a container at 16-24 MiB it thrashed on its
    # own code pages for 10+ minutes instead, never killed; at 32 MiB killed after two minutes of it
    if data_limit_bytes < MEM_FLOOR_BYTES:
        raise ConfigError(f"MEM: {mem} is below {MEM_FLOOR_BYTES >> 20} MiB; a Python runner cannot start in that "
                          "(in a container it thrashes for minutes rather than being OOM-killed)")
    host_bytes = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    if data_limit_bytes > host_bytes:
        raise ConfigError(f"MEM: {mem} is more than this machine's RAM ({host_bytes >> 20} MiB); "
                          "such a limit would never bind and would measure nothing")
    return data_limit_bytes


def _reader_connections(body) -> int:
    """The reader connections a run opens: its readers' and the long reader's."""
    return int(body.readers.threads) + (1 if body.readers.long_read else 0)


def _engine_settings(path: Path, engine: str, body, data_limit_bytes: int | None) -> tuple:
    """(settings with durability and the memory policy applied, capabilities, the memory plan, the manifest),
    and the scenario's checkpoint mode and thresholds checked against what the engine can do."""
    settings_obj = getattr(body.engines, engine) or registry.settings_model(engine)()
    caps = registry.capabilities(engine, settings_obj.model_dump(mode="json"))
    man = registry.manifest(engine)
    try:
        # behind a block log the acknowledgement is the log's (synced at `commit`): the engine keeps its own setting
        settings_obj = with_durability(man.durability, settings_obj, None if body.block_log else body.durability)
        settings_obj, memory = memory_policy.resolve(man.memory, settings_obj, data_limit_bytes, caps.server,
                                                     body.memory.policy, readers=_reader_connections(body))
    except ValidationError as e:
        raise ConfigError(f"engines/{engine}/engine.toml: [memory] or [durability] names a value {engine}'s "
                          f"settings refuse: {e.errors()[0]['loc']}: {e.errors()[0]['msg']}") from None
    if body.checkpoint.every_blocks and _checkpoint(body.checkpoint, caps).mode not in caps.checkpoint_modes:
        raise ConfigError(f"{path}: checkpoint.mode: {body.checkpoint.mode} is not supported by {engine}; "
                          f"allowed: {', '.join(caps.checkpoint_modes) or '(no manual checkpoints)'}")
    if body.block_log and not caps.groups_blocks:
        raise ConfigError(f"{path}: block_log: {engine} at these settings cannot apply several blocks in one "
                          "transaction (capabilities.groups_blocks is false); allowed: no block_log here")
    if body.workload.crash and body.workload.crash.wal_bytes and not caps.wal:
        raise ConfigError(f"{path}: workload.crash.wal_bytes: {engine} does not report its WAL with these settings "
                          "(capabilities.wal is false): no kill could be aimed at a WAL size")
    if not caps.wal:
        for expr in body.thresholds:
            if parse_threshold(expr).metric in WAL_METRICS:
                raise ConfigError(f"{path}: thresholds: {expr!r}: {engine} does not report its WAL with these "
                                  "settings (capabilities.wal is false): the threshold could never be judged")
    return settings_obj.model_dump(mode="json"), caps, memory, man
