"""Max writes are measured a point or two a sitting (a 2x or 5x knee is an hour or more): publishing a later
sitting's points into the same folder keeps the earlier ones, each with the command, sitting and host that made
it; a folder of another configuration is refused."""
import json

import pytest

from harness.errors import ConfigError


def _run(root, name, points, command, overrides=("durability=commit",), started="2026-12-07T00:50:00Z"):
    """A finished `make writes` folder with a knee folder per point (report.md, knee.json), as the walk leaves it."""
    run = root / name
    run.mkdir(parents=True)
    rows = []
    for scale, mem, knee_rows, cpu, sitting in points:
        knee = f"knee-{name}-{scale:g}"
        (root / knee).mkdir()
        (root / knee / "report.md").write_text(f"# knee at {scale:g}x\n")
        (root / knee / "knee.json").write_text(json.dumps({"steps": []}))
        rows.append({"scale": scale, "mem": mem, "knee_rows_per_block": knee_rows, "block_interval_ms": 2000.0,
                     "rows_per_s": knee_rows / 2, "p99_ms": 430.0, "reached": True,
                     "bounded_at_rows_per_block": knee_rows * 1.1, "bounded_by": ["p99(commit_ms) < 500 (measured 560)"],
                     "floor_rows_per_block": 187.5, "steps": 6, "wall_s": 3300.0, "converged": True,
                     "host": {"cpu_model": cpu}, "sitting": sitting, "knee": knee, "sentence": "s"})
    (run / "writes.json").write_text(json.dumps({
        "version": 1, "kind": "writes", "scenario": "p99_5x", "engine": "sqlite", "profile": "ratio",
        "overrides": list(overrides), "command": command, "started_utc": started, "complete": True,
        "finished_utc": started.replace("T00", "T02"), "rows": rows}))
    return run


def test_a_later_sittings_points_join_the_published_ones_each_with_its_own_command_and_host(tmp_path):
    from harness.report.success.assemble import figure_of
    from harness.report.success.publish_writes import publish_writes
    one = _run(tmp_path / "a", "w1", [(1.0, "1284m", 849, "AMD EPYC", "2026-12-07")], 'make writes POINTS="1:1284m"')
    two = _run(tmp_path / "b", "w2", [(2.0, "2568m", 700, "Intel Xeon", "2026-12-08")], 'make writes POINTS="2:2568m"',
               started="2026-12-08T00:50:00Z")
    dest = tmp_path / "pub"
    publish_writes(one, dest, "max_writes-reference")
    out = publish_writes(two, dest, "max_writes-reference")
    w = json.loads((out / "writes.json").read_text())
    assert [(r["scale"], r["command"]) for r in w["rows"]] == [(1.0, 'make writes POINTS="1:1284m"'),
                                                                (2.0, 'make writes POINTS="2:2568m"')]
    assert (out / "knees" / "1x-1284m" / "report.md").is_file() and (out / "knees" / "2x-2568m" / "report.md").is_file()
    readme = (out / "README.md").read_text()
    assert '`make writes POINTS="1:1284m"` (1x-1284m on 2026-12-07, AMD EPYC)' in readme
    assert '`make writes POINTS="2:2568m"` (2x-2568m on 2026-12-08, Intel Xeon)' in readme
    assert "| 1x | 1284m |" in readme and "| 2x | 2568m |" in readme
    f = figure_of(out)
    assert f.says.startswith("1x@1284m 424 rows/s (849 a block) p99 430 ms; 2x@2568m 350 rows/s"), f.says
    assert f.command == 'make writes POINTS="1:1284m"; make writes POINTS="2:2568m"'
    assert "AMD EPYC" in f.host and "Intel Xeon" in f.host and f.sitting == "2026-12-08"
    # the same point measured again replaces the published one
    again = _run(tmp_path / "c", "w3", [(1.0, "1284m", 900, "Intel Xeon", "2026-12-09")], "make writes again",
                 started="2026-12-09T00:50:00Z")
    w = json.loads((publish_writes(again, dest, "max_writes-reference") / "writes.json").read_text())
    assert [(r["scale"], r["knee_rows_per_block"]) for r in w["rows"]] == [(1.0, 900), (2.0, 700)]


def test_another_configurations_writes_are_refused_naming_the_field(tmp_path):
    from harness.report.success.publish_writes import publish_writes
    one = _run(tmp_path / "a", "w1", [(1.0, "1284m", 849, "AMD EPYC", "2026-12-07")], "make writes")
    other = _run(tmp_path / "b", "w2", [(2.0, "2568m", 700, "AMD EPYC", "2026-12-08")], "make writes SET=...",
                 overrides=("durability=commit", "workload.schema=current_history"))
    publish_writes(one, tmp_path / "pub", "max_writes-reference")
    with pytest.raises(ConfigError, match=r"max_writes-reference/writes.json: holds the writes of overrides"):
        publish_writes(other, tmp_path / "pub", "max_writes-reference")
    w = json.loads((tmp_path / "pub" / "max_writes-reference" / "writes.json").read_text())
    assert [r["scale"] for r in w["rows"]] == [1.0]      # nothing of the refused run was written
