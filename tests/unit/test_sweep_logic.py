"""The harness's own logic behind sweeps and verdicts: early-abort rules, cell identity, the decision file,
starting-state checks and repeat statistics. Engines and runs are exercised in tests/cli/test_sweep.py."""
import json
import random
from pathlib import Path

import pytest

from harness.scenario.decision import DECISION_FILE, load_decision
from harness.errors import ConfigError
from harness.runner.abort import EarlyAbort, expected_measured_blocks
from harness.runner.metrics import BlockLog
from harness.scenario.plan import resolve_plan
from harness.scenario.thresholds import parse_threshold
from harness.stats import spread, summarize
from harness.walks.sweep import cell_identity, starting_state


def _abort(exprs, expected):
    return EarlyAbort([parse_threshold(e) for e in exprs], expected)


def _first_abort(ab: EarlyAbort, values_ms, interval_s=0.1):
    for i, v in enumerate(values_ms):
        if ab.check((i + 1) * interval_s, v, v, (i + 1) * interval_s, i + 1):
            return i
    return None


def test_max_aborts_on_the_first_block_over():
    assert _first_abort(_abort(["max(commit_ms) < 100"], None), [10, 20, 99, 150, 10]) == 3


def test_whole_phase_percentile_aborts_only_when_the_final_count_cannot_pass():
    # 100 blocks expected: p99 < 50 survives one block over 50 and fails at the second.
    ab = _abort(["p99(commit_ms) < 50"], 100)
    assert _first_abort(ab, [10] * 10 + [500] + [10] * 10 + [500] + [10] * 5) == 21
    assert ab.reason == {"threshold": "p99(commit_ms) < 50", "measured_s": 2.2, "block": 22}


def test_unthrottled_whole_phase_percentile_and_rates_never_abort():
    ab = _abort(["p99(commit_ms) < 50", "rate(rows) > 5000", "p50(commit_ms) > 1"], None)
    assert _first_abort(ab, [500] * 50) is None


def test_a_cell_settles_once_its_p50_cannot_beat_the_limit_and_not_before():
    # 20 blocks expected, settle under 100 ms: the 11th block at or over 100 decides it (p50's rank is 10),
    # whatever the first blocks were; a thousand-ms threshold that still passes does not stop it
    ab = EarlyAbort([parse_threshold("max(commit_ms) < 1000")], 20, settle_service_p50_ms=100)
    assert _first_abort(ab, [50] * 9 + [150] * 11) == 19
    ab = EarlyAbort([], 20, settle_service_p50_ms=100)
    assert _first_abort(ab, [150] * 11 + [50] * 9) == 10
    assert ab.reason is None and ab.settled == {"service_p50_ms_not_below": 100, "measured_s": 1.1, "block": 11}
    # nine blocks over with the rest under: it may still help, so every block runs
    ab = EarlyAbort([], 20, settle_service_p50_ms=100)
    assert _first_abort(ab, [150] * 9 + [50] * 11) is None and ab.settled is None
    # an abort is an abort, not a settle; an unthrottled writer (no final count) never settles
    ab = EarlyAbort([parse_threshold("max(commit_ms) < 120")], 20, settle_service_p50_ms=100)
    assert _first_abort(ab, [150] * 20) == 0 and ab.settled is None and ab.reason["block"] == 1
    assert not EarlyAbort([], None, settle_service_p50_ms=100)


def test_a_cell_past_its_budget_with_every_block_over_settles_and_not_otherwise():
    # 20 blocks expected, limit 100 ms, budget 3 s of clock: blocks end every 0.1 s here, so the clock passes
    # 3 s at the 30th call; _first_abort's clock is the block count's, warm-up left out, so shift it
    def first(values, budget_s=3.0, start_s=2.95):
        ab = EarlyAbort([], 20, settle_service_p50_ms=100, settle_budget_s=budget_s)
        for i, v in enumerate(values):
            if ab.check(start_s + 0.1 * i, v, v, 0.1 * (i + 1), i + 1):
                return i, ab.settled
        return None, ab.settled
    i, settled = first([3000] * 20)             # every block far over: the first past the budget ends it
    assert i == 1 and settled == {"every_block_over_ms": 100, "budget_s": 3.0, "measured_s": 0.2, "block": 2}
    assert first([3000, 50] + [3000] * 18)[0] == 11, "one block under: only the p50 rule may settle it"
    assert first([3000] * 20, start_s=0.0)[0] == 10, "within the budget: the p50 rule's 11th block"
    assert first([3000] * 20, budget_s=None)[0] == 10
    assert not EarlyAbort([], None, settle_budget_s=3.0), "a budget alone settles nothing"


def test_a_value_within_hdr_precision_of_the_limit_is_not_over():
    assert _first_abort(_abort(["max(commit_ms) < 100"], None), [100.1, 100.15]) is None


@pytest.mark.parametrize("seed", range(6))
def test_windowed_abort_agrees_with_the_exact_worst_window(seed):
    """Abort happens iff the post-run worst window (what the threshold reports) is over the limit."""
    rng = random.Random(seed)
    values = [rng.choice([10.0] * 30 + [900.0]) for _ in range(400)]
    log = BlockLog()
    for i, v in enumerate(values):
        end = (i + 1) * 0.1
        log.add(end - v / 1000, end - v / 1000, end, 1, "normal")
    worst = log.worst_window_percentile_ms(95, 5, "commit_ms", 0.0)
    aborted = _first_abort(_abort(["p95(commit_ms) over 5s < 500"], None), values) is not None
    assert aborted == (worst > 500)


def test_expected_blocks_match_the_writers_schedule():
    for interval_ms, warm_s, measure_s in [(100, 1, 10), (50, 1, 8), (500, 15, 120), (333, 0.5, 7.3)]:
        interval_ns, warm, end = int(interval_ms * 1e6), int(warm_s * 1e9), int((warm_s + measure_s) * 1e9)
        due = [i * interval_ns for i in range(100_000) if i * interval_ns < end]
        assert expected_measured_blocks(interval_ms, warm_s, measure_s) == sum(d >= warm for d in due)
    assert expected_measured_blocks(0, 1, 10) is None


def test_the_decision_file_holds_the_reference_tree():
    tree = load_decision()
    assert [s.engine for s in tree.steps] == ["sqlite", "libsql", "postgres", "duckdb"]
    assert "revisit" in tree.otherwise.lower()
    crit = {c.scenario: c for c in tree.criteria}
    assert "p99(commit_ms) < 500" in crit["p99_5x"].thresholds and crit["p99_5x"].target.scale == 5.0
    assert "p99(commit_ms) < 500" in crit["reorg"].thresholds


@pytest.mark.parametrize("edit, expected", [
    (("engine: duckdb", "engine: mysql"), "steps.3.engine: unknown engine 'mysql'; allowed: duckdb, libsql"),
    (("scenario: reorg", "scenario: nope"), "criteria.1.scenario: unknown scenario 'nope'"),
    (("p99(commit_ms) < 500\", \"rate", "p99(commit_ms) < soon\", \"rate"), "criteria.0.thresholds: [0] malformed"),
    (("otherwise:", "colour: red\notherwise:"), "colour: unknown field 'colour'; allowed: description, steps"),
    (("otherwise:", "other:"), "otherwise: required field is missing"),
    (("bands: {latency: 0.15,", "bands: {latency: 1.5,"), "confirm: bands.latency: 1.5 is not a share of the line"),
    (("bands: {latency: 0.15,", "bands: {latncy: 0.15,"), "confirm.bands.latncy"),
])
def test_a_bad_decision_file_names_the_file_and_the_field(tmp_path, edit, expected):
    bad = tmp_path / "decision.yaml"
    bad.write_text(DECISION_FILE.read_text().replace(*edit, 1))
    with pytest.raises(ConfigError) as e:
        load_decision(bad)
    assert str(bad) in str(e.value) and expected in str(e.value)


def _plan(tmp_path: Path, **kw):
    return resolve_plan("reorg", "sqlite", profile="smoke", results_root=tmp_path, **kw)


def test_cell_identity_ignores_the_attempt_and_follows_the_plan_and_build(tmp_path):
    a, b = _plan(tmp_path), _plan(tmp_path)
    assert a.run_id != b.run_id
    assert cell_identity(a, "image:x") == cell_identity(b, "image:x")
    assert cell_identity(a, "image:x") != cell_identity(a, "image:y")
    assert cell_identity(a, "image:x") != cell_identity(_plan(tmp_path, scale=0.002), "image:x")
    assert cell_identity(a, "image:x") != cell_identity(_plan(tmp_path, early_abort=True), "image:x")
    assert cell_identity(a, "image:x") != cell_identity(_plan(tmp_path, thresholds=["max(commit_ms) < 9"]), "image:x")


def test_thresholds_given_to_a_plan_replace_the_scenarios_and_are_validated(tmp_path):
    assert _plan(tmp_path, thresholds=["p99(commit_ms) < 5"]).thresholds == ["p99(commit_ms) < 5"]
    with pytest.raises(ConfigError, match="thresholds"):
        _plan(tmp_path, thresholds=["p99(commit_ms) <<< 5"])


def test_starting_state_flags_a_cell_whose_load_lost_rows():
    from harness.results import CellRecord
    digest = {"payloads": "10:aa", "string_attributes": "150:bb", "numeric_attributes": "90:cc"}
    counts = {"payloads": 10, "string_attributes": 150, "numeric_attributes": 90}
    cells = [CellRecord(cell_id=str(i), scenario="reorg", engine="sqlite", mem=None, data_limit_bytes=None,
                        scale=0.001, runtime="local", dir=f"c{i}", state="complete", load_digest=digest,
                        load_row_counts=counts) for i in range(3)]
    assert starting_state(cells) == {"reorg@0.001": {"cells": 3, "same": True}}
    cells[1] = cells[1].model_copy(update={"load_row_counts": {**counts, "payloads": 9}})
    assert starting_state(cells)["reorg@0.001"] == {"cells": 3, "same": False, "row_counts_differ": ["c1"]}
    cells[1] = cells[1].model_copy(update={"load_row_counts": counts, "load_digest": {**digest, "payloads": "10:ab"}})
    assert starting_state(cells)["reorg@0.001"]["same"] is False


def test_a_result_of_an_unknown_version_is_refused(tmp_path):
    """Every reader goes through one loader, which refuses what it does not know rather than guess."""
    from harness.results import load_result, load_sweep, load_verdict
    for name, load, known in (("result.json", load_result, "1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20"), ("sweep.json", load_sweep, "1"),
                              ("verdict.json", load_verdict, "1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12")):
        (tmp_path / name).write_text('{"version": 99}')
        with pytest.raises(ConfigError, match=f"{name}: version 99; this harness reads version {known} only"):
            load(tmp_path / name)
    assert load_result(tmp_path / "missing.json") is None


def test_a_version_1_result_is_still_read(tmp_path):
    """Versions 2 and 3 only added fields with defaults: the engine's library, driver and related versions; its counters."""
    from harness.results import load_result
    (tmp_path / "result.json").write_text(json.dumps({
        "version": 1, "run_id": "r", "engine": "sqlite", "scenario": "reorg", "profile": "smoke",
        "runtime": "local", "status": "passed", "scale": 0.001, "engine_version": "SQLite 3.40.1",
        "plan": {}, "environment": {}, "metrics": {}}))
    r = load_result(tmp_path / "result.json")
    assert r.version == 1 and r.engine_library is None and r.engine_related_versions == {} \
        and r.metrics.engine_counters is None


def test_spread_and_the_noisy_flag():
    assert spread([100.0]) is None
    assert spread([95.0, 100.0, 105.0]) == pytest.approx(0.1)
    assert summarize([95.0, 100.0, 105.0])["noisy"] is True
    assert summarize([99.0, 100.0, 101.0]) == {"n": 3, "median": 100.0, "min": 99.0, "max": 101.0,
                                              "spread": 0.02, "noisy": False}


@pytest.mark.parametrize("n", [160, 360])            # the smoke and quick block counts
@pytest.mark.parametrize("extra_over", [0, 1])
def test_early_abort_agrees_with_the_final_p99(n, extra_over):
    """The abort ranks as the summary does (HdrHistogram: round half up): with as many blocks over the
    limit as the final p99 tolerates it never aborts, and with one more it aborts and p99 fails."""
    from harness.runner.metrics import new_histogram, percentile_rank
    over = n - percentile_rank(99, n) + extra_over
    values = [900.0] * over + [100.0] * (n - over)
    random.Random(n + extra_over).shuffle(values)
    aborted = _first_abort(_abort(["p99(commit_ms) < 500"], n), values) is not None
    h = new_histogram()
    for v in values:
        h.record_value(int(v * 1000))
    final_p99_ms = h.get_value_at_percentile(99) / 1000
    assert aborted == (final_p99_ms >= 500) == bool(extra_over), (over, final_p99_ms)


def _hour_abort(rise_ms_per_h: float, noise_ms: float = 8.0, blocks: int = 300):
    """A 2 s cadence whose p99 line holds for every block but rises: (aborted at block, the reason, the points)."""
    ab = EarlyAbort([parse_threshold("p99(commit_ms) < 500")], blocks, horizon_s=3600)
    rng = random.Random(5)
    points = []
    for i in range(blocks):
        due_s = 2.0 * i
        v = 350 + rise_ms_per_h * due_s / 3600 + rng.uniform(-noise_ms, noise_ms)
        points.append((due_s, v))
        if ab.check(due_s + v / 1000, v, v, due_s + v / 1000, i + 1):
            return i + 1, ab.reason, points
    return None, ab.reason, points


def test_a_line_held_on_every_block_but_rising_past_it_by_the_hour_stops_once_its_interval_says_so():
    """SQLite with its checkpoints after every block, 12-05 at 5137m: all 300 blocks under 500 ms (p99 407), failed at
    the phase's end on its rise, +370 ms/h [225, 516], after its full 10 minutes. Stopped on the trend from the 10th
    window up, once even the slope's lower bound crosses by the hour; the end's own test then fails it too."""
    from harness.runner.trends import trend_of
    block, reason, points = _hour_abort(370)
    assert block is not None and 150 <= block < 300, block        # 10 windows (300 s) at the earliest, not the end
    assert reason["threshold"] == "p99(commit_ms) < 500" and "lower bound" in reason["trend"]
    phase = points[-1][0]
    end = trend_of(points, "p99", phase - phase % 30, 3600, parse_threshold("p99(commit_ms) < 500"))
    assert end.would_fail, "the phase's own end, on the blocks it ran, fails it as well"
    # flat, or rising too slowly to cross by the hour: every block runs
    assert _hour_abort(0)[0] is None and _hour_abort(60)[0] is None
    # no hour to carry it to: no trend rule
    assert EarlyAbort([parse_threshold("p99(commit_ms) < 500")], 300).trends == []


def _share_abort(rise_per_h: float, at_start: float = 0.6, blocks: int = 300):
    """A block log's applier whose busy share holds under 0.85 in every window but rises; (aborted at block, the
    reason, the windows the design would give the end's trend)."""
    line = parse_threshold("last(apply_utilisation) < 0.85")
    rng = random.Random(7)
    noise = {i: rng.uniform(-0.02, 0.02) for i in range(blocks)}
    share = lambda a, b: at_start + rise_per_h * (a + b) / 2 / 3600 + noise[int(a // 30)]    # noqa: E731
    ab = EarlyAbort([line], blocks, horizon_s=3600, share=share)
    for i in range(blocks):
        measured_s = 2.0 * i + 0.003
        if ab.check(measured_s, 3.0, 3.0, measured_s, i + 1, 0):
            return i + 1, ab.reason, [((k + 0.5) * 30, share(k * 30, (k + 1) * 30)) for k in range(int(measured_s // 30))]
    return None, ab.reason, []


def test_a_busy_share_held_in_every_window_but_rising_past_its_line_by_the_hour_stops_early():
    """12-05: SQLite's block log at 2568m and 5137m held its 0.85 busy line over all 300 blocks and failed at the end
    on its rise, 10 minutes each. Stopped on the same windows' trend once its lower bound crosses by the hour; the
    end's own trend fails it too. Flat, or with no applier to read, every block runs."""
    from harness.runner.trends import trend_of
    block, reason, windows = _share_abort(0.6)
    assert block is not None and 150 <= block < 300, block
    assert reason["threshold"] == "last(apply_utilisation) < 0.85" and "lower bound" in reason["trend"]
    end = trend_of(windows, "last", windows[-1][0] + 15, 3600, parse_threshold("last(apply_utilisation) < 0.85"))
    assert end.would_fail
    assert _share_abort(0.0)[0] is None and _share_abort(0.1)[0] is None
    ab = EarlyAbort([parse_threshold("last(apply_utilisation) < 0.85")], 300, horizon_s=3600,
                    share=lambda a, b: None)      # an engine in place: no applier apart
    assert not any(ab.check(2.0 * i, 3.0, 3.0, 2.0 * i, i + 1) for i in range(300)), "no applier: no rule"


def test_a_line_held_but_rising_is_said_as_a_rise_not_as_stalls():
    """12-05: 'stalls: 0 of 300 blocks over 500 ms' was the walk's word for a cell that failed on its trend alone."""
    from harness.results import RunResult
    from harness.walks.verdict.answer import _rising
    trend = {"method": "m", "window_s": 30, "windows": 20, "slope_per_h": 370.4, "ci95_per_h": [224.9, 515.9],
             "horizon_s": 3600, "at_horizon": 724.6, "would_fail": True}
    r = RunResult.model_validate({
        "version": 18, "run_id": "r", "engine": "sqlite", "scenario": "p99_5x", "profile": "ratio", "runtime": "local",
        "status": "failed", "scale": 1.0, "engine_version": "x", "plan": {}, "environment": {},
        "thresholds": [{"expr": "p99(commit_ms) < 500", "value": 407.0, "passed": False, "trend": trend}],
        "metrics": {"commit_latency_ms": {"p99": 407.0}}})
    assert _rising(r) == ("rising: p99(commit_ms) < 500 held over the blocks measured (407) but rises +370/h "
                          "[+225, +516], 725 by 60 min")
    # a share keeps its digits (12-05's block log at 2568m printed "(1) but rises +0/h [+0, +1], 1 by 60 min")
    share = trend | {"slope_per_h": 0.312, "ci95_per_h": [0.05, 0.574], "at_horizon": 1.02}
    busy = r.model_copy(update={"thresholds": [r.thresholds[0].model_copy(update={
        "expr": "last(apply_utilisation) < 0.85", "value": 0.71,
        "trend": type(r.thresholds[0].trend).model_validate(share)})]})
    assert _rising(busy) == ("rising: last(apply_utilisation) < 0.85 held over the blocks measured (0.71) but rises "
                             "+0.312/h [+0.05, +0.574], 1.02 by 60 min")
    over = r.model_copy(update={"thresholds": [r.thresholds[0].model_copy(update={"value": 650.0})]})
    assert _rising(over) is None, "over its line already: not a rise but the stalls or slowness it shows"
