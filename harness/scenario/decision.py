"""scenarios/decision.yaml: the reference's decision tree and its criteria, validated like a scenario
(one-line errors naming the file and the field). harness/walks/verdict.py walks it."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal, Optional

from pydantic import Field, ValidationError, field_validator, model_validator

from harness import registry
from harness.errors import ConfigError
from harness.scenario.load import load_model, resolve_path
from harness.scenario.spec import Strict, ThresholdExprs

DECISION_FILE = Path(__file__).resolve().parents[2] / "scenarios" / "decision.yaml"


class Target(Strict):
    scale: float = Field(gt=0)
    measure_s: Optional[float] = Field(None, gt=0, description="none: the scenario is not timed (a crash run's kills)")

    def met_by(self, scale: float, measure_s: float | None) -> bool:
        """A cell of this scale measured this long answers the criterion as it is asked, not a stand-in of it."""
        return scale >= self.scale and (not self.measure_s or (measure_s or 0) >= self.measure_s)


class Criterion(Strict):
    name: str
    scenario: str
    thresholds: ThresholdExprs = Field(min_length=1)
    target: Target
    behind_a_log: Literal["full", "screen"] = Field(
        "full", description="screen: behind a block log (its acknowledgement off the engine's path) the criterion "
                            "runs over screen_blocks measured blocks, its applier judged as in full")

    @field_validator("scenario")
    @classmethod
    def _scenario(cls, v: str) -> str:
        try:
            resolve_path(v)
        except ConfigError as e:
            raise ValueError(str(e)) from None
        return v


def _known_engine(v: str) -> str:
    if v not in registry.names():
        raise ValueError(f"unknown engine {v!r}; allowed: {', '.join(registry.names())}")
    return v


def _check_settings(engine: str, settings: dict) -> None:
    try:
        registry.settings_model(engine)(**settings)
    except ValidationError as e:
        err = e.errors(include_url=False)[0]
        raise ValueError(f"set.{'.'.join(map(str, err['loc']))}: {err['msg']} (engines.{engine})") from None


def as_overrides(engine: str, settings: dict) -> tuple[str, ...]:
    """Settings as --set items: engines.<engine>.<key>=<value>."""
    return tuple(f"engines.{engine}.{k}={json.dumps(v)}" for k, v in settings.items())


class Control(Strict):
    """Run when a step passes where the step before it failed: that earlier engine again, on the same
    cells, changed only by `set`, so the report tells what the step's engine did from what the change
    alone would have done (libSQL against SQLite at the newest SQLite)."""
    set: dict[str, Any] = Field(min_length=1)
    why: str


def _check_options(engine: str, names: list[str], field: str) -> None:
    """Each name is an option of `engine` in scenarios/matrix.yaml."""
    from harness.scenario.matrix import load_matrix
    em = load_matrix().engines.get(engine)
    known = list(em.options) if em else []
    unknown = [o for o in names if o not in known]
    if unknown:
        raise ValueError(f"{field}: {unknown[0]!r} is not an option of {engine} in scenarios/matrix.yaml; "
                         f"allowed: {', '.join(known) or 'none'}")


class Step(Strict):
    engine: str
    decision: str
    set: dict[str, Any] = {}           # this step's settings for its engine, beside the scenario's
    control: Optional[Control] = None
    tune: list[str] = Field([], description="options of scenarios/matrix.yaml to try, cheapest first, where the "
                                            "engine fails at its policy's settings")

    _engine = field_validator("engine")(_known_engine)

    @model_validator(mode="after")
    def _settings(self) -> "Step":
        _check_settings(self.engine, self.set)
        _check_options(self.engine, self.tune, "tune")
        return self


class Leaf(Strict):
    """The tree's last leaf, measured (harness/walks/verdict/leaf.py): where no step passed at a MEM, each engine's designs
    (options of scenarios/matrix.yaml that keep every version), cheapest first."""
    designs: dict[str, list[str]] = Field(min_length=1, description="engine -> its designs to try")
    lag_bound_blocks: int = Field(ge=1, description="a block log's apply lag p99 must stay under this many blocks")
    utilisation_bound: float = Field(gt=0, le=1, description="a block log's applier must be busy less than this "
                                                             "share of the measured phase")

    @model_validator(mode="after")
    def _designs(self) -> "Leaf":
        for engine, names in self.designs.items():
            _known_engine(engine)
            _check_options(engine, names, f"designs.{engine}")
        return self


class CompareVersions(Strict):
    """Engines whose library version of one kind (a key of each result's engine_related_versions) the
    report puts side by side; a step between two of them says whether they matched."""
    of: str
    engines: list[str] = Field(min_length=2)

    @field_validator("engines")
    @classmethod
    def _engines(cls, v: list[str]) -> list[str]:
        return [_known_engine(e) for e in v]


class RatioMems(Strict):
    """Memory limits as the reference's data-to-memory ratios: MEM = the size of size_of's starting state
    (at the run's scale) / each ratio, so a smaller machine asks the same question of a smaller database."""
    data_to_memory: list[float] = Field(min_length=1)
    size_of: str

    @field_validator("data_to_memory")
    @classmethod
    def _ratios(cls, v: list[float]) -> list[float]:
        if any(r <= 0 for r in v):
            raise ValueError("each ratio must be > 0 (data bytes per byte of memory)")
        return v

    @field_validator("size_of")
    @classmethod
    def _engine(cls, v: str) -> str:
        return _known_engine(v)


# The run-to-run spread measured here (docs/design.md, "The noise, measured"): a service p99 moved 15% between
# runs of one cell within a day; rates and sizes less. A figure nearer its line than this may cross it next run.
DEFAULT_BANDS = {"latency": 0.15, "counter": 0.05, "gauge": 0.10, "figure": 0.10}


class Confirm(Strict):
    """Close calls run again (harness/walks/verdict/confirm.py): a cell whose deciding figures lie within their band
    of the line, or whose percentile's bounds straddle it, runs until `runs` runs in all."""
    runs: int = Field(2, ge=2, description="runs in all of a close cell: the first and its confirmations")
    bands: dict[Literal["latency", "counter", "gauge", "figure"], float] = Field(
        default_factory=lambda: dict(DEFAULT_BANDS), min_length=1, description="metric kind (scenario/thresholds.py METRICS) -> how near its line, as a share "
                                  "of the line, a figure is close")

    @model_validator(mode="after")
    def _bands(self) -> "Confirm":
        for kind, band in self.bands.items():
            if not 0 < band < 1:
                raise ValueError(f"bands.{kind}: {band} is not a share of the line between 0 and 1")
        return self


class Costs(Strict):
    """Minutes one cell costs on this machine at one profile, as measured here (the estimate's basis)."""
    state: dict[str, float] = Field(description="engine -> minutes to build and age one starting state (an engine "
                                                "that opens another's files, libSQL: to age its copy); engine/option "
                                                "-> the state of that option's layout (schema, indexes), where it "
                                                "differs")
    fail: float = Field(gt=0, description="a cell that fails early: its setup, warm-up and first blocks")
    design_fail: Optional[float] = Field(None, gt=0, description="a leaf design's cell that fails: an applier "
                                         "falling behind is stopped only once its lag has passed the bound on more "
                                         "blocks than the p99 allows (default: fail)")
    screen: float = Field(gt=0, description="a screened cell: setup, warm-up and the screen's blocks")
    full: dict[str, float] = Field(description="criterion scenario -> minutes of a cell that runs its whole phase")
    walk_budget: Optional[float] = Field(None, gt=0, description="minutes a walk may take here: a trade-off's "
                                         "screen (after the answer) runs only if its screen and state minutes fit "
                                         "in what is left; none: every screen runs")
    measured: str = Field(description="where these minutes come from")

    @field_validator("state")
    @classmethod
    def _state_keys(cls, v: dict[str, float]) -> dict[str, float]:
        for key in v:
            engine, _, option = key.partition("/")
            _known_engine(engine)
            if option:
                _check_options(engine, [option], f"state.{key}")
        return v


class EstimateSpec(Strict):
    """What `make verdict` expects before its first cell (harness/walks/verdict/estimate.py): the walk played with
    these outcomes, each cell at its measured cost."""
    passes: list[str] = Field([], description="what is expected to pass every criterion at every MEM: engine, "
                                              "engine/option or engine/leaf-design; anything else fails early")
    passes_at_largest: list[str] = Field([], description="what is expected to pass every criterion at the largest "
                                                         "MEM only and to fail below it (named as in passes)")
    why: str = ""
    minutes: dict[str, Costs] = Field({}, description="profile -> the cost of its cells here")

    @field_validator("passes", "passes_at_largest")
    @classmethod
    def _names(cls, v: list[str], info) -> list[str]:
        for i, name in enumerate(v):
            engine, _, what = name.partition("/")
            _known_engine(engine)
            if what:
                _check_options(engine, [what.removeprefix("leaf-")], f"{info.field_name}.{i}")
        return v


class Sitting(Strict):
    """One sitting's reference cell on record: its date, the profile it ran at and its figure."""
    date: str
    profile: str
    service_p50_ms: float = Field(gt=0)
    source: str = Field(description="the run it comes from")


class Reference(Strict):
    """The sitting's speed (harness/walks/verdict/headroom.py): the same cheap cell at the walk's start, between
    its steps and at its end; the slowest sitting on record against this one sets the load an answer must carry."""
    engine: str
    blocks: int = Field(10, ge=4, description="measured blocks at most (it stops early as the walk's first cell does)")
    every_cells: int = Field(6, ge=1, description="between steps (and before the leaf), a reference cell once this "
                                                  "many cells have run since the last")
    within_sitting: float = Field(1.15, ge=1, description="the least multiple: the within-sitting band")
    record: list[Sitting] = []

    _engine = field_validator("engine")(_known_engine)


class Quiet(Strict):
    """A quiet machine (harness/walks/verdict/watch.py): a cell measured beside more load than this is run again."""
    outside_cores: float = Field(0.10, gt=0, description="CPU, in cores, other processes may use while a cell runs")
    fsync_times: float = Field(2.0, gt=1, description="a cell's fsync p50, at both its ends, over this multiple of "
                                                      "the walk's first probe is disturbed")
    wait_s: float = Field(300, ge=0, description="how long to wait for a quiet machine before running it again")


class Readers(Strict):
    """When a reader must see a block (issue 84): an engine in place shows it at its commit, a block log at its apply.
    The answer says both times; a second answer, from the same cells and no others, is for a stricter reader."""
    see_within_ms: float = Field(10000, gt=0, description="the reader's line, from a block's due time: the block "
                                 "log's lag bound (5 blocks at the 2 s cadence)")
    strict_ms: float = Field(500, gt=0, description="the stricter reader's line: the second answer's")


class DecisionTree(Strict):
    description: str = ""
    steps: list[Step] = Field(min_length=1)
    otherwise: str
    criteria: list[Criterion] = Field(min_length=1)
    mems: dict[str, list[str] | RatioMems] = {}
    compare_versions: Optional[CompareVersions] = None
    leaf: Optional[Leaf] = None
    readers: Readers = Field(default_factory=Readers, description="when readers must see a block")
    screen_blocks: int = Field(60, ge=1, description="a trade-off's screen: measured blocks of the first criterion")
    estimate: EstimateSpec = Field(default_factory=EstimateSpec)
    confirm: Confirm = Field(default_factory=Confirm, description="close calls run again; the defaults where the "
                                                                  "file says nothing")
    reference: Optional[Reference] = Field(None, description="the reference cell; unset: no headroom, close calls "
                                                             "confirmed in the sitting instead")
    quiet: Optional[Quiet] = Field(None, description="run again a cell measured beside other load; unset: no watch")
    durability: Optional[Literal["commit", "checkpoint"]] = Field(
        None, description="every cell of the walk at this durability (a scenario's durability: each engine's matching "
                          "setting, a block log's fdatasync); unset: each engine's default")

    @model_validator(mode="after")
    def _controls(self) -> "DecisionTree":
        for i, step in enumerate(self.steps):
            if step.control is None:
                continue
            if i == 0:
                raise ValueError("steps.0.control: the first step has no step before it to control")
            before = self.steps[i - 1]
            try:
                _check_settings(before.engine, {**before.set, **step.control.set})
            except ValueError as e:
                raise ValueError(f"steps.{i}.control.{e}") from None
        return self


def load_decision(path: Path = DECISION_FILE) -> DecisionTree:
    return load_model(path, DecisionTree)


