"""scenarios/matrix.yaml (harness/scenario/matrix.py) and the matrix's choice of a combination (harness/walks/matrix.py)."""
import pytest

from harness import registry
from harness.errors import ConfigError
from harness.walks.matrix import P99, SERVICE, _row as matrix_row, answer, basis_of, best_combination
from harness.results import OptionRow, RunResult
from harness.scenario.matrix import MATRIX_FILE, load_matrix


def test_the_shipped_matrix_loads_and_sizes_from_mem():
    m = load_matrix()
    opts = m.engines["sqlite"].options
    assert opts["cache_25"].overrides("sqlite", 1 << 30, {}) == ["engines.sqlite.cache_size=256MB"]
    assert opts["sync_off"].overrides("sqlite", None, {}) == ['engines.sqlite.synchronous="OFF"']
    assert opts["writes_capped"].overrides("sqlite", None, {"workload.rows_per_block": 12000}) == \
        ["workload.rows_per_block=6000"]


@pytest.mark.parametrize("option, field", [
    ("{says: x, group: g, settings: {wal_autocheckpoint: -5}}", "engines.sqlite.options.bad.settings.wal_autocheckpoint"),
    ("{says: x, group: g, settings: {synchronous: SOMETIMES}}", "engines.sqlite.options.bad.settings.synchronous"),
    ("{says: x, group: g, settings: {no_such_pragma: 1}}", "engines.sqlite.options.bad.settings.no_such_pragma"),
    ("{says: x, group: g, sized: {no_such_pragma: 0.5}}", "engines.sqlite.options.bad.sized"),
    ("{says: x, group: g}", "engines.sqlite.options.bad"),
])
def test_an_option_that_is_no_valid_setting_is_refused_with_the_file_and_field(tmp_path, option, field):
    f = tmp_path / "matrix.yaml"
    f.write_text(f"engines:\n  sqlite:\n    options:\n      bad: {option}\n")
    with pytest.raises(ConfigError) as e:
        load_matrix(f)
    assert str(f) in str(e.value) and field in str(e.value), str(e.value)


def test_an_index_set_names_indexes_the_schema_has():
    assert "payloads_delete_index" in registry.index_names("sqlite", "bitemporal")
    with pytest.raises(ConfigError, match="workload.indexes: no_such_idx is not an index"):
        registry.ddl("sqlite", "bitemporal", ["no_such_idx"])
    lean = registry.ddl("sqlite", "bitemporal", ["payloads_delete_index"])
    assert lean.count("CREATE INDEX") == 1 and lean.count("CREATE TABLE") == 3


def _row(option, vs, passed=False, trade_off=None):
    return OptionRow(option=option, says=option, status="passed" if passed else "failed", p99_vs_baseline=vs,
                     helped=vs < 0.9, passed=passed, trade_off=trade_off)


def test_the_combination_takes_the_best_helpful_option_of_each_group_and_no_trade_off():
    m = load_matrix(MATRIX_FILE)
    em = m.engines["sqlite"]
    rows = [_row("baseline", 1.0), _row("cache_25", 0.85), _row("cache_75", 0.7), _row("autockpt_1000", 0.95),
            _row("autockpt_off_passive", 0.5), _row("sync_off", 0.2, trade_off="durability"), _row("mmap", 1.2)]
    assert best_combination(m, em, rows) == ["autockpt_off_passive", "cache_75"]     # in the matrix's order
    assert answer(rows) == "no option, alone or combined, meets every threshold"
    rows.append(_row("no_bitemporal", 0.3, passed=True, trade_off="history"))
    assert answer(rows).startswith("no option that gives nothing up is enough; only with a trade-off: no_bitemporal")


def _run(service_p50_ms: float, p99_ms: float, interval_ms: int = 2000) -> RunResult:
    return RunResult.model_validate({
        "run_id": "r", "engine": "sqlite", "scenario": "p99_5x", "profile": "ratio", "runtime": "local",
        "status": "failed", "scale": 1.0, "plan": {"workload": {"block_interval_ms": interval_ms}}, "environment": {},
        "integrity": {"ok": True}, "metrics": {"commit_latency_ms": {"count": 30, "p99": p99_ms},
                                               "service_time_ms": {"count": 30, "p50": service_p50_ms}}})


def test_a_saturated_baseline_is_judged_by_service_time_not_by_its_backlog():
    # a block costing 2.25 s every 2 s: p99 is the backlog since the clock started (32 s); 5% off the block's cost
    # shrinks that backlog by half, which is no gain beyond the noise in what a block costs
    base, slightly = _run(2250, 32000), _run(2140, 16000)
    assert base.saturated and basis_of(base) == SERVICE
    row = matrix_row("cache_75", "x", [], None, slightly, None, base, 0.1, SERVICE)
    assert row.p99_vs_baseline == 0.5 and row.service_p50_vs_baseline == 0.951 and row.helped is False
    assert matrix_row("mmap", "x", [], None, _run(1700, 1800), None, base, 0.1, SERVICE).helped is True
    # within the cadence, p99 is the criterion's own figure and the basis
    calm = _run(1500, 1900)
    assert not calm.saturated and basis_of(calm) == P99
    assert matrix_row("sync_full", "x", [], None, _run(1480, 1500), None, calm, 0.1, P99).helped is True
    # unless the cells measure a fixed window of blocks: the p99 of 20 blocks is their max
    assert basis_of(calm, by_blocks=True) == SERVICE
    assert matrix_row("sync_full", "x", [], None, _run(1480, 1500), None, calm, 0.1, SERVICE).helped is False


def test_significance_needs_two_values_a_side_and_a_real_difference():
    from harness.stats import significant, welch_t
    assert significant([1.0], [2.0]) is None
    assert significant([100, 101, 99], [120, 121, 119]) is True
    assert significant([100, 130, 80], [105, 125, 90]) is False
    t, df = welch_t([1, 2, 3], [4, 5, 6])      # equal variances: Welch's df is Student's n1 + n2 - 2
    assert round(t, 4) == -3.6742 and round(df, 6) == 4


def test_an_interrupted_matrix_still_writes_its_table_of_what_it_measured(tmp_path, monkeypatch):
    import harness.walks.matrix as hm
    from harness.results import CellRecord, load_matrix_run, write_json
    from harness.walks.sweep import CellOptions, SweepInterrupted

    settles = {}

    def baseline_then_interrupt(runs, sweep_json, meta, stop=None):
        cr = runs[0]                  # the baseline runs alone first; the next call is interrupted
        if len(runs) > 1:
            settles.update({r.cell.tag: (r.plan.settle_service_p50_ms, r.plan.settle_budget_s) for r in runs})
            raise SweepInterrupted(runs[1].dir.name)
        cr.dir.mkdir(parents=True)
        base = _run(2250, 32000)
        write_json(cr.dir / "result.json", base.model_copy(update={
            "metrics": base.metrics.model_copy(update={"measured_s": 48.0})}))
        write_json(cr.dir / "cell.json", CellRecord(
            cell_id=cr.cell_id, scenario=cr.cell.scenario, engine="sqlite", mem="256m", data_limit_bytes=256 << 20,
            scale=0.001, repeat=1, runtime="local", dir=cr.dir.name, state="complete", started_utc="now"))

    monkeypatch.setattr(hm, "run_cells", baseline_then_interrupt)
    opts = CellOptions(profile="smoke", runtime="local", data_root=str(tmp_path / "data"))
    assert hm.matrix("sqlite", "p99_5x", "256m", ["cache_25", "mmap"], opts, tmp_path) == hm.EXIT_RUN_FAILED
    [root] = tmp_path.glob("matrix-sqlite-p99_5x-*")
    m = load_matrix_run(root / "matrix.json")
    assert [(r.option, r.status) for r in m.rows] == [("baseline", "failed"), ("cache_25", "not run"),
                                                      ("mmap", "not run")]
    assert m.answer.startswith("incomplete: 1 of 3 cells measured") and m.basis == "service p50"
    # each option's cell settles under 0.9x the baseline's p50, or past 3x its clock (10 + 20 blocks at the
    # pace of its 20 measured ones in 48 s); the baseline does not
    assert settles == {"baseline": (None, None), "cache_25": (2025.0, 216.0), "mmap": (2025.0, 216.0)}
    table = (root / "matrix.md").read_text()
    assert "| baseline: the scenario at its memory policy | failed | 32,000 | 2,250 |" in table


def _mrow(option: str, vs: float | None, status="failed", trade_off=None, passed=False) -> OptionRow:
    return OptionRow(option=option, says=option, overrides=[], status=status, p99_ms=1000 * (vs or 1),
                     service_p50_ms=800 * (vs or 1), service_p50_vs_baseline=vs, p99_vs_baseline=vs,
                     trade_off=trade_off, passed=passed, helped=vs is not None and vs < 0.9)


def _matrix_file(engine: str, rows, answer="no option, alone or combined, meets every threshold"):
    from harness.results import MatrixFile
    return MatrixFile(engine=engine, scenario="p99_5x", profile="ratio", mem="2481m", noise=0.1,
                      basis="service p50", dir=f"/r/matrix-{engine}", updated_utc="now", rows=rows, answer=answer)


def test_matrices_side_by_side_name_each_engines_best_with_and_without_a_trade_off(tmp_path, monkeypatch):
    from harness.walks import matrices as hms
    from harness.results import load_matrices
    from harness.walks.sweep import CellOptions
    files = {
        "sqlite": _matrix_file("sqlite", [_mrow("baseline", None), _mrow("cache_75", 0.8), _mrow("ckpt_background", 0.6),
                                          _mrow("no_bitemporal", 0.4, trade_off="history", status="passed", passed=True),
                                          _mrow("mmap", None, status="not run")]),
        "postgres": _matrix_file("postgres", [_mrow("baseline", None), _mrow("wal_lz4", 1.05)],
                                 answer="incomplete: 2 of 8 cells measured; run the same command again to resume"),
        "duckdb": _matrix_file("duckdb", [_mrow("baseline", None)]),
    }
    ran = []
    monkeypatch.setattr(hms, "run_matrix", lambda e, *a: (ran.append(e), (1, files[e]))[1])
    rc = hms.matrices(["sqlite", "postgres", "duckdb"], "p99_5x", "2481m", CellOptions(profile="ratio"), tmp_path)
    assert rc == hms.EXIT_RUN_FAILED and ran == ["sqlite", "postgres"], "an interrupted matrix stops the walk"
    [root] = tmp_path.glob("matrices-p99_5x-*")
    mf = load_matrices(root / "matrices.json")
    sq, pg = mf.engines
    assert sq.best_clean.option == "ckpt_background" and sq.best_traded.option == "no_bitemporal"
    assert pg.best_clean.option == "wal_lz4" and pg.best_traded is None and pg.answer.startswith("incomplete")
    md = (root / "matrices.md").read_text()
    assert "| sqlite | baseline: p99 1,000 / p50 800 ms | ckpt_background: p99 600 / p50 480 ms (0.60x ✓) |" in md
    assert "no_bitemporal: p99 400 / p50 320 ms (0.40x ✓) PASS | history |" in md
    with pytest.raises(ConfigError, match="two engines or more"):
        hms.matrices(["sqlite"], "p99_5x", "2481m", CellOptions(profile="ratio"), tmp_path)


def test_a_row_says_which_rule_settled_its_cell():
    from harness.walks.matrix import table_markdown
    rows = [_mrow("baseline", 1.0), _mrow("cache_75", 1.05).model_copy(update={"settled_blocks": 11}),
            _mrow("mmap", 14.9).model_copy(update={"settled_blocks": 1, "settled_budget_s": 216.0})]
    table = table_markdown(_matrix_file("sqlite", rows))
    assert "| cache_75: cache_75 | failed, settled after 11 blocks |" in table
    assert "| mmap: mmap | failed, settled after 1 block (every one over, past its 216 s budget) |" in table
    assert "or once its clock had run its budget" in table
