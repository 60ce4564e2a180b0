"""A candidate's capacity, measured on itself (issue 84): the largest multiple of the offered load at which every
line of its criterion holds, the applier's 0.85 busy share included; a step judged only once steady at its load."""
import pytest

from harness.results import RunResult
from harness.results.headroom import CapacityStep
from harness.results.trend import TrendResult
from harness.scenario.decision import load_decision
from harness.scenario.matrix import load_matrix
from harness.walks import capacity as cap
from harness.walks.sweep import CellOptions
from harness.walks.verdict.plan import criterion_plans
from harness.walks.verdict.walk import Walk

BOUND = 0.85


def _linear(busy_at_1x: float, seen: list):
    """A design whose applier's busy share is linear in the load, judged on the 0.85 line at every step."""
    def measure(m: float) -> CapacityStep:
        busy = busy_at_1x * m
        seen.append((m, busy))
        return CapacityStep(multiple=m, passed=busy < BOUND, busy=busy,
                            why=None if busy < BOUND else f"applier {busy:.0%} busy (< 85%)")
    return measure


@pytest.mark.parametrize("busy,low,high", [(0.42, 1.8, 2.1), (0.64, 1.2, 1.4)])
def test_a_designs_capacity_is_where_its_own_busy_share_meets_the_line(busy, low, high):
    seen = []
    got = cap.search(_linear(busy, seen), cap.first_multiple(busy, BOUND), BOUND)
    assert low <= got.multiple <= high and got.fails_at / got.multiple <= 1 + cap.RESOLUTION + 1e-9
    assert all((b < BOUND) == s.passed for (m, b), s in zip(sorted(seen), got.steps)), "the line at every step"
    assert len(seen) <= 3, "a linear busy share settles in a few steps"
    assert got.figure() == f"{got.multiple:.2f}x" and "busy" in got.binding()


def test_a_candidate_past_the_ceiling_carries_at_least_it_and_one_under_the_load_says_how_far():
    seen = []
    light = cap.search(_linear(0.1, seen), cap.first_multiple(0.1, BOUND), BOUND)
    assert light.at_least and light.multiple == cap.CEILING and light.figure() == "≥ 2.50x"
    heavy = cap.search(_linear(1.4, []), cap.first_multiple(1.4, BOUND), BOUND)
    assert heavy.multiple is not None and 0.5 <= heavy.multiple < 0.61, "a failing alternative's capacity under 1"


def test_without_a_busy_share_the_search_starts_at_the_band_and_brackets_the_line():
    """An engine in place: its p99 crosses 500 ms at 1.7x the load; no figure predicts it."""
    steps = []

    def measure(m):
        steps.append(m)
        return CapacityStep(multiple=m, passed=m < 1.7, p99_ms=300 * m)
    got = cap.search(measure, cap.first_multiple(None, BOUND), BOUND)
    assert steps[0] == cap.NO_FIGURE_START and got.multiple < 1.7 <= got.fails_at
    assert got.fails_at / got.multiple <= 1 + cap.RESOLUTION + 1e-9
    light = cap.search(lambda m: CapacityStep(multiple=m, passed=True), cap.NO_FIGURE_START, BOUND)
    assert light.multiple == cap.CEILING and light.at_least, "up to the ceiling, not short of it (2.3x)"


def _result(lag_at_start: int, busy: float, status="passed", thresholds=()) -> RunResult:
    return RunResult.model_validate({
        "version": 18, "run_id": "r", "engine": "sqlite", "scenario": "p99_5x", "profile": "ratio", "runtime": "local",
        "status": status, "scale": 1.0, "engine_version": "x", "plan": {}, "environment": {},
        "thresholds": [{"expr": e, "value": v, "passed": p} for e, v, p in thresholds],
        "metrics": {"commit_latency_ms": {"p99": 9.0}, "block_log": {
            "group_blocks": 1, "lag_bound_blocks": 5, "synced": True, "acknowledged_blocks": 2, "applied_rows": 10,
            "apply_utilisation": busy, "lag_at_start_blocks": lag_at_start, "apply_lag_blocks": {"p99": 12},
            "queryable_ms": {"p99": 1500.0}}}})


def test_a_step_that_fell_behind_in_its_warm_up_is_not_judged_on_the_blocks_after_it_stopped():
    """The reproduction of 12-02: 11 blocks behind at the clock, stopped after 2 blocks (0.84 s), '99.6% busy' over
    them. That is no steady state at the load: the step failed to carry it, and reports no figure of those blocks."""
    r = _result(11, 0.996, "failed", [("p99(apply_lag_blocks) < 5", 12, False)])
    step = cap.step_of(2.39, r, "p99_5x/x")
    assert not step.passed and not step.steady and "behind in its warm-up" in step.why
    assert step.busy is None and step.p99_ms is None and step.lag_p99_blocks is None
    ok = cap.step_of(1.5, _result(0, 0.6, "passed", [("last(apply_utilisation) < 0.85", 0.6, True)]), "p99_5x/y")
    assert ok.passed and ok.steady and ok.busy == 0.6 and ok.queryable_p99_ms == 1500.0
    busy = cap.step_of(2.0, _result(1, 0.9, "failed", [("last(apply_utilisation) < 0.85", 0.9, False)]), "p99_5x/z")
    assert not busy.passed and busy.steady and busy.why == "applier 90% busy (< 85%)"


def test_a_capacity_step_keeps_the_busy_share_line_and_raises_only_the_absolute_rate(tmp_path):
    """Before issue 84 a step at m let the applier be 100% busy: the 0.85 line applies at every step."""
    tree = load_decision()
    walk = Walk(tree, ["2g"], criterion_plans(tree, lambda sc: 600), CellOptions(runtime="local", profile="ratio"),
                tmp_path)
    design = load_matrix().engines["sqlite"].options["current_history_block_log"]
    (run,) = walk.criterion_runs(walk.criteria[0], "sqlite", {}, "leaf-x-at-1.90x", "2g", design,
                                 screen_blocks=60, load=1.9)
    (one,) = walk.criterion_runs(walk.criteria[0], "sqlite", {}, "leaf-x", "2g", design)
    assert "last(apply_utilisation) < 0.85" in run.plan.thresholds
    assert run.plan.block_log.utilisation_bound == 0.85
    assert run.plan.workload.block_interval_ms == pytest.approx(one.plan.workload.block_interval_ms / 1.9, abs=0.01)
    assert "rate(rows) > 10830" in run.plan.thresholds


def test_the_reference_cell_runs_its_full_blocks_never_stopped_early(tmp_path):
    from harness.walks.verdict.roles import reference_role
    tree = load_decision()
    walk = Walk(tree, ["2g"], criterion_plans(tree, lambda sc: 600),
                CellOptions(runtime="local", profile="ratio", early_abort=True), tmp_path)
    role = reference_role(tree.reference.blocks)
    (ref,) = walk.criterion_runs(walk.criteria[0], "sqlite", {}, "reference-1", "2g",
                                 screen_blocks=role.screen_blocks, fixed=True)
    (cand,) = walk.criterion_runs(walk.criteria[0], "sqlite", {}, "", "2g")
    assert not ref.plan.early_abort and cand.plan.early_abort


def test_the_closest_alternative_that_failed_has_its_capacity_measured_once_under_1x(tmp_path, monkeypatch):
    """Every engine fails everywhere (p99 900 ms); current ∪ history fails at 4g on a p99 of 600 ms, the closest
    of all: its capacity is measured there, once, 1x a known failure, and is under 1 (it carries 0.8x)."""
    from harness.walks.verdict import headroom
    from harness.walks.verdict.alternatives import closest_alternative
    from harness.walks.verdict.leaf import run_leaf
    from tests.unit.test_reproduce import PUBLISHED, _walk
    monkeypatch.setattr(headroom, "PUBLISHED", tmp_path / "none")
    monkeypatch.setattr(headroom, "reference_figure", lambda root, rec: 2000.0)
    ch = "leaf-current_history"
    walk = _walk(tmp_path, {**PUBLISHED, ("sqlite", ch, "4g", "capacity"): 0.8}, {("sqlite", ch, "4g"): 600.0})
    designs = {**walk.tree.leaf.designs, "sqlite": ["block_log", "current_history"]}    # none of them passes
    walk.tree = walk.tree.model_copy(update={"leaf": walk.tree.leaf.model_copy(update={"designs": designs})})
    walk.run()
    leaf = run_leaf(walk)
    before = len(walk.ran)
    alt = closest_alternative(walk, leaf)
    steps = walk.ran[before:]
    assert alt.engine == "sqlite" and alt.mem == "4g" and alt.closeness == 1.2 and "current ∪ history" in alt.what
    assert steps and all(t.startswith(f"{ch}-at-") and m == "4g" for _, t, m, _ in steps), "once, where closest"
    assert all(float(t.rsplit("-at-", 1)[1].rstrip("x")) < 1 for _, t, _, _ in steps), "1x is known to fail"
    assert 0.7 <= alt.capacity.multiple < 0.8 and alt.capacity.fails_at <= 1.0
    assert alt.says().startswith("the closest alternative, sqlite with current ∪ history") and "carries 0.7" in alt.says()


def test_over_a_pass_whose_busy_share_nears_the_line_the_next_step_is_just_past_it_not_the_ceiling():
    """The 5137m block log of 2026-12-05: 54% busy at 1x, 78% at 1.49x, 82% at 1.63x (sub-linear); the bracket's
    doubling then asked 2.5x, which fell 18 blocks behind in its warm-up. Its own busy share says the line is near."""
    seen = []

    def measure(m):
        busy = 0.54 * m ** 0.86                 # the measured sub-linear curve, near enough
        seen.append(m)
        return CapacityStep(multiple=m, passed=busy < BOUND, busy=busy)
    got = cap.search(measure, cap.first_multiple(0.54, BOUND), BOUND)
    assert cap.CEILING not in seen and len(seen) <= 4, seen
    assert got.fails_at / got.multiple <= 1 + cap.RESOLUTION + 1e-9


def test_no_step_runs_under_one_that_passed():
    """The 5137m block log of 12-05: 1.02x passed (59% busy), its busy share led the search to 1.40x (passed) and
    1.54x (failed, 86%); the bracket's fixed 1.12x then ran, 3.5 min, and could only pass again."""
    busy = {1.02: 0.588, 1.40: 0.789, 1.54: 0.86}
    seen = []

    def measure(m):
        seen.append(m)
        b = busy.get(round(m, 2), 0.56 * m)
        return CapacityStep(multiple=m, passed=b < BOUND, busy=b)
    got = cap.search(measure, 1.02, BOUND)
    passed_before = [max([x for x in seen[:i] if busy.get(round(x, 2), 0.56 * x) < BOUND], default=0)
                     for i in range(len(seen))]
    assert all(m > lo for m, lo in zip(seen, passed_before)), f"a step under one that passed: {seen}"
    assert got.multiple >= 1.40 and got.fails_at is not None


def test_a_candidate_that_passed_at_the_load_is_never_stepped_under_it():
    """12-05, 1284m: current ∪ history behind a block log passed every criterion at 1x (78% busy), failed at 1.04x
    (98%: not linear there); its busy share then led a step to 0.85x, which could only say what 1x had said."""
    seen = []

    def measure(m):
        seen.append(m)
        return CapacityStep(multiple=m, passed=m < 1.02, busy=0.983 if m >= 1.02 else 0.78 * m)
    got = cap.search(measure, cap.first_multiple(0.7773, BOUND), BOUND, passed_at_load=True)
    assert seen == [cap.first_multiple(0.7773, BOUND)] and min(seen) > 1.0
    assert got.multiple == 1.0 and got.fails_at == seen[0]


def _rising(busy: float, slope_per_h: float, at_horizon: float | None, horizon_s: float = 720) -> RunResult:
    """A candidate's full cell whose busy share rises with its database, carried to its size horizon."""
    r = _result(0, busy, "passed", [("last(apply_utilisation) < 0.85", busy, True)])
    t = r.thresholds[0].model_copy(update={"trend": TrendResult(
        method="ols", window_s=30, windows=20, slope_per_h=slope_per_h, ci95_per_h=(slope_per_h / 2, slope_per_h * 2),
        horizon_s=horizon_s, at_horizon=at_horizon)})
    return r.model_copy(update={"thresholds": [t]})


def _step(busy: float, measured_s: float = 90.0) -> RunResult:
    r = _result(0, busy, "passed", [("last(apply_utilisation) < 0.85", busy, True)])
    return r.model_copy(update={"metrics": r.metrics.model_copy(update={"measured_s": measured_s})})


def test_a_steps_busy_share_is_carried_by_the_candidates_own_rise_m_times_as_steep():
    """12-05 (AMD, 2568m): the design's 0.707 rose +0.37/h to 0.750 by 12 min (its size horizon); its steps, 60
    blocks from a fresh clone, read 69% at 1.14x and 83% at 1.33x and both 'passed' on those first minutes. Carried
    as the candidate's own share is (its database growing 1.33x as fast), 1.33x crosses 0.85; 1.14x holds."""
    growth = cap.Growth.of(_rising(0.707, 0.37, 0.750))
    over = cap.step_of(1.33, _step(0.83), "p99_5x/a", growth)
    assert not over.passed and over.busy == 0.83 and over.busy_at_horizon == pytest.approx(0.94, abs=0.01)
    assert "83% busy, 94% by 12 min as its database grows (< 85%)" in over.why
    under = cap.step_of(1.14, _step(0.69), "p99_5x/b", growth)
    assert under.passed and under.busy_at_horizon == pytest.approx(0.77, abs=0.01) and "77% carried" in under.says()
    assert cap.step_of(1.33, _step(0.83), "p99_5x/a").passed, "without a rise to carry, the step's own share stands"
    assert cap.Growth.of(_rising(0.96, -0.88, 0.80)) is None, "a share that falls (a warm-up's backlog) is not carried"
    assert cap.Growth.of(_rising(0.5, 0.3, None)) is None, "a trend carried nowhere (no horizon) carries no step"


def test_the_search_is_led_by_the_carried_share_and_settles_under_the_step_it_crosses():
    """A design linear in the load whose share rises 10% by the horizon at 1x: its capacity is where the carried
    share meets the line, under the one its first minutes' share alone would give."""
    growth = cap.Growth.of(_rising(0.64, 0.3, 0.70))

    def measure(m):
        return cap.step_of(m, _step(0.64 * m, 30.0), "p99_5x/x", growth)
    plain = cap.search(lambda m: CapacityStep(multiple=m, passed=0.64 * m < BOUND, busy=0.64 * m),
                       cap.first_multiple(0.64, BOUND), BOUND, passed_at_load=True)
    got = cap.search(measure, cap.first_multiple(0.70, BOUND), BOUND, passed_at_load=True)
    assert got.multiple < plain.multiple and all(s.busy_at_horizon < BOUND for s in got.steps if s.passed)
    assert got.fails_at is not None and got.fails_at / got.multiple <= 1 + cap.RESOLUTION + 1e-9
