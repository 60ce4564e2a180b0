"""A cell's identity in the report (issue: a tuned cell is no repeat): cells pool as repeats only when they
differ in nothing but the repeat; a cell at other settings is a row of its own, named by its option."""
from pathlib import Path

from harness.report.collect import CellData, ReportData, _cells_from
from harness.report.content import scenario_table
from harness.results import CellRecord, RunResult, write_json


def _result(p99: float, settings: dict, run_id: str) -> RunResult:
    plan = {"run_id": run_id, "run_dir": f"/r/{run_id}", "data_dir": f"/d/{run_id}", "engine_settings": settings,
            "workload": {"rows_per_block": 12000}}
    return RunResult.model_validate({
        "run_id": run_id, "engine": "sqlite", "scenario": "p99_5x", "profile": "smoke", "runtime": "local",
        "status": "failed", "scale": 1.0, "plan": plan, "environment": {},
        "memory": {"data_limit_bytes": 4964 << 20, "data_limit_bytes_seen": 4964 << 20},
        "metrics": {"commit_latency_ms": {"count": 300, "p50": p99 / 2, "p99": p99, "max": p99},
                    "rows_per_s": 5000.0}})


def _cells(tmp_path: Path, spec) -> list[CellData]:
    """spec: (dir, repeat, variant, p99, settings) per cell, written as a walk writes them."""
    records = []
    for d, repeat, variant, p99, settings in spec:
        (tmp_path / "p99_5x" / d).mkdir(parents=True)
        write_json(tmp_path / "p99_5x" / d / "result.json", _result(p99, settings, d))
        records.append(CellRecord(cell_id=d, scenario="p99_5x", engine="sqlite", mem="4964m", data_limit_bytes=4964 << 20,
                                  scale=1.0, repeat=repeat, variant=variant, runtime="local", dir=d, state="complete"))
    return _cells_from(tmp_path, records)


def test_cells_at_other_settings_are_not_pooled_as_repeats(tmp_path):
    cells = _cells(tmp_path, [("base", 1, None, 965.0, {"cache_size": -100}),
                              ("cache_75", 1, "cache_75", 1043.0, {"cache_size": -150}),
                              ("simple", 1, "no_bitemporal", 469.0, {"cache_size": -100, "schema": "simple"})])
    data = ReportData("sweep", tmp_path, None, cells)
    assert [len(g) for g in data.groups("p99_5x")] == [1, 1, 1]
    table, noisy = scenario_table(data, "p99_5x")
    assert noisy == []                                       # no repeat, so no spread to warn of
    assert [r[0] for r in table.rows] == ["sqlite", "sqlite [cache_75]", "sqlite [no_bitemporal]"]
    assert all(r[-2].startswith("1 ") for r in table.rows)
    assert len({c.label for c in cells}) == 3                # legends and tables tell them apart


def test_a_real_repeat_still_pools_and_gets_its_spread(tmp_path):
    cells = _cells(tmp_path, [("r1", 1, None, 900.0, {"cache_size": -100}), ("r2", 2, None, 1200.0, {"cache_size": -100})])
    data = ReportData("sweep", tmp_path, None, cells)
    assert [len(g) for g in data.groups("p99_5x")] == [2]
    table, noisy = scenario_table(data, "p99_5x")
    assert table.rows[0][-2].startswith("2 (") and "NOISY" in table.rows[0][-2] and len(noisy) == 1


def test_a_record_without_a_variant_is_named_by_its_settings(tmp_path):
    """Walks recorded before cells named their variant: two settings still get two labels."""
    cells = _cells(tmp_path, [("a", 1, None, 900.0, {"cache_size": -100}), ("b", 1, None, 500.0, {"cache_size": -7})])
    assert cells[0].variant.startswith("settings ") and cells[0].label != cells[1].label
