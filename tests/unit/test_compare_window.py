"""`compare --window`: two runs over windows of their measured phases, from their own per-block and per-second
files (harness/windows.py). The files here are written by hand: the window's arithmetic is the harness's own."""
from pathlib import Path

import pytest

from harness.compare_window import compare_windows, render_windows
from harness.errors import ConfigError
from harness.windows import parse_window, series

CADENCE_S, T0_S = 2.0, 100.0


def _run(d: Path, commit_ms, busy, blocks: int = 300) -> Path:
    """A block log's run of `blocks` blocks at a 2 s cadence; commit_ms(t) and busy(t) by phase second."""
    d.mkdir()
    with open(d / "blocks.csv", "w") as f:
        f.write("block_index,kind,due_s,start_s,end_s,commit_ms,service_ms,rows,phase_statements_ms,phase_commit_ms,"
                "phase_checkpoint_ms,phase_other_ms,cpu_user_ms,cpu_sys_ms\n")
        for i in range(blocks):
            due, ms = T0_S + i * CADENCE_S, commit_ms(i * CADENCE_S)
            f.write(f"{i},ops,{due},{due},{due + ms / 1000},{ms},{ms},12000,0,0,0,{ms},,\n")
    with open(d / "design.csv", "w") as f:
        f.write("metric,t_s,value\n")
        f.writelines(f"apply_utilisation,{t + 15},{busy(t)}\n" for t in range(0, blocks * 2, 30))
        f.writelines(f"apply_lag_blocks,{i * CADENCE_S},0\n" for i in range(blocks))
    with open(d / "timeseries.csv", "w") as f:
        f.write("t_s,phase,db_bytes,mem_bytes,wal_bytes,read_iops,write_bytes_per_s\n")
        f.writelines(f"{T0_S + s},measure,{10 << 30},{1 << 30},{64 << 20},100,{1 << 20}\n" for s in range(blocks * 2))
    return d


def _figure(cmp: dict, name: str) -> dict:
    return next(r for r in cmp["figures"] if r["figure"] == name)


def test_a_stand_ins_window_beside_an_hours_first_window_and_its_whole(tmp_path):
    stand_in = _run(tmp_path / "1x", lambda t: 10.0, lambda t: 0.4)
    # the hour: 10 ms for its first 600 s, then rising by 1 ms a minute; its applier 0.4 busy, then rising too
    hour = _run(tmp_path / "5x", lambda t: 10.0 if t < 600 else 10.0 + (t - 600) / 60,
                lambda t: 0.4 if t < 600 else 0.4 + (t - 600) / 3600, blocks=1800)
    first = compare_windows(stand_in, hour, parse_window("0:600"), parse_window("0:600"))
    assert first["b"]["seconds"] == 600
    assert _figure(first, "commit p99")["ratio"] == 1.0
    assert _figure(first, "applier busy")["ratio"] == 1.0
    assert not _figure(first, "commit p99")["trend_b_per_h"]["significant"]     # flat: its interval holds 0
    whole = compare_windows(stand_in, hour, parse_window("0:600"), parse_window("0:"))
    assert whole["b"]["seconds"] == 3600
    p99 = _figure(whole, "commit p99")
    rank = 1782                  # nearest rank: ceil(0.99 * 1800), the block due at (rank - 1) * 2 s
    assert p99["b"] == pytest.approx(10 + ((rank - 1) * CADENCE_S - 600) / 60) and p99["ratio"] > 5
    trend = p99["trend_b_per_h"]
    assert trend["significant"] and trend["slope"] > 0
    assert _figure(whole, "applier busy")["b"] > 0.4
    assert _figure(whole, "memory charged / database")["b"] == pytest.approx(0.1)
    assert _figure(whole, "committed rows/s")["b"] == pytest.approx(6000)
    text = render_windows(whole, markdown=True)
    assert "| commit p99 | p99 |" in text and "(ns)" in text


def test_a_window_names_what_is_wrong_with_it(tmp_path):
    with pytest.raises(ConfigError, match=r"--window '600:0': END must be after START"):
        parse_window("600:0")
    with pytest.raises(ConfigError, match=r"--window 'ten': expected START:END"):
        parse_window("ten")
    run = _run(tmp_path / "r", lambda t: 5.0, lambda t: 0.1, blocks=10)
    with pytest.raises(ConfigError, match=r"no measured block is due in 900-end s"):
        series(run, parse_window("900:"))
    with pytest.raises(ConfigError, match=r"blocks.csv\): .*one run's folder|one run's folder"):
        compare_windows(tmp_path, run, parse_window("0:"), parse_window("0:"))
