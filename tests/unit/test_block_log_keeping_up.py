"""A block log's applier judged on keeping up (harness/scenario/plan.py block_log_thresholds): over a short phase
an applier slower than the blocks trails by only a few of them, under every lag bound; its busy share and its
drain say what the lag cannot yet. The engine behind the design is a stub whose apply takes a set time: this
tests the harness's own judging, not an engine."""
import pickle
import time

import pytest

from harness.designs.block_log import BlockLogEngine
from harness.engine_api import LoggedBlock
from harness.runner.counters import RunState
from harness.runner.design_figures import design_figures
from harness.runner.outcome import metric_source
from harness.scenario.plan import BlockLogPlan, block_log_thresholds
from harness.scenario.thresholds import evaluate, parse_threshold

INTERVAL_S = 0.05
BLOCKS = 40
ROWS = 100


class _FixedApply:
    """Applies nothing; each group takes `apply_s`, and is durable once applied."""

    def __init__(self, apply_s: float) -> None:
        self.apply_s, self.mark = apply_s, 0

    def open(self, settings, data_dir) -> None:
        pass

    def create_schema(self, variant, indexes=None) -> None:
        pass

    def applied_mark(self) -> int:
        return self.mark

    def apply_group(self, prepared, mark) -> None:
        time.sleep(self.apply_s * len(prepared))
        self.mark = mark

    def durable_mark(self) -> int:
        return self.mark

    def block_phases(self):
        return None

    def counters(self):
        return None

    def storage(self):
        return None

    def close(self, discard=False) -> None:
        pass


def _judged(share_of_offered_rate: float, tmp_path) -> dict[str, bool]:
    """Each block-log threshold's outcome for an applier that manages this share of the offered blocks."""
    plan = BlockLogPlan(group_blocks=1, lag_bound_blocks=5, utilisation_bound=0.85, sync=False)
    design = BlockLogEngine(_FixedApply(INTERVAL_S / share_of_offered_rate), group_blocks=1, sync=False,
                            lag_bound_blocks=plan.lag_bound_blocks)
    design.open({}, tmp_path)
    design.create_schema("simple")
    state = RunState()
    state.measure_start_ns = start = time.monotonic_ns()
    try:
        for n in range(1, BLOCKS + 1):
            time.sleep(max(0.0, start / 1e9 + (n - 1) * INTERVAL_S - time.monotonic_ns() / 1e9))
            design.apply_block(LoggedBlock(n, ROWS, pickle.dumps(n)))
        state.window_end_ns = end = start + int(BLOCKS * INTERVAL_S * 1e9)
        time.sleep(max(0.0, end / 1e9 - time.monotonic_ns() / 1e9))
        state.design_figures, state.design_hists = design_figures(design, start, end, design.drain())
    finally:
        design.close()
    state.rows = state.rows_in_window = BLOCKS * ROWS
    thresholds = [parse_threshold(t) for t in block_log_thresholds(plan, INTERVAL_S * 1000)]
    return {r["expr"]: r["passed"] for r in evaluate(thresholds, metric_source(state))}


@pytest.mark.serial
def test_an_applier_at_95_percent_of_the_offered_rate_fails_on_its_busy_share_though_its_lag_passes(tmp_path):
    judged = _judged(0.95, tmp_path)
    assert judged["p99(apply_lag_blocks) < 5"], judged          # the lag alone would pass it
    assert not judged["last(apply_utilisation) < 0.85"], judged
    assert not all(judged.values())


@pytest.mark.serial
def test_an_applier_with_room_to_spare_passes_every_block_log_threshold(tmp_path):
    judged = _judged(2.0, tmp_path)          # an apply in half the cadence
    assert all(judged.values()), judged


def _stopped_at(share_of_offered_rate: float, blocks: int, tmp_path) -> dict | None:
    """Feed `blocks` blocks on the cadence to an applier at this share of the offered rate, an early abort
    watching the block log's thresholds as a cell's writer does; the abort's reason, or None if it ran out."""
    from harness.runner.abort import EarlyAbort
    plan = BlockLogPlan(group_blocks=1, lag_bound_blocks=5, utilisation_bound=0.85, sync=False)
    abort = EarlyAbort([parse_threshold(t) for t in block_log_thresholds(plan, INTERVAL_S * 1000)], blocks)
    design = BlockLogEngine(_FixedApply(INTERVAL_S / share_of_offered_rate), group_blocks=1, sync=False,
                            lag_bound_blocks=plan.lag_bound_blocks)
    design.open({}, tmp_path)
    design.create_schema("simple")
    start = time.monotonic()
    try:
        for n in range(1, blocks + 1):
            time.sleep(max(0.0, start + (n - 1) * INTERVAL_S - time.monotonic()))
            design.apply_block(LoggedBlock(n, ROWS, pickle.dumps(n)))
            now = time.monotonic() - start
            if abort.check(now, 1.0, 1.0, now, n, design.ack_lag_blocks()):
                return abort.reason
    finally:
        design.close(discard=True)
    return None


def test_an_applier_that_falls_behind_stops_the_cell_early_and_one_that_keeps_up_runs_to_the_end(tmp_path):
    """Half the offered rate: the lag passes 5 blocks by block ~12 and the p99 over 100 blocks allows one block
    over it, so the cell stops near block 14, not after all 100 (a cell at ratio: minutes, not ten)."""
    reason = _stopped_at(0.5, 100, tmp_path / "behind")
    assert reason is not None and reason["threshold"] == "p99(apply_lag_blocks) < 5", reason
    assert reason["block"] < 30, reason
    assert _stopped_at(2.0, 60, tmp_path / "ahead") is None
