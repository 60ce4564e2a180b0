"""`make compare` over block-log results (issue 77): the applier's busy share, its lag, the index's distance behind
the acknowledgement, the drain and the acknowledgement's sync, B over A."""
from harness.compare import compare
from harness.results import RunResult, write_json


def _run(path, busy: float, lag_ms: float) -> None:
    path.mkdir(parents=True)
    write_json(path / "result.json", RunResult.model_validate({
        "run_id": path.name, "engine": "sqlite", "scenario": "p99_5x", "profile": "ratio", "runtime": "local",
        "status": "passed", "scale": 1.0, "plan": {}, "memory": {}, "environment": {},
        "metrics": {"commit_latency_ms": {"count": 300, "p50": 4.0, "p99": 12.0, "max": 20.0},
                    "block_log": {"group_blocks": 1, "lag_bound_blocks": 5, "synced": True, "acknowledged_blocks": 300,
                                  "applied_rows": 1_800_000, "apply_utilisation": busy, "drain_s": 0.4,
                                  "apply_lag_ms": {"count": 300, "p50": lag_ms / 4, "p99": lag_ms, "max": lag_ms},
                                  "apply_lag_blocks": {"count": 300, "p50": 0, "p99": 1, "max": 2},
                                  "ack_phases_ms": {"write": 0.3, "sync": 5.3}}}}))


def test_compare_reads_a_block_logs_figures(tmp_path):
    _run(tmp_path / "a", busy=0.84, lag_ms=1600)
    _run(tmp_path / "b", busy=0.995, lag_ms=4600)
    (cell,) = compare([tmp_path / "a"], [tmp_path / "b"])
    rows = {r["figure"]: r for r in cell["figures"]}
    assert rows["applier busy"]["ratio"] == round(0.995 / 0.84, 3)
    assert rows["index behind the ack, p99"]["a"] == 1600 and rows["index behind the ack, p99"]["b"] == 4600
    assert {"apply lag p99", "drain after the clock", "ack sync, mean"} <= set(rows)
