"""The reference's success table (issue 85): every figure names its command and sitting, or is refused; a projected
point is its own type, printed and drawn as projected, never as measured."""
import math

import matplotlib
import pytest
from pydantic import ValidationError

from harness.report.success.curve import Measured, curve_rows, draw, fit, project
from harness.errors import ConfigError
from harness.report.success.table import Figure, SuccessTable
from harness.results import load_curve

matplotlib.use("Agg")


def figure(**over) -> Figure:
    base = dict(question="degradation", system="answer", says="service p50 700 ms", scale=1.0, mem="1284m",
                command="make knee ENGINE=sqlite AXIS=scale PROFILE=ratio", sitting="2026-12-05",
                run="runs/knee-scale/knee.json")
    return Figure(**{**base, **over})


@pytest.mark.parametrize("field", ["command", "sitting"])
def test_a_figure_without_its_command_or_sitting_is_refused(field):
    base = figure().model_dump()
    del base[field]
    with pytest.raises(ValidationError, match=field):
        Figure(**base)
    with pytest.raises(ValidationError, match=field):
        figure(**{field: " "})


def test_a_sitting_must_be_a_day():
    with pytest.raises(ValidationError, match="YYYY-MM-DD"):
        figure(sitting="today")


def test_the_table_has_the_references_five_rows_and_both_systems():
    t = SuccessTable(figures=[figure(question="max_writes", system="reference", says="6,000 rows/s, p99 480 ms")])
    rows = t.rows()
    assert [r[0].split("?")[0] for r in rows] == ["Max writes", "Max reads", "Combined sweet spot",
                                                  "Degradation curve", "V1 feasibility"]
    assert rows[0][1].startswith("6,000 rows/s, p99 480 ms (1x, MEM 1284m; [2026-12-05](runs/knee-scale/knee.json))")
    assert rows[0][2] == "not measured yet" and rows[1][1] == "not measured yet"
    with pytest.raises(ValidationError, match="two figures"):
        SuccessTable(figures=[figure(), figure()])


def points(f, sizes=(1.25, 2.5, 5, 10, 20, 30, 50)) -> list[Measured]:
    return [Measured(s / 10, s, f(s), f"p99_5x/sqlite-{s:g}", "2026-12-05") for s in sizes]


def test_a_projected_point_is_never_printed_as_measured():
    pts = points(lambda s: 300 + 80 * math.log(s) + (5 if s in (2.5, 20) else -5 if s in (5, 30) else 0))
    q = project(pts, 10.0)
    rows = curve_rows(pts, [q], "ms")
    assert [r[3].startswith("measured") for r in rows] == [True] * len(pts) + [False]
    assert rows[-1][3].startswith("projected, not measured") and rows[-1][2].startswith("projected")
    assert all(f"{q.value:,.4g}" not in r[2] for r in rows[:-1])
    assert figure(projected=True).cell().startswith("projected: ")
    with pytest.raises(ValueError, match="names its run and its sitting"):
        Measured(10.0, 100.0, q.value, "", "2026-12-05")


def test_a_projected_point_is_never_drawn_on_the_measured_line():
    import matplotlib.pyplot as plt
    pts = points(lambda s: 300 + 80 * math.log(s) + (4 if s == 5 else -3 if s == 20 else 0))
    q = project(pts, 10.0)
    fig, ax = plt.subplots()
    draw(ax, pts, [q], "service p50")
    measured = [ln for ln in ax.lines if ln.get_label().endswith("measured")]
    assert len(measured) == 1 and q.size_gib not in list(measured[0].get_xdata())
    labels = [c.get_label() for c in ax.containers]
    assert labels == ["service p50: projected at 10x (log fit, 95% PI)"]
    plt.close(fig)


def test_the_fit_picks_the_model_the_points_follow_and_its_interval_holds_the_truth():
    log_truth = lambda s: 300 + 80 * math.log(s)                     # noqa: E731
    jitter = {1.25: 3, 2.5: -4, 5: 2, 10: -1, 20: 4, 30: -3, 50: 1}
    q = project(points(lambda s: log_truth(s) + jitter[s]), 10.0)
    assert q.fit.model == "log" and q.rejected.model == "linear" and q.fit.s < q.rejected.s
    assert q.size_gib == pytest.approx(100.0) and q.lo < log_truth(100.0) < q.hi
    q = project(points(lambda s: 100 + 7 * s + jitter[s]), 10.0)
    assert q.fit.model == "linear" and q.lo < 100 + 7 * 100.0 < q.hi
    with pytest.raises(ValueError, match="at least 3"):
        fit(points(log_truth)[:2], "log")


def test_a_curve_point_gets_the_verdicts_memory_at_its_scale():
    from harness.walks.curve import default_ratio, mem_for
    assert default_ratio() == 8.4                               # decision.yaml: the reference's 8 GB at 5x
    assert mem_for(int(10.54 * 2**30), 8.4) == "1284m"          # the ratio walk's smallest level at 1x
    assert mem_for(int(0.1 * 2**30), 8.4) == "16m"              # never under the floor


def test_a_curve_at_a_block_size_of_its_own_keeps_the_rate_lines_share_and_the_scenarios_ageing():
    """The reference's layout cannot carry p99_5x's 12,000 rows a block: a curve at 600 would fail every point
    on `rate(rows) > 5000` (300 rows/s offered) unless the line keeps its share of the offered rate."""
    from harness.scenario.plan import resolve_plan
    from harness.walks.curve import at_block_size
    from harness.walks.sweep import CellOptions
    opts = CellOptions(profile="ratio", overrides=("workload.rows_per_block=600",))
    probe = resolve_plan("p99_5x", "sqlite", profile="ratio", scale=0.25, overrides=list(opts.overrides))
    got, ageing = at_block_size("p99_5x", "sqlite", opts, probe)
    assert got.thresholds == ("p99(commit_ms) < 500", "rate(rows) > 250")       # 5000 x 600 / 12000
    assert ageing == ("load.age_rows_per_block=12000",)
    same = CellOptions(profile="ratio")
    assert at_block_size("p99_5x", "sqlite", same, resolve_plan("p99_5x", "sqlite", profile="ratio", scale=0.25)) \
        == (same, ())


def test_the_curve_projects_only_through_measured_points_and_says_projected():
    from harness.walks.curve import CurveFile, CurvePoint, projections

    def pt(scale, status="passed"):
        size = 10.5 * scale
        return CurvePoint(scale=scale, mem="1284m", size_gib=size, status=status, cell=f"p99_5x/s-{scale:g}",
                          sitting="2026-12-05", service_p50_ms=300 + 60 * math.log(size) + (3 if scale == 1 else 0),
                          ack_p99_ms=None, busy=0.2)
    points = [pt(s) for s in (0.125, 0.25, 0.5, 1, 2)] + [pt(3, "error")]
    [q] = projections(points)                  # service p50 only: no acknowledgement figure anywhere
    assert q.projected is True and q.figure == "service_p50_ms" and q.scale == 10.0
    assert q.lo < 300 + 60 * math.log(105) < q.hi and q.says.startswith("per-block service time p50 (behind a block log: its apply): projected")
    assert projections(points[:2]) == []       # two points: no interval
    unlogged = [p.model_copy(update={"busy": None}) for p in points]   # the reference's layout: a block is its commit
    assert projections(unlogged)[0].says.startswith("per-block service time p50 (its commit): projected")
    f = CurveFile(scenario="p99_5x", engine="sqlite", profile="ratio", ratio=8.4, command="make curve ENGINE=sqlite",
                  points=points, projections=[q], updated_utc="2026-12-05T00:00:00Z")
    assert all("projected" not in p.model_dump() for p in f.points)
    with pytest.raises(ValidationError, match="projected"):
        type(q).model_validate(q.model_dump() | {"projected": False})


def test_the_curves_report_draws_and_prints_the_projection_apart(tmp_path):
    from harness.report.render import to_markdown
    from harness.report.success.curve_report import curve_blocks
    from harness.results.curve import CurveFile, CurvePoint
    from harness.walks.curve import projections
    points = [CurvePoint(scale=s, mem=f"{int(1284 * s)}m", size_gib=10.5 * s, status="passed", cell=f"p99_5x/c-{s:g}",
                         sitting="2026-12-05", service_p50_ms=300 + 60 * math.log(10.5 * s) + (2 if s == 1 else 0),
                         busy=0.2)
              for s in (0.125, 0.25, 0.5, 1, 2)]
    c = CurveFile(scenario="p99_5x", engine="sqlite", profile="ratio", ratio=8.4, command="make curve ENGINE=sqlite",
                  points=points, projections=projections(points), complete=True, updated_utc="2026-12-05T00:00:00Z")
    md = to_markdown(curve_blocks(c), tmp_path)
    [row] = [ln for ln in md.splitlines() if ln.startswith("| 10x")]
    assert "projected, not measured" in row and "projected" in row.split("|")[3]
    assert md.count("measured 2026-12-05") == 2 * len(points)      # the points' table and the figure's
    svg = next(tmp_path.glob("curve-service_p50_ms*.svg")).read_text()
    assert "projected at 10x" in svg and "its apply): measured" in svg
    assert "| queryable p99 ms |" in md and "| applier busy |" in md
    # without a block log: no queryable column (it was the ack's copy) and no applier's
    unlogged = [p.model_copy(update={"busy": None}) for p in points]
    md = to_markdown(curve_blocks(c.model_copy(update={"points": unlogged, "projections": projections(unlogged)})),
                     tmp_path)
    table = md[md.index("Measured at each scale"):].split("\n\n")[1]
    assert "queryable" not in table and "applier" not in table and "| service p50 ms | ack p99 ms | rows/s |" in table


def test_a_walk_keeps_the_make_command_that_asked_for_it():
    """What a published figure names: the command as a user types it, from the walk's own arguments."""
    from harness.cli import _parser
    from harness.cli.args import make_command
    args = _parser().parse_args(["knee", "--engine", "sqlite", "--axis", "rows", "--mem", "1284m", "--profile", "ratio",
                                 "--set", "durability=commit", "--set", "block_log.group_blocks=1",
                                 "--set", "workload.schema=current_history", "--drop-states"])
    assert make_command("knee", args) == ('make knee ENGINE=sqlite SCENARIO=p99_5x AXIS=rows PROFILE=ratio MEM=1284m '
                                          'DURABILITY=commit SET="block_log.group_blocks=1 '
                                          'workload.schema=current_history" DROP_STATES=1')
    args = _parser().parse_args(["curve", "--engine", "sqlite", "--scales", "0.125 0.25", "--runtime", "local"])
    assert make_command("curve", args) == 'make curve ENGINE=sqlite SCENARIO=p99_5x SCALES="0.125 0.25" RUNTIME=local'


def test_a_published_curve_says_projected_in_its_own_rows_and_draws_a_png(tmp_path):
    from harness.report.success.publish_curve import publish_curve
    from harness.results import write_json
    from harness.results.curve import CurveFile, CurvePoint
    from harness.walks.curve import projections
    points = [CurvePoint(scale=s, mem=f"{int(1284 * s)}m", size_gib=10.5 * s, status="passed", cell=f"p99_5x/c-{s:g}",
                         sitting="2026-12-05", service_p50_ms=300 + 60 * math.log(10.5 * s) + (2 if s == 1 else 0),
                         busy=0.2)
              for s in (0.25, 0.5, 1, 2)] + [CurvePoint(scale=0.125, mem="134m", size_gib=1.1, status="oom",
                                                      cell="p99_5x/c-0.125", sitting="2026-12-05")]
    run = tmp_path / "curve-x"
    run.mkdir()
    write_json(run / "curve.json", CurveFile(
        scenario="p99_5x", engine="sqlite", profile="ratio", ratio=8.4, command="make curve ENGINE=sqlite",
        points=points, projections=projections(points), updated_utc="2026-12-05T00:00:00Z"))
    (run / "report.md").write_text("# a curve\n")
    with pytest.raises(ConfigError, match="complete is false"):
        publish_curve(run, tmp_path / "docs", None)
    c = load_curve(run / "curve.json")
    write_json(run / "curve.json", c.model_copy(update={"complete": True}))
    dest = publish_curve(run, tmp_path / "docs", "2026-12-05-curve")
    readme = (dest / "README.md").read_text()
    assert "Made by `make curve ENGINE=sqlite`" in readme and "| 0.125x | 1.10 | 134m | oom |" in readme
    [row] = [ln for ln in readme.splitlines() if ln.startswith("| 10x")]
    assert "projected, not measured" in row
    assert (dest / "plots" / "curve-service_p50_ms.png").stat().st_size > 1000


def test_the_success_folder_reads_each_figure_from_its_published_run_and_refuses_a_stray(tmp_path):
    from harness.report.success.assemble import write
    from harness.report.success.publish_curve import publish_curve
    from harness.results import write_json
    from harness.results.curve import CurveFile, CurvePoint
    from harness.walks.curve import projections
    points = [CurvePoint(scale=s, mem=f"{int(1284 * s)}m", size_gib=10.5 * s, status="passed", cell=f"p99_5x/c-{s:g}",
                         sitting="2026-12-05", service_p50_ms=600 + 60 * math.log(10.5 * s) + (2 if s == 1 else 0),
                         ack_p99_ms=5.0, queryable_p99_ms=900.0) for s in (0.25, 0.5, 1, 2)]
    run = tmp_path / "curve-x"
    run.mkdir()
    write_json(run / "curve.json", CurveFile(
        scenario="p99_5x", engine="sqlite", profile="ratio", ratio=8.4, command="make curve ENGINE=sqlite", points=points,
        projections=projections(points), complete=True, updated_utc="2026-12-05T00:00:00Z"))
    (run / "report.md").write_text("# a curve\n")
    folder = tmp_path / "2026-12-05-success"
    publish_curve(run, folder.parent, f"{folder.name}/degradation-answer")
    text = write(folder).read_text()
    [row] = [ln for ln in text.splitlines() if ln.startswith("| Degradation curve")]
    reference, answer = row.split(" | ")[1:3]
    assert reference == "not measured yet"
    low, high = (600 + 60 * math.log(10.5 * s) for s in (0.25, 2))
    assert answer.startswith(f"service p50 {low:,.0f} ms at 2.6 GiB → {high:,.0f} ms at 21.0 GiB")
    assert "10x projected, not measured" in answer
    assert "[2026-12-05](degradation-answer/README.md)" in answer
    (folder / "fastest-answer").mkdir()
    with pytest.raises(ConfigError, match="<question>-<system>"):
        write(folder)


def test_a_figure_flat_within_its_noise_is_projected_as_its_mean_never_below_zero():
    """12-05's acknowledgement p99, 4-15 ms at four sizes: its best line carried the noise to -19 ms at 10x."""
    pts = [Measured(s, 10.5 * s, v, f"p99_5x/c-{s:g}", "2026-12-05") for s, v in ((0.25, 3.8), (0.5, 15.0), (1, 4.4),
                                                                                     (2, 3.7))]
    q = project(pts, 10.0)
    assert q.fit.model == "flat" and q.value == pytest.approx(6.725) and q.lo == 0.0 < q.hi
    assert "neither line's slope is distinguishable from 0" in q.says("ms")


def _reads_row(mix, n, knee, p99, reached=True):
    return {"mix": mix, "connections": n, "scale": 1.0, "knee_read_qps": knee, "reached": reached,
            "achieved_qps": knee and knee * 0.99, "read_p99_ms": p99, "bounded_at_qps": None, "bounded_by": [],
            "answers": "not checkable", "host": {"cpu_model": "Intel(R) Xeon(R) Processor", "runtime": "local"},
            "sitting": "2026-12-05", "search": f"ceiling-read_mix_{mix}-sqlite-x{n}", "sentence": "..."}


def test_the_reads_figure_names_every_mix_its_floors_and_that_its_answers_were_not_checked(tmp_path):
    """Max reads from a published `make reads`: per mix the highest rate held at 1 and 10 connections, a search
    that passed up to its top a floor (≥), the worst p99; a mix with no model answer says "not checkable"."""
    from harness.report.success.assemble import figure_of
    d = tmp_path / "max_reads-reference"
    d.mkdir()
    reads = {"version": 1, "kind": "reads", "engine": "sqlite", "mem": "1284m", "profile": "ratio",
             "command": 'make reads ENGINE=sqlite PROFILE=ratio MEM=1284m', "complete": True,
             "started_utc": "2026-12-05T08:00:00Z",
             "protocol": {"a": {"scale": 1.0, "warmup_queries": 1000, "measure_queries": 10000}},
             "rows": [_reads_row("a", 1, 2150, 41.0), _reads_row("a", 10, 10000, 88.4, reached=False),
                      _reads_row("b", 1, None, None), _reads_row("b", 10, 1000, 12.0)]}
    (d / "reads.json").write_text(__import__("json").dumps(reads))
    f = figure_of(d)
    assert f.says.startswith("A 2,150 / ≥ 10,000 QPS p99 ≤ 88 ms; B none (not even the lowest rate held) / 1,000 QPS "
                             "p99 ≤ 12 ms (1 / 10 connections; answers not checkable)"), f.says
    assert (f.command, f.sitting, f.mem, f.scale) == (reads["command"], "2026-12-05", "1284m", 1.0)
    reads["command"] = None
    (d / "reads.json").write_text(__import__("json").dumps(reads))
    with pytest.raises(ValidationError, match="command"):
        figure_of(d)


def test_max_writes_points_are_a_scale_and_a_mem_each_and_a_bad_one_is_named():
    from harness.walks.writes import parse_points
    assert parse_points("1:1284m 5:8g") == [(1.0, "1284m"), (5.0, "8g")]
    for bad in ("1284m", "0:8g", "x:8g", "5:eight"):
        with pytest.raises(ConfigError, match=f"POINTS: '{bad}': each point is <scale>:<MEM>"):
            parse_points(f"1:1284m {bad}")
    with pytest.raises(ConfigError, match="POINTS: none given"):
        parse_points(" ")


def test_a_max_writes_point_is_its_knees_slowest_run_and_the_line_the_step_above_missed(tmp_path):
    """Per point: the knee's rows/s (the slowest of its runs), its worst p99, and what the nearest failing step
    above it missed; a knee whose top passed is a floor (≥); the success table's cell names every point."""
    from harness.report.success.assemble import figure_of
    from harness.results.knees import KneeFile, KneeStep
    from harness.walks.writes import row_of

    def step(rows, verdict, p99, rate=None, confirming=False, failed_on=()):
        return KneeStep(value=rows, confirming=confirming, repeat=1, status="passed" if verdict == "pass" else "failed",
                        verdict=verdict, p99_ms=p99, rows_per_s=rate, failed_on=list(failed_on), cell=f"p99_5x/r{rows}")
    k = KneeFile(axis="rows", unit="rows per block", scenario="p99_5x", profile="ratio", engine="sqlite", mem="1284m",
                 scale=1.0, criteria=["p99(commit_ms) < 500"], floor=187.5, ceiling=192000, start=12000, resolution=0.1,
                 block_interval_ms=2000, command="make knee", started_utc="2026-12-05T08:00:00Z",
                 finished_utc="2026-12-05T09:00:00Z", knee=21000, converged=True, complete=True, wall_s=3000,
                 steps=[step(12000, "pass", 210, 6001), step(24000, "fail", 700, failed_on=["p99(commit_ms) < 500 "
                                                                                           "(measured 700)"]),
                        step(21000, "pass", 420, 10480), step(21000, "pass", 455, 10460, confirming=True)])
    row = row_of(k, tmp_path / "knee-x")
    assert (row["knee_rows_per_block"], row["rows_per_s"], row["p99_ms"]) == (21000, 10460, 455)
    assert row["reached"] and row["bounded_at_rows_per_block"] == 24000
    assert row["bounded_by"] == ["p99(commit_ms) < 500 (measured 700)"] and row["sitting"] == "2026-12-05"
    top = row_of(k.model_copy(update={"steps": k.steps[:1], "knee": 12000}), tmp_path / "knee-y")
    assert not top["reached"] and top["bounded_by"] == []
    d = tmp_path / "max_writes-answer"
    d.mkdir()
    (d / "writes.json").write_text(__import__("json").dumps(
        {"version": 1, "kind": "writes", "scenario": "p99_5x", "engine": "sqlite", "profile": "ratio", "overrides": [],
         "command": 'make writes ENGINE=sqlite POINTS="1:1284m 5:8g"', "started_utc": "2026-12-05T08:00:00Z",
         "complete": True, "rows": [row, {**top, "scale": 5.0, "mem": "8g"}]}))
    f = figure_of(d)
    assert f.says == ("1x@1284m 10,460 rows/s (21,000 a block) p99 455 ms; 5x@8g ≥ 6,001 rows/s (≥ 12,000 a block) "
                      "p99 210 ms"), f.says
    assert (f.scale, f.mem, f.sitting) == (5.0, "1284m/8g", "2026-12-05")


def test_the_combined_sweet_spot_is_the_ceilings_knee_with_both_p99s_and_a_floor_said_as_one(tmp_path):
    from harness.report.success.assemble import figure_of
    from harness.walks.ceiling import knee_figures
    steps = [{"offered_qps": q, "repeat": r, "passed": ok, "achieved_qps": q * 0.99, "read_p99_ms": 12.4,
              "write_p99_ms": 310.0, "write_rows_per_s": 6001.0, "apply_busy_share": 0.62, "failed_on": f}
             for q, r, ok, f in ((100, 1, True, []), (1000, 1, True, []), (2000, 1, False, ["p99(read_ms) < 100ms"]),
                                 (1495, 1, True, []), (1495, 2, True, []))]
    d = tmp_path / "combined-answer"
    d.mkdir()
    c = {"kind": "ceiling", "scale": 5.0, "mem": "8g", "command": "make ceiling ENGINE=sqlite SCENARIO=combined",
         "started_utc": "2026-12-06T08:00:00Z", "finished_utc": "2026-12-06T09:10:00Z",
         "knee": knee_figures(steps, 1495)}
    (d / "ceiling.json").write_text(__import__("json").dumps(c))
    f = figure_of(d)
    assert f.says == "6,001 rows/s written + 1,495 reads/s (read p99 12 ms, write p99 310 ms, applier 62% busy)"
    assert (f.scale, f.mem, f.sitting) == (5.0, "8g", "2026-12-06")
    c["knee"] = knee_figures(steps[:2], 1000)        # every rate passed: a floor
    (d / "ceiling.json").write_text(__import__("json").dumps(c))
    assert "≥ 1,000 reads/s" in figure_of(d).says
    c["command"] = None
    (d / "ceiling.json").write_text(__import__("json").dumps(c))
    with pytest.raises(ValidationError, match="command"):
        figure_of(d)


def test_a_run_published_beside_the_ceiling_follows_its_knee_in_its_own_words_with_its_verdict(tmp_path):
    """The criterion's hour at 5x with the knee's reads, published into the ceiling's folder: said after the knee
    with its scale, MEM, the lines it missed, its checked answers and its own link; the figure stays the
    ceiling's (its scale, MEM and command). A ceiling where no rate held says none, and what failed its lowest
    step (it refused the folder before: 'no knee')."""
    import gzip
    import json
    from harness.report.success.assemble import figure_of
    from harness.walks.ceiling import knee_figures
    steps = [{"offered_qps": 400, "repeat": r, "passed": True, "achieved_qps": 398.0, "read_p99_ms": 41.0,
              "write_p99_ms": 20.0, "write_rows_per_s": 6001.0, "apply_busy_share": 0.5, "failed_on": []}
             for r in (1, 2)]
    d = tmp_path / "combined-answer"
    (d / "runs" / "hour-1").mkdir(parents=True)
    (d / "ceiling.json").write_text(json.dumps({
        "kind": "ceiling", "scale": 1.0, "mem": "1638m", "command": "make ceiling ENGINE=sqlite SCENARIO=hour_checked",
        "started_utc": "2026-12-06T08:51:00Z", "finished_utc": "2026-12-06T09:40:00Z",
        "knee": knee_figures(steps, 400)}))
    hour = {"version": 19, "run_id": "hour-1", "engine": "sqlite", "scenario": "hour_checked", "profile": "full",
            "runtime": "local", "status": "failed", "scale": 5.0, "engine_version": "x",
            "plan": {"phases": {"measure_s": 3600}}, "environment": {"started_utc": "2026-12-06T09:45:00Z"},
            "memory": {"data_limit_bytes": 8 << 30},
            "thresholds": [{"expr": "p99(read_ms) < 100ms", "value": 180.0, "passed": False},
                           {"expr": "p99(commit_ms) < 500", "value": 14.0, "passed": True}],
            "metrics": {"commit_latency_ms": {"p99": 14.0}, "rows_per_s": 6002.0, "reads_per_s": 399.0,
                        "read_latency_ms": {"p99": 180.0},
                        "reads_by_kind": {"candidates": {"count": 10, "qps": 1.0, "p50": 1, "p95": 1, "p99": 1,
                                                         "max": 1, "mean_rows": 1.0, "empty": 0, "checked": 900,
                                                         "wrong": 0}},
                        "block_log": {"group_blocks": 1, "lag_bound_blocks": 5, "synced": True,
                                      "acknowledged_blocks": 2, "applied_rows": 10, "apply_utilisation": 0.55,
                                      "queryable_ms": {"p99": 1900.0}}}}
    (d / "runs" / "hour-1" / "result.json.gz").write_bytes(gzip.compress(json.dumps(hour).encode()))
    # the figure's host is the ceiling's own, from its steps' results: the hour beside it ran on another host
    hour["environment"]["cpu_model"] = "AMD EPYC"
    (d / "runs" / "hour-1" / "result.json.gz").write_bytes(gzip.compress(json.dumps(hour).encode()))
    step = {**hour, "run_id": "step-1", "environment": {"started_utc": "2026-12-06T08:52:00Z", "cpu_model": "Intel Xeon"}}
    (d / "steps" / "hour_checked" / "sqlite-q400-1638m-s1-r1").mkdir(parents=True)
    (d / "steps" / "hour_checked" / "sqlite-q400-1638m-s1-r1" / "result.json.gz").write_bytes(
        gzip.compress(json.dumps(step).encode()))
    f = figure_of(d)
    assert f.host is not None and f.host.startswith("Intel Xeon"), f.host
    assert f.says == ("6,001 rows/s written + ≥ 400 reads/s (read p99 41 ms, write p99 20 ms, applier 50% busy); "
                      "beside it: 5x@8.0 GiB 399 reads/s 3,600 s failed (each below)"), f.says
    # the cell stays short; each run's figures and link are a line below the table
    assert f.details == ["399 reads/s + 6,002 rows/s at 5x, MEM 8.0 GiB, 3,600 s: failed on p99(read_ms) (read p99 "
                         "180 ms, ack p99 14 ms; 0 of 900 answers wrong; [2026-12-06](combined-answer/runs/hour-1/"
                         "README.md))"], f.details
    assert (f.scale, f.mem, f.command) == (1.0, "1638m", "make ceiling ENGINE=sqlite SCENARIO=hour_checked")
    from harness.report.success.assemble import write
    text = write(tmp_path).read_text()
    assert ("## Combined sweet spot, the verdict's answer: each run\n\n- 399 reads/s + 6,002 rows/s at 5x" in text
            and text.index("## Combined") > text.index("| Combined sweet spot"))
    # no rate held: none, with the lowest step's figures and what failed it, the runs beside it still said
    c = json.loads((d / "ceiling.json").read_text())
    c["knee"], c["steps"] = None, [{**steps[0], "offered_qps": 100, "passed": False, "read_p99_ms": 1094.7,
                                    "failed_on": ["p99(read_ms) < 100ms (measured 1094.7)"]}]
    (d / "ceiling.json").write_text(json.dumps(c))
    assert figure_of(d).says.startswith("none: not even 100 reads/s beside 6,001 rows/s held (read p99 1,095 ms, "
                                        "write p99 20 ms, applier 50% busy; failed on p99(read_ms)); beside it: 5x@8.0 GiB")


def test_v1_is_its_go_or_no_go_and_every_frontier_point(tmp_path):
    from harness.report.success.assemble import figure_of
    d = tmp_path / "v1-answer"
    d.mkdir()
    v = {"kind": "v1", "engine": "sqlite", "mem": "4g", "entities": 621000, "go": False, "complete": True,
         "command": "make v1 ENGINE=sqlite PROFILE=ratio MEM=4g", "started_utc": "2026-12-06T08:00:00Z",
         "finished_utc": "2026-12-06T10:00:00Z", "measured_on": "Intel Xeon x 2 cores",
         "frontier": [{"write_rows_per_s": 10000, "read_qps": 2300, "reached": True},
                      {"write_rows_per_s": 20000, "read_qps": None, "reached": None}]}
    (d / "v1.json").write_text(__import__("json").dumps(v))
    f = figure_of(d)
    assert f.says == "no-go on this machine (621,000 entities; rows/s + reads/s: 10,000 + 2,300, 20,000 + none)"
    assert (f.scale, f.mem, f.sitting, f.host) == (0.776, "4g", "2026-12-06", "Intel Xeon x 2 cores")
    # no read rate held beside the first write rate: what its lowest step carried, its first bound, the answers
    v["frontier"] = [{"write_rows_per_s": 10000, "read_qps": None, "reached": None, "read_p99_ms": 60719.1,
                      "bounded_by": ["rate(reads) >= 95% (measured 78.864)", "p99(read_ms) < 100ms"],
                      "lowest": {"offered_qps": 1000, "achieved_qps": 788.6}, "answers_checked": 266603,
                      "answers_wrong": 0}]
    (d / "v1.json").write_text(__import__("json").dumps(v))
    assert figure_of(d).says == ("no-go on this machine (621,000 entities; rows/s + reads/s: 10,000 + none (at 1,000 "
                                 "offered: 789 held, read p99 60,719 ms; bound by rate(reads) >= 95% (measured "
                                 "78.864)); answers 266,603/266,603 right)")


def test_a_curve_at_the_references_budget_gives_each_scale_scale_times_its_1x_mem():
    """A design whose layout is smaller than the reference's measured at the reference data's ratio: MEM = scale x
    the verdict's 1x level, whatever its own state's size; without it, the state's size / RATIO."""
    from harness.report.success.curve_report import basis
    from harness.results.curve import CurveFile
    from harness.walks.curve import mem_at
    assert mem_at(2.0, 8 << 30, 8.4, "1284m") == "2568m" and mem_at(0.5, 8 << 30, 8.4, "1284m") == "642m"
    assert mem_at(1.0, 8400 << 20, 8.4, None) == "1000m"
    c = CurveFile(scenario="p99_5x", engine="sqlite", profile="ratio", ratio=8.4, command="make curve",
                  updated_utc="2026-12-05T00:00:00Z")
    assert basis(c) == "MEM = the state's size / 8.4"
    assert basis(c.model_copy(update={"mem_1x": "1284m"})).startswith("MEM = scale x 1284m")
