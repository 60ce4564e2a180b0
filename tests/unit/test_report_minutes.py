"""An hour minute by minute (issue 85: ack, queryable and read p99 per minute, the applier's busy share, the
database's growth), read back from a cell's own files: each minute's figures are its own, a read's p99 comes from
the interval log, a queryable figure pairs each block's acknowledgement with its own lag and with no other."""
from types import SimpleNamespace

from harness.report.collect import CellData
from harness.report.minutes import minutes, minutes_table
from harness.results.hlog import new_histogram
from harness.runner.metrics import IntervalLog

T0 = 40.0       # the first measured block's due time, in the run's own clock


def write_cell(run_dir, lags_ms=None):
    blocks = ["block_index,kind,due_s,start_s,end_s,commit_ms,service_ms,rows"]
    for i in range(60):                                   # 2 minutes of 2 s blocks; minute 2's ack is 10x
        ms = 5.0 if i < 30 else 50.0
        blocks.append(f"{i},ops,{T0 + 2 * i},{T0 + 2 * i},{T0 + 2 * i + ms / 1000},{ms},{ms},100")
    (run_dir / "blocks.csv").write_text("\n".join(blocks) + "\n")
    lags_ms = [100.0] * 30 + [1000.0] * 30 if lags_ms is None else lags_ms
    design = ["metric,t_s,value"] + [f"apply_lag_ms,{2 * i + 0.005},{v}" for i, v in enumerate(lags_ms)]
    design += [f"apply_lag_blocks,{2 * i + 0.005},{0 if i < 30 else 1}" for i in range(60)]
    design += ["apply_utilisation,15,0.4", "apply_utilisation,45,0.5", "apply_utilisation,75,0.8",
               "apply_utilisation,105,0.9"]
    (run_dir / "design.csv").write_text("\n".join(design) + "\n")
    ts = ["t_s,phase,db_bytes"] + [f"{T0 - 5},warmup,1"] + [f"{T0 + s},measure,{1000 + s}" for s in range(0, 120, 10)]
    (run_dir / "timeseries.csv").write_text("\n".join(ts) + "\n")
    with open(run_dir / "read.hlog", "w") as f:
        log = IntervalLog(f, 1_700_000_000.0, "test")
        for s in range(int(T0) - 10, int(T0) + 120):      # 10 s of warm-up reads at 9 s, then 1 s and 3 ms
            h = new_histogram()
            for _ in range(100):
                h.record_value(9_000_000 if s < T0 else (1_000 if s < T0 + 60 else 3_000))
            log.write(h, float(s), float(s + 1))
    return CellData(run_dir, SimpleNamespace())


def test_each_minute_has_its_own_figures(tmp_path):
    first, second = minutes(write_cell(tmp_path))
    assert (first.minute, first.blocks, second.blocks) == (1, 30, 30)
    assert (first.ack_p99_ms, second.ack_p99_ms) == (5.0, 50.0)
    assert (first.queryable_p99_ms, second.queryable_p99_ms) == (105.0, 1050.0)
    assert (first.lag_p99_blocks, second.lag_p99_blocks) == (0.0, 1.0)
    assert (round(first.busy_share, 2), round(second.busy_share, 2)) == (0.45, 0.85)
    assert (first.db_bytes, second.db_bytes) == (1050, 1110)


def test_reads_come_from_the_interval_log_and_warm_up_is_not_a_minute(tmp_path):
    first, second = minutes(write_cell(tmp_path))
    assert round(first.reads_per_s) == round(second.reads_per_s) == 100
    assert abs(first.read_p99_ms - 1.0) < 0.01 and abs(second.read_p99_ms - 3.0) < 0.01   # never the 9 s


def test_lags_that_do_not_pair_one_to_one_with_blocks_give_no_queryable_figure(tmp_path):
    rows = minutes(write_cell(tmp_path, lags_ms=[100.0] * 59))
    assert [r.queryable_p99_ms for r in rows] == [None, None]
    table = minutes_table(CellData(tmp_path, SimpleNamespace()))
    assert "queryable p99 (ms)" not in table.headers and "read p99 (ms)" in table.headers


def test_a_cell_without_blocks_has_no_minutes(tmp_path):
    assert minutes(CellData(tmp_path, SimpleNamespace())) == []
    assert minutes_table(CellData(tmp_path, SimpleNamespace())) is None
