"""Sustained means sustained (issue 76): a figure that grows over the measured phase is carried to the criterion's
hour. A least-squares slope over 30 s windows, its interval widened for autocorrelation (Newey-West)."""
import random

from harness.designs.block_log_figures import trend
from harness.results import ThresholdResult
from harness.runner.counters import RunState
from harness.runner.trends import phase_points, phase_s, with_trends
from harness.scenario.thresholds import parse_threshold
from harness.trend import fit, windowed


def _state(points: dict, phase_s: float = 600.0) -> RunState:
    st = RunState()
    st.t0_ns, st.measure_start_ns = 0, 10 * 10**9
    st.window_end_ns = st.measure_start_ns + int(phase_s * 1e9)
    st.design_points = points
    return st


def _lag(growth_blocks: float, seed: int = 1, phase_s: float = 600.0) -> list[tuple[float, float]]:
    """The lag at each acknowledgement (every 2 s): 0-1 blocks of noise on a line that gains growth_blocks."""
    rnd = random.Random(seed)
    return [(t, round(growth_blocks * t / phase_s + rnd.random())) for t in range(0, int(phase_s), 2)]


def _judged(points, expr, horizon_s):
    th = parse_threshold(expr)
    values = [v for _, v in points]
    first = ThresholdResult(expr=expr, value=max(values), passed=th.passes(max(values)), judged="passed")
    st = _state({th.metric: points})
    (r,) = with_trends([first], [th], phase_points(st), phase_s(st), horizon_s)
    return first, r


def test_a_lag_growing_2_blocks_in_600_s_passes_todays_bound_and_fails_within_the_hour():
    points = _lag(1.9)
    assert trend(points) < 2, "today's growth bound (last(apply_lag_growth_blocks) < 2) passes it"
    first, r = _judged(points, "p99(apply_lag_blocks) < 5", 3600)
    assert first.passed, "its p99 over the phase is under the bound of 5"
    assert not r.passed and r.judged == "failed" and r.note.startswith("would fail within the hour")
    assert r.trend.would_fail and r.trend.ci95_per_h[0] > 0 and r.trend.at_horizon >= 5
    assert r.trend.windows == 20 and "Newey-West" in r.trend.method


def test_a_flat_noisy_lag_and_an_unset_horizon_fail_nothing():
    _, flat = _judged(_lag(0.0, seed=3), "p99(apply_lag_blocks) < 5", 3600)
    assert flat.passed and flat.trend is not None and not flat.trend.would_fail
    _, unjudged = _judged(_lag(1.9), "p99(apply_lag_blocks) < 5", None)
    assert unjudged.passed and unjudged.trend.at_horizon is None and unjudged.trend.slope_per_h > 0


def test_autocorrelated_noise_widens_the_interval():
    """A slow cycle (a checkpoint every 4 windows) around a flat line: independent errors would call its fitted
    slope significant more often than Newey-West does."""
    xy = [(i * 30 + 15.0, (1.0 if (i // 4) % 2 else 0.0) + 0.01 * i) for i in range(20)]
    f = fit(xy)
    n = len(xy)
    mx = sum(x for x, _ in xy) / n
    resid = [y - f.at(x) for x, y in xy]
    iid_se = (sum(e * e for e in resid) / (n - 2) / sum((x - mx) ** 2 for x, _ in xy)) ** 0.5
    assert (f.hi_per_s - f.lo_per_s) / 2 > 2.101 * iid_se, "wider than the interval that assumes independence"


def test_windows_take_the_thresholds_aggregate():
    pts = [(t, float(t % 30)) for t in range(0, 120)]
    assert windowed(pts, 120, "max") == [(15.0, 29.0), (45.0, 29.0), (75.0, 29.0), (105.0, 29.0)]
    assert windowed(pts, 120, "p50")[0] == (15.0, 14.0)
    assert fit(windowed(pts, 90, "max")) is None, "3 windows: too few to judge"


def test_a_screens_four_windows_report_a_trend_and_judge_nothing():
    """A 60-block screen (120 s, 4 windows) with the same growth: its trend is said, never carried 30x to the hour."""
    points = _lag(1.9, phase_s=120.0)
    th = parse_threshold("p99(apply_lag_blocks) < 5")
    first = ThresholdResult(expr=th.expr, value=1.0, passed=True, judged="passed")
    st = _state({th.metric: points}, phase_s=120.0)
    (r,) = with_trends([first], [th], phase_points(st), phase_s(st), 3600)
    assert r.trend is not None and r.trend.windows == 4 and r.passed and not r.trend.would_fail


def test_a_busy_share_at_a_fifth_of_the_criterions_scale_is_carried_to_a_fifth_of_its_hour_and_a_lag_to_all_of_it():
    """A ratio cell (1x) of a 5x criterion writes the hour's rows a second into a fifth of the rows: its database grows
    5x as fast relative to its size, so a figure that follows its size (the applier's busy share, a block's latency)
    reaches the hour's state at 720 s. 2026-12-05 at 1284m: 0.393 rising +0.41/h, carried to 60 min 0.765 (the
    band's edge), to 12 min ~0.44; the 5x hour itself (2026-12-02) rose +0.064/h. A backlog grows with time: 3600 s."""
    from harness.scenario.spec import Phases
    ph = Phases(measure_s=600, horizon_s=3600, horizon_scale=5)
    size = ph.size_horizon(1.0)
    assert size == (720.0, "the database's growth over 60 min at scale 5")
    assert ph.size_horizon(5.0) == (3600, None) and Phases(measure_s=600, horizon_s=3600).size_horizon(1.0)[0] == 3600
    assert ph.size_horizon(0.01)[0] == 600, "a smoke cell's trend is never carried short of its own phase"
    rnd = random.Random(4)
    busy = [(t + 15.0, 0.33 + 0.41 * t / 3600 + rnd.uniform(-0.01, 0.01)) for t in range(0, 600, 30)]
    th_busy, th_lag = parse_threshold("last(apply_utilisation) < 0.85"), parse_threshold("p99(apply_lag_blocks) < 5")
    st = _state({"apply_utilisation": busy, "apply_lag_blocks": _lag(1.9)})
    firsts = [ThresholdResult(expr=t.expr, value=v, passed=True, judged="passed") for t, v in ((th_busy, 0.39),
                                                                                           (th_lag, 2.0))]
    b, lag = with_trends(firsts, [th_busy, th_lag], phase_points(st), phase_s(st), 3600, size)
    assert b.trend.horizon_s == 720 and 0.4 < b.trend.at_horizon < 0.5 and "at 12 min (the database's growth" in \
        b.trend.says()
    whole = with_trends(firsts, [th_busy, th_lag], phase_points(st), phase_s(st), 3600)[0]
    assert whole.trend.at_horizon > 0.7, "carried to the whole hour, as before"
    assert lag.trend.horizon_s == 3600 and lag.trend.horizon_of is None and not lag.passed
