"""The knee search's logic over a fake engine whose pass/fail is known (harness/walks/bracket.py, harness/walks/knee.py):
it finds the known knee on every axis, to within the resolution; an errored step is neither a pass nor a fail."""
import pytest

from harness.walks.bracket import Bracket, verdict_of, walk
from harness.scenario.thresholds import scaled_thresholds
from harness.walks.knee import KneeFile, axis_for, sentence
from harness.results import KneeStep


class FakeProbe:
    scale = 1.0


def _search(axis, start, passes, errors=(), near=False):
    """Walk the axis with a fake cell: passes(value) says pass or fail; values in `errors` error once each; near:
    the start is an earlier knee (START_ROWS)."""
    errored, seen = set(errors), []

    def run_step(x, confirming):
        v = axis.from_x(x)
        seen.append((v, confirming))
        if v in errored:
            errored.discard(v)
            return "error"
        return "pass" if passes(v) else "fail"
    return walk(axis.bracket(start, near=near), run_step, 30, snap=axis.snap_x), seen


def test_rows_knee_is_the_largest_passing_block_within_ten_percent():
    axis = axis_for("rows", FakeProbe(), 12000)
    w, seen = _search(axis, 12000, lambda rows: rows <= 5300)
    knee = axis.from_x(w.knee)
    assert w.converged and knee <= 5300 and 5300 / knee < 1.1
    assert seen[0] == (12000, False) and seen[-1] == (knee, True)     # the start first, the knee confirmed last


def test_mem_knee_is_the_smallest_passing_mem_and_nowhere_is_an_answer():
    axis = axis_for("mem", FakeProbe(), 1241 << 20)
    w, seen = _search(axis, 1241 << 20, lambda mem: mem >= 7000 << 20)
    knee = axis.from_x(w.knee)
    assert knee >= 7000 << 20 and knee / (7000 << 20) < 1.1 and int(knee) % (1 << 20) == 0
    assert seen[0][0] == 1241 << 20
    w, seen = _search(axis, 1241 << 20, lambda mem: False)
    # tried up to the machine's bound, or to within the resolution of it
    assert w.knee is None and w.converged and seen[-1][0] * 1.1 >= axis.ceiling
    assert len(seen) == len({v for v, _ in seen}), "no value run twice"


def test_the_bound_is_not_run_when_a_step_within_the_resolution_of_it_has_answered():
    calls = []
    w = walk(Bracket([100], 95, 1000, 0.1), lambda x, c: calls.append(x) or "fail", 10)
    assert calls == [100] and w.knee is None and w.converged          # 95 is within 10% of a failure
    calls = []
    w = walk(Bracket([100], 1, 105, 0.1), lambda x, c: calls.append((x, c)) or "pass", 10)
    assert calls == [(100, False), (100, True)] and w.knee == 100      # 105 is within 10% of a pass
    calls = []
    w = walk(Bracket([100], 1, 130, 0.1), lambda x, c: calls.append(x) or ("fail" if x > 100 else "pass"), 10)
    assert calls[:2] == [100, 130]                                    # 130 is not: it is run


def test_a_knee_started_where_an_earlier_one_was_found_tries_its_neighbours_first():
    """A passing step is 11 minutes at the ratio profile: a 1x and a 2x knee in one sitting took ~2.5 hours when
    each started at 850 rows a block and doubled from it (12-07)."""
    axis = axis_for("rows", FakeProbe(), 12000)
    w, seen = _search(axis, 1854, lambda rows: rows <= 1900, near=True)
    assert seen == [(1854, False), (2030, False), (1854, True)] and axis.from_x(w.knee) == 1854
    w, seen = _search(axis, 1854, lambda rows: rows <= 1800, near=True)      # just below: the neighbour below next
    assert seen == [(1854, False), (1693, False), (1693, True)] and axis.from_x(w.knee) == 1693
    # moved by more than the resolution, it is found as from any start, to within it, and confirmed
    for truth in (700, 5000):
        w, seen = _search(axis, 1854, lambda rows: rows <= truth, near=True)
        knee = axis.from_x(w.knee)
        assert w.converged and knee <= truth and truth / knee < 1.1 and seen[-1] == (knee, True)
    w, seen = _search(axis, 1854, lambda rows: rows <= 1900, near=False)
    assert seen[0] == (1854, False) and len(seen) > 4      # a start of the scenario's own is a guess, not a knee


def test_an_error_step_is_neither_a_pass_nor_a_fail():
    axis = axis_for("rows", FakeProbe(), 1000)
    # 1000 errors once: run again, not taken as a failure (which would send the search down)
    w, seen = _search(axis, 1000, lambda rows: rows <= 3000, errors=[1000])
    assert [v for v, _ in seen[:3]] == [1000, 1000, 2000] and 3000 / axis.from_x(w.knee) < 1.1
    b = Bracket([1000], 10, 16000, 0.1)
    calls = []
    w = walk(b, lambda x, c: calls.append(x) or "error", 10)
    assert w.inconclusive_at == 1000 and w.knee is None and calls == [1000, 1000]
    assert not b.passed and not b.failed
    assert [verdict_of(s) for s in ("passed", "failed", "oom", "error", "build_failed")] == \
        ["pass", "fail", "fail", "error", "error"]


def test_a_knee_refuted_by_its_confirmation_moves_the_search_below_it():
    b = Bracket([100], 1, 100, 0.1)
    outcomes = {100: ["pass", "fail"]}        # passes as a step, fails its confirmation
    w = walk(b, lambda x, c: outcomes[x].pop(0) if x in outcomes else ("pass" if x <= 60 else "fail"), 30,
             snap=round)
    assert w.knee is not None and 60 / 1.1 <= w.knee <= 60


def test_a_rows_step_keeps_the_rate_criterion_as_a_share_of_the_offered_rate():
    assert scaled_thresholds(["p99(commit_ms) < 500", "rate(rows) > 5000", "rate(rows) >= 90%"], 0.5) == \
        ("p99(commit_ms) < 500", "rate(rows) > 2500", "rate(rows) >= 90%")


def _file(axis, steps, knee, **kw):
    return KneeFile(axis=axis, unit="-", scenario="p99_5x", profile="ratio", engine="sqlite", mem="2482m", scale=1.0,
                    criteria=["p99(commit_ms) < 500"], floor=kw.get("floor", 187), ceiling=kw.get("ceiling", 192000),
                    start=12000, resolution=0.1, started_utc="x", steps=steps, knee=knee, converged=True)


def _s(value, verdict, confirming=False, **kw):
    return KneeStep(value=value, confirming=confirming, repeat=1, status={"pass": "passed"}.get(verdict, "failed"),
                    verdict=verdict, p99_ms=kw.get("p99", 400.0), rows_per_s=value / 2, cell="c",
                    failed_on=[] if verdict == "pass" else ["p99(commit_ms) < 500 (measured 900)"])


@pytest.mark.parametrize("axis,steps,knee,says", [
    ("rows", [_s(12000, "fail"), _s(6000, "pass"), _s(6000, "pass", True)], 6000,
     "carries up to 6,000 rows/block, 3,000 rows/s (p99 400 ms); fails at 12,000 rows/block"),
    ("rows", [_s(12000, "fail"), _s(187, "fail")], None, "passes nowhere, not even at 187 rows/block"),
])
def test_the_sentence_says_the_knee_and_what_bounded_it(axis, steps, knee, says):
    assert says in sentence(_file(axis, steps, knee))


def test_a_scale_knee_that_moves_its_states_in_reaches_about_twice_as_far_on_the_same_disk(monkeypatch):
    """Copying, a step needs its state and a clone; moving the state in (DROP_STATES=1), the state and what the
    cell writes: a 1x SQLite state of ~10 GiB on ~78 GiB free stops short of 4x copying and passes 5x moving."""
    from types import SimpleNamespace as NS

    from harness.walks import knee as hk
    from harness.scenario.plan import resolve_plan
    from harness.state import build
    gib = 2 ** 30
    probe = resolve_plan("p99_5x", "sqlite", profile="ratio")
    monkeypatch.setattr(build, "ensure", lambda plan: (None, NS(data_bytes=10 * gib), False))
    monkeypatch.setattr(hk.shutil, "disk_usage", lambda path: NS(free=78 * gib))
    copying, moving = hk.disk_scale_bound(probe), hk.disk_scale_bound(probe, taking=True)
    assert copying < 4 < 5 < moving and 1.6 < moving / copying < 2.0, (copying, moving)


def test_a_rows_step_names_first_what_bound_it_a_warm_up_backlog_then_the_line_that_stopped_it():
    """12-06, the answer's knee at 1x: 20,182 rows a block stopped 6 s in, its applier 9 blocks behind at the clock;
    the success table said 'bound by' four lines, the first 'rate(applied_rows) >= 95% (measured 0)'."""
    from harness.walks.knee import _failed_on
    from tests.unit.test_capacity import _result
    r = _result(9, 0.999, "failed", [("rate(applied_rows) >= 95%", 0.0, False),
                                     ("p99(apply_lag_blocks) < 5", 9.007, False),
                                     ("last(apply_utilisation) < 0.85", 0.999, False)])
    r = r.model_copy(update={"thresholds": [t.model_copy(update={"early_abort": "lag" in t.expr})
                                            for t in r.thresholds]})
    said = _failed_on(r)
    assert said[0] == "fell 9 blocks behind in its warm-up (lag bound 5)"
    assert said[1] == "p99(apply_lag_blocks) < 5 (measured 9.007)" and len(said) == 4
    kept_up = _result(0, 0.9, "failed", [("last(apply_utilisation) < 0.85", 0.9, False)])
    assert _failed_on(kept_up) == ["last(apply_utilisation) < 0.85 (measured 0.9)"]


def test_a_rows_knee_started_elsewhere_keeps_the_scenarios_range_and_lines(tmp_path, monkeypatch):
    """12-07: started with SET=workload.rows_per_block=1200, the 1x knee scaled `rate(rows) > 5000` (written for the
    scenario's 12,000 a block) from 1,200 and failed every step on the rate; START_ROWS starts it there, and each
    step's lines are the scenario's at that step's block size."""
    from types import SimpleNamespace as NS

    from harness.errors import ConfigError
    from harness.walks import knee as hk
    from harness.walks.sweep import CellOptions, SweepInterrupted
    seen = []

    def plan_cells(cells, opts, root, repeats):
        seen.append((cells[0].overrides, opts.thresholds))
        return [NS(cell=cells[0])]

    def one_step(bracket, run_step, max_steps, snap):
        run_step(1200, False)
        raise SweepInterrupted("after one step")
    monkeypatch.setattr(hk, "plan_cells", plan_cells)
    monkeypatch.setattr(hk, "run_cell", lambda cr, label: None)
    monkeypatch.setattr(hk, "step_figures", lambda cr, value, confirming: _s(value, "fail"))
    monkeypatch.setattr(hk, "walk", one_step)
    opts = CellOptions(profile="ratio", runtime="local")
    assert hk.knee("p99_5x", "sqlite", "rows", opts, tmp_path, mem="1284m", start_rows=1200) != 0
    [(overrides, lines)] = seen
    assert "workload.rows_per_block=1200" in overrides and "load.age_rows_per_block=12000" in overrides
    assert "rate(rows) > 500" in lines and "p99(commit_ms) < 500" in lines     # 5000 x 1,200 / 12,000
    knee_file = KneeFile.model_validate_json(next(tmp_path.glob("knee-*/knee.json")).read_text())
    assert (knee_file.start, knee_file.floor, knee_file.ceiling) == (1200, 187.5, 192000)
    with pytest.raises(ConfigError, match="START_ROWS=200000: a rows knee searches 187.5 to 192000"):
        hk.knee("p99_5x", "sqlite", "rows", opts, tmp_path, mem="1284m", start_rows=200000)
    with pytest.raises(ConfigError, match="START_ROWS: starts a rows knee"):
        hk.knee("p99_5x", "sqlite", "mem", opts, tmp_path, start_rows=1200)


def test_each_max_writes_point_starts_at_the_knee_before_it_and_a_resumed_walk_finds_the_same(tmp_path, monkeypatch):
    from harness.results import write_json
    from harness.walks import writes as hw
    from harness.walks.knee import KNEE_FILE, knee_dir, search_opts
    from harness.walks.sweep import CellOptions
    starts, knees = [], {1.0: 1854, 2.0: 1693}

    def fake_knee(scenario, engine, axis, opts, root, mem, scale, drop_states, start_rows):
        starts.append((scale, start_rows))
        where = knee_dir(scenario, engine, axis, search_opts(opts, drop_states), root, mem, scale, start_rows)
        where.mkdir(parents=True, exist_ok=True)
        k = knees[scale]
        write_json(where / KNEE_FILE, _file("rows", [_s(k, "pass"), _s(k, "pass", True)], k).model_copy(
            update={"scale": scale, "mem": mem, "complete": True, "finished_utc": "2026-12-07T10:00:00Z"}))
    monkeypatch.setattr(hw, "knee", fake_knee)
    opts = CellOptions(profile="ratio", runtime="local")
    points = [(1.0, "1284m"), (2.0, "2568m"), (3.0, "3852m")]
    knees[3.0] = 1500
    assert hw.writes("p99_5x", "sqlite", opts, tmp_path, points, start_rows=850) == 0
    assert starts == [(1.0, 850), (2.0, 1854), (3.0, 1693)]
    starts.clear()
    assert hw.writes("p99_5x", "sqlite", opts, tmp_path, points, start_rows=850) == 0   # resumed: the same folders
    assert starts == [(1.0, 850), (2.0, 1854), (3.0, 1693)]
    assert len(list(tmp_path.glob("knee-*"))) == 3


def _latency_walk(start, knee_rows, near=True, power=1.3, informed=True, limit=500.0):
    """A fake rows knee whose p99 grows as a power of the rows (1x, 12-07: 9% more rows, 31% more p99) and meets
    its limit at knee_rows: (the knee found, the steps run)."""
    axis = axis_for("rows", FakeProbe(), 12000)
    p99 = {}

    def run_step(x, confirming):
        p99[x] = limit * (axis.from_x(x) / knee_rows) ** power
        return "pass" if p99[x] < limit else "fail"
    seen = []
    load = (lambda x: p99[x] / limit if x in p99 else None) if informed else None
    w = walk(axis.bracket(start, near=near, load=load), lambda x, c: seen.append((x, c)) or run_step(x, c), 30,
             snap=axis.snap_x)
    return axis.from_x(w.knee), seen


def test_a_step_that_missed_its_line_by_a_third_sends_the_next_step_near_the_knee_not_halfway():
    """12-07, 5x: 1,400 rows a block failed with p99 658 ms; halving went to 1,279, then 640, then bisected back:
    seven cells of ~25 min. Where the p99 grows with the rows, 1,400 x 500/658 is the next step's guess."""
    knee, seen = _latency_walk(1400, 1100)
    blind_knee, blind = _latency_walk(1400, 1100, informed=False)
    assert knee <= 1100 and 1100 / knee < 1.1 and blind_knee <= 1100 and 1100 / blind_knee < 1.1
    assert seen[-1] == (knee, True) and len(seen) <= 4 < len(blind), (seen, blind)
    assert 1000 < seen[1][0] < 1200, "the guess, not the neighbour below (1,279) nor half (700)"


@pytest.mark.parametrize("start,truth", [(1400, 1100), (850, 2214), (12000, 1854), (1854, 1854), (300, 9000),
                                         (5000, 260)])
def test_a_guided_search_finds_the_knee_a_blind_one_finds_in_no_more_steps(start, truth):
    for power in (0.6, 1.0, 1.3, 3.0):          # the latency's growth with the rows, less or more than in proportion
        knee, seen = _latency_walk(start, truth, power=power)
        blind_knee, blind = _latency_walk(start, truth, power=power, informed=False)
        assert knee <= truth and truth / knee < 1.1 and seen[-1] == (knee, True), (start, truth, power, seen)
        assert len(seen) <= len(blind), (start, truth, power, seen, blind)


def test_a_load_that_says_nothing_of_the_knee_never_misleads_the_search():
    """A failure on a line that does not grow with the rows (a rate: its load below 1), a lag that leaps (its load
    100x): the search still finds the knee, never steps further than halving, doubling or bisecting would."""
    axis = axis_for("rows", FakeProbe(), 12000)
    for load in (lambda x: 0.5, lambda x: 100.0, lambda x: 1e-6, lambda x: None):
        seen = []
        w = walk(axis.bracket(3000, load=load), lambda x, c: seen.append(x) or ("pass" if x <= 777 else "fail"), 30,
                 snap=axis.snap_x)
        knee = axis.from_x(w.knee)
        assert knee <= 777 and 777 / knee < 1.1
        assert all(b / a <= 2.0001 for a, b in zip(seen, seen[1:]) if b > a) and \
            all(a / b <= 2.0001 for a, b in zip(seen, seen[1:]) if b < a)


def test_a_steps_load_is_its_tightest_upper_line_over_its_limit():
    from types import SimpleNamespace as NS

    from harness.walks.knee import last_load, load_of
    t = lambda expr, value: NS(expr=expr, value=value)    # noqa: E731
    r = NS(thresholds=[t("p99(commit_ms) < 500", 658.0), t("rate(rows) > 5000", 100.0),
                       t("p99(apply_lag_blocks) < 5", 1.0), t("rate(rows) >= 95%", 10.0)])
    assert load_of(r) == pytest.approx(658 / 500)
    assert load_of(NS(thresholds=[t("rate(rows) > 5000", 1.0)])) is None and load_of(None) is None
    steps = [_s(1000, "pass").model_copy(update={"load": 0.9}),
             _s(1000, "fail", True).model_copy(update={"load": 1.05})]
    assert last_load(steps, 1000) == 1.05 and last_load(steps, 999) is None


def test_a_latency_with_a_fixed_part_is_followed_by_the_power_through_two_failures():
    """5x, 12-07: a checkpoint's ~300 ms rode on every few blocks whatever their rows, so 1,400 and 1,050 rows a block
    failed at 658 and 607 ms. A fake p99 = 330 ms + 0.25 ms a row (knee at 680): the second failure's guess is the
    power through both, not the proportion (which creeps down 15% a step)."""
    axis = axis_for("rows", FakeProbe(), 12000)
    p99 = {}

    def search(start, informed):
        seen = []

        def run_step(x, confirming):
            seen.append(axis.from_x(x))
            p99[x] = 330 + 0.25 * axis.from_x(x)
            return "pass" if p99[x] < 500 else "fail"
        load = (lambda x: p99[x] / 500 if x in p99 else None) if informed else None
        w = walk(axis.bracket(start, load=load), run_step, 30, snap=axis.snap_x)
        return axis.from_x(w.knee), seen
    knee, seen = search(1400, True)
    _, blind = search(1400, False)
    assert knee <= 680 and 680 / knee < 1.1 and len(seen) < len(blind), (seen, blind)
    assert seen[2] < 680 * 1.1, "the third step, from the power through the first two, within 10% of the knee"


def test_a_step_another_walk_of_the_point_measured_is_adopted_only_as_this_walks_own_cell_on_this_boot(tmp_path,
                                                                                                      monkeypatch):
    """12-07, 5x: two walks restarted nearer the knee (START_ROWS 1,400, 1,050, 620) each re-measured from nothing;
    a step is ~25 min there. Another walk's step counts only where it is the cell this walk would run."""
    from types import SimpleNamespace as NS

    from harness.walks import knee_prior as kp
    here, other, elsewhere = (tmp_path / n for n in ("knee-p99_5x-sqlite-rows-aaaa", "knee-p99_5x-sqlite-rows-bbbb",
                                                     "knee-p99_5x-sqlite-mem-cccc"))
    for d in (here, other, elsewhere):
        d.mkdir()
        (d / kp.KNEE_FILE).write_text("{}")
    steps = [_s(1400, "fail"), _s(1050, "fail"), _s(620, "pass"), _s(620, "pass", True), _s(700, "fail"),
             _s(800, "fail")]
    steps = [s.model_copy(update={"cell": f"p99_5x/rows{int(s.value)}{'-c' if s.confirming else ''}"}) for s in steps]
    boots = {1400: "this", 1050: "this", 620: "this", 700: "another", 800: "this"}
    ids = {1400: "id1400", 1050: "id1050", 620: "id620", 700: "id700", 800: "changed-code"}
    monkeypatch.setattr(kp, "boot_id", lambda: "this")
    monkeypatch.setattr(kp, "load_knee", lambda p: NS(steps=steps) if p.parent == other else None)
    monkeypatch.setattr(kp, "completed_record", lambda d, cid: NS(status="x") if d.parent.parent == other and
                        cid == ids.get(int(d.name.removeprefix("rows").split("-")[0])) else None)
    monkeypatch.setattr(kp, "load_result", lambda p: NS(environment={"boot_id": boots[int(p.parent.name[4:].split(
        "-")[0])]}))
    planned = []

    def plan_step(value):
        planned.append(value)
        return NS(cell_id=f"id{int(value)}", dir=here / "p99_5x" / f"rows{int(value)}")
    for value in (1400, 1050, 620, 700, 800):
        (other / "p99_5x" / f"rows{value}").mkdir(parents=True)
        (other / "p99_5x" / f"rows{value}" / "result.json").write_text(str(value))
    assert kp.siblings(here) == [other]           # not the mem knee's folder, nor its own
    assert kp.adopt(here, plan_step) == [1400, 1050, 620]     # not the confirmation, another boot, other code
    assert (here / "p99_5x" / "rows1050" / "result.json").read_text() == "1050"
    assert not (here / "p99_5x" / "rows700").exists() and not (here / "p99_5x" / "rows800").exists()
