"""Read any results directory back — one run, a sweep or a verdict — into the cells a report shows, each
with its result.json and the paths of its per-block and per-second files."""
from __future__ import annotations

import csv
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import ConfigError
from harness.results import CellRecord, LatencySummary, RunResult, load_curve, load_knee, load_result, load_sweep, load_verdict, read_json
from harness.stats import summarize
from harness.units import format_bytes


# a plan's fields that differ between attempts of one cell (sweep.py's cell identity leaves them out too)
PER_ATTEMPT = ("run_id", "run_dir", "data_dir", "keep_data")


@dataclass
class CellData:
    run_dir: Path
    result: RunResult
    repeat: int = 1
    build: str = ""          # set when one report holds one engine at two library builds (a control)
    variant: str = ""        # what sets it apart from the engine's other cells (an option, SET items)

    @property
    def engine(self) -> str:
        return f"{self.result.engine} ({self.build})" if self.build else self.result.engine

    @property
    def scenario(self) -> str:
        return self.result.scenario

    @property
    def data_limit_bytes(self) -> int | None:
        return self.result.memory.data_limit_bytes_seen or self.result.memory.data_limit_bytes

    @property
    def mem_label(self) -> str:
        return format_bytes(self.data_limit_bytes) if self.data_limit_bytes else "no limit"

    @property
    def label(self) -> str:
        rep = f" #{self.repeat}" if self.repeat > 1 else ""
        return f"{self.name} {self.mem_label} s{self.result.scale:g}{rep}"

    @property
    def name(self) -> str:
        """The engine, and what sets this cell apart from the engine's others."""
        return f"{self.engine} [{self.variant}]" if self.variant else self.engine

    @property
    def settings_key(self) -> str:
        """The resolved plan, less what differs between attempts: cells that share it are repeats."""
        plan = {k: v for k, v in self.result.plan.items() if k not in PER_ATTEMPT}
        return hashlib.sha256(json.dumps(plan, sort_keys=True, default=str).encode()).hexdigest()[:12]

    @property
    def group_key(self) -> tuple:
        """Repeats are cells that differ in nothing but the repeat: same plan (settings, thresholds, scale)."""
        return (self.scenario, self.engine, self.data_limit_bytes, self.result.scale, self.settings_key)

    @property
    def status(self) -> str:
        return self.result.status

    @property
    def commit_ms(self) -> LatencySummary:
        return self.result.metrics.commit_latency_ms

    @property
    def measure_s(self) -> float:
        return self.result.measure_s

    def blocks(self) -> list[dict]:
        return _read_csv(self.run_dir / "blocks.csv")

    def timeseries(self) -> list[dict]:
        return _read_csv(self.run_dir / "timeseries.csv")

    def design_points(self) -> list[dict]:
        """A design's figures over the measured phase (design.csv: metric, t_s, value), none for an engine alone."""
        return _read_csv(self.run_dir / "design.csv")


@dataclass
class ReportData:
    kind: str                         # run | sweep | verdict | ceiling | v1 | knee | curve
    dir: Path
    meta: object | None               # SweepFile | VerdictFile | ceiling.json's dict | None
    cells: list[CellData] = field(default_factory=list)

    def scenarios(self) -> list[str]:
        return list(dict.fromkeys(c.scenario for c in self.cells))

    def groups(self, scenario: str) -> list[list[CellData]]:
        """Repeats of the same engine × memory × scale, in the order they first appear."""
        out: dict[tuple, list[CellData]] = {}
        for c in self.cells:
            if c.scenario == scenario:
                out.setdefault(c.group_key, []).append(c)
        return list(out.values())


def _read_csv(path: Path) -> list[dict]:
    if not path.exists():
        return []
    with open(path, newline="") as f:
        return [{k: _num(v) for k, v in row.items()} for row in csv.DictReader(f)]


def _num(v: str):
    if v is None or v == "":
        return None
    try:
        return float(v)
    except ValueError:
        return v


def _cells_from(root: Path, records: list[CellRecord]) -> list[CellData]:
    out = []
    for rec in records:
        run_dir = root / rec.scenario / rec.dir
        result = load_result(run_dir / "result.json")
        if result is not None:
            out.append(CellData(run_dir, result, rec.repeat, variant=rec.variant or ""))
    return _name_variants(out)


def _name_variants(cells: list[CellData]) -> list[CellData]:
    """Cells of one engine, MEM and scale at several settings whose records name no variant (a walk recorded
    before records did) are named by their settings' key, so no two settings share a label. Where some do,
    the unnamed one is the engine's own settings, the baseline."""
    keys: dict[tuple, set] = {}
    named: set[tuple] = set()
    for c in cells:
        at = (c.scenario, c.engine, c.data_limit_bytes, c.result.scale)
        keys.setdefault(at, set()).add(c.settings_key)
        if c.variant:
            named.add(at)
    for c in cells:
        at = (c.scenario, c.engine, c.data_limit_bytes, c.result.scale)
        if not c.variant and len(keys[at]) > 1 and at not in named:
            c.variant = f"settings {c.settings_key[:6]}"
    return cells


def _name_builds(cells: list[CellData]) -> list[CellData]:
    """An engine that ran at more than one library build (a verdict's control) is shown by build."""
    by_engine: dict[str, set] = {}
    for c in cells:
        by_engine.setdefault(c.result.engine, set()).add(c.result.engine_version)
    for c in cells:
        versions = by_engine[c.result.engine]
        if len(versions) > 1:
            libraries = {x.result.engine_library for x in cells if x.result.engine == c.result.engine}
            c.build = (c.result.engine_library if len(libraries) > 1 else c.result.engine_version) or "?"
    return cells


def collect(path: Path) -> ReportData:
    path = path.resolve()
    if not path.is_dir():
        raise ConfigError(f"RUN={path}: not a directory; give a run, sweep or verdict directory under results/")
    if (v1 := read_json(path / "v1.json")) is not None:       # its searches have reports of their own
        return ReportData("v1", path, v1)
    if (k := load_knee(path / "knee.json")) is not None:
        cells = [CellData(path / s.cell, r, s.repeat) for s in k.steps
                 if (r := load_result(path / s.cell / "result.json")) is not None]
        return ReportData("knee", path, k, cells)
    if (cv := load_curve(path / "curve.json")) is not None:
        cells = [CellData(path / p.cell, r) for p in cv.points if (r := load_result(path / p.cell / "result.json"))]
        return ReportData("curve", path, cv, cells)
    if (c := read_json(path / "ceiling.json")) is not None:
        cells = [CellData(path / s["cell"], r, s["repeat"]) for s in c["steps"]
                 if (r := load_result(path / s["cell"] / "result.json")) is not None]
        return ReportData("ceiling", path, c, cells)
    if (v := load_verdict(path / "verdict.json")) is not None:
        # every cell the walk ran (v6: the leaf's, the controls', the reference cells, the headroom screens and the
        # runs set aside as disturbed too), else, in an older file, the steps' own and their controls'
        records = [c for c in v.cells if c.state == "complete"] or \
            [c for s in v.steps for c in (*s.cells, *(s.control.cells if s.control else ()))]
        return ReportData("verdict", path, v, _name_builds(_cells_from(path, records)))
    if (s := load_sweep(path / "sweep.json")) is not None:
        done = [c for c in s.cells if c.state == "complete"]
        return ReportData("sweep", path, s, _name_builds(_cells_from(path, done)))
    if (r := load_result(path / "result.json")) is not None:
        return ReportData("run", path, None, [CellData(path, r)])
    raise ConfigError(f"RUN={path}: holds no verdict.json, sweep.json or result.json")


def group_stats(group: list[CellData]) -> dict:
    """Median and spread over a group's repeats of p99 and rows/s; noisy at a spread >= 10%."""
    done = [c for c in group if c.status in ("passed", "failed")]
    p99 = summarize([c.commit_ms.p99 for c in done])
    rate = summarize([c.result.metrics.rows_per_s for c in done])
    return {"p99": p99, "rows_per_s": rate, "noisy": p99["noisy"] or rate["noisy"]}
