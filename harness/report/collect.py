"""Read any results directory back — one run, a sweep or a verdict — into the cells a report shows, each
with its result.json and the paths of its per-block and per-second files."""
from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import ConfigError
from harness.runner.result import read_json
from harness.stats import summarize
from harness.units import format_bytes


@dataclass
class CellData:
    run_dir: Path
    result: dict
    repeat: int = 1

    @property
    def engine(self) -> str:
        return self.result["engine"]

    @property
    def scenario(self) -> str:
        return self.result["scenario"]

    @property
    def mem_limit_bytes(self) -> int | None:
        return self.result.get("memory_limit_bytes") or self.result.get("memory_limit_requested_bytes")

    @property
    def mem_label(self) -> str:
        return format_bytes(self.mem_limit_bytes) if self.mem_limit_bytes else "no limit"

    @property
    def label(self) -> str:
        rep = f" #{self.repeat}" if self.repeat > 1 else ""
        return f"{self.engine} {self.mem_label} s{self.result['scale']:g}{rep}"

    @property
    def group_key(self) -> tuple:
        return (self.scenario, self.engine, self.mem_limit_bytes, self.result["scale"])

    @property
    def status(self) -> str:
        return self.result.get("status") or "error"

    @property
    def commit_ms(self) -> dict:
        return (self.result.get("metrics") or {}).get("commit_latency_ms") or {}

    @property
    def measure_s(self) -> float:
        return (self.result.get("plan") or {}).get("phases", {}).get("measure_s") or 0.0

    def blocks(self) -> list[dict]:
        return _read_csv(self.run_dir / "blocks.csv")

    def timeseries(self) -> list[dict]:
        return _read_csv(self.run_dir / "timeseries.csv")


@dataclass
class ReportData:
    kind: str                         # run | sweep | verdict
    dir: Path
    meta: dict | None
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


def _cells_from(root: Path, records: list[dict]) -> list[CellData]:
    out = []
    for rec in records:
        run_dir = root / rec["scenario"] / rec["dir"]
        result = read_json(run_dir / "result.json")
        if result is not None:
            out.append(CellData(run_dir, result, rec.get("repeat") or 1))
    return out


def collect(path: Path) -> ReportData:
    path = path.resolve()
    if not path.is_dir():
        raise ConfigError(f"RUN={path}: not a directory; give a run, sweep or verdict directory under results/")
    if (v := read_json(path / "verdict.json")) is not None:
        records = [c for s in v.get("steps", []) for c in s["cells"]]
        return ReportData("verdict", path, v, _cells_from(path, records))
    if (s := read_json(path / "sweep.json")) is not None:
        return ReportData("sweep", path, s, _cells_from(path, [c for c in s["cells"] if c.get("state") == "complete"]))
    if (r := read_json(path / "result.json")) is not None:
        return ReportData("run", path, None, [CellData(path, r)])
    raise ConfigError(f"RUN={path}: holds no verdict.json, sweep.json or result.json")


def group_stats(group: list[CellData]) -> dict:
    """Median and spread over a group's repeats of p99 and rows/s; noisy at a spread >= 10%."""
    p99 = summarize([c.commit_ms.get("p99") for c in group if c.status in ("passed", "failed")])
    rate = summarize([(c.result.get("metrics") or {}).get("rows_per_s") for c in group
                      if c.status in ("passed", "failed")])
    return {"p99": p99, "rows_per_s": rate, "noisy": p99["noisy"] or rate["noisy"]}
