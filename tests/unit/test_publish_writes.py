"""Max writes are measured a point or two a sitting (a 2x or 5x knee is an hour or more): publishing a later
sitting's points into the same folder keeps the earlier ones, each with the command, sitting and host that made
it; a folder of another configuration is refused."""
import json

import pytest

from harness.errors import ConfigError


def _run(root, name, points, command, overrides=("durability=commit",), started="2026-12-07T00:50:00Z", boot=None):
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
                     "host": {"cpu_model": cpu}, "sitting": sitting, "boot_id": boot, "knee": knee, "sentence": "s"})
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
    assert (out / "knees" / "1x-1284m-2026-12-07" / "report.md").is_file()
    assert (out / "knees" / "2x-2568m-2026-12-08" / "report.md").is_file()
    readme = (out / "README.md").read_text()
    assert '`make writes POINTS="1:1284m"` (1x-1284m on 2026-12-07, AMD EPYC)' in readme
    assert '`make writes POINTS="2:2568m"` (2x-2568m on 2026-12-08, Intel Xeon)' in readme
    assert "| 1x | 1284m |" in readme and "| 2x | 2568m |" in readme
    f = figure_of(out)
    # points of two sittings: each says its own (a knee moves with the host)
    assert f.says.startswith("1x@1284m (2026-12-07, AMD EPYC) 424 rows/s (849 a block) p99 430 ms; 2x@2568m "
                             "(2026-12-08, Intel Xeon) 350 rows/s"), f.says
    assert f.command == 'make writes POINTS="1:1284m"; make writes POINTS="2:2568m"'
    assert "AMD EPYC" in f.host and "Intel Xeon" in f.host and f.sitting == "2026-12-08"
    # the same point in a later sitting joins beside it: a knee moves with the host, and the table says how far
    again = _run(tmp_path / "c", "w3", [(1.0, "1284m", 900, "Intel Xeon", "2026-12-09")], "make writes again",
                 started="2026-12-09T00:50:00Z", boot="0a1b2c3d-boot")
    out = publish_writes(again, dest, "max_writes-reference")
    w = json.loads((out / "writes.json").read_text())
    assert [(r["scale"], r["knee_rows_per_block"]) for r in w["rows"]] == [(1.0, 849), (1.0, 900), (2.0, 700)]
    assert (out / "knees" / "1x-1284m-2026-12-09-0a1b2c3d" / "report.md").is_file()
    assert "(knees/1x-1284m-2026-12-07/report.md)" in (out / "README.md").read_text()
    # the same sitting's point measured again (its boot) replaces it
    same = _run(tmp_path / "d", "w4", [(1.0, "1284m", 950, "Intel Xeon", "2026-12-09")], "make writes same",
                started="2026-12-09T03:50:00Z", boot="0a1b2c3d-boot")
    w = json.loads((publish_writes(same, dest, "max_writes-reference") / "writes.json").read_text())
    assert [(r["scale"], r["knee_rows_per_block"]) for r in w["rows"]] == [(1.0, 849), (1.0, 950), (2.0, 700)]


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


def _reads(root, name, mixes, command, profile="ratio", mem="1638m", overrides=None, sitting="2026-12-06"):
    """A finished `make reads` folder (version 1 kept no overrides: None leaves them out) with a finished read
    ceiling per search (ceiling.json, report.md; no step, so nothing to copy)."""
    run = root / name
    run.mkdir(parents=True)
    rows, protocol = [], {}
    for mix, scale in mixes:
        protocol[mix] = {"warmup_queries": 1000, "measure_queries": 10000, "cooldown_s": 5.0, "steps_qps": [100.0],
                         "max_qps": 10000.0, "criteria": ["p99(read_ms) < 100ms"], "scale": scale}
        for n in (1, 10):
            search = f"ceiling-{name}-{mix}-{n}"
            (root / search).mkdir()
            (root / search / "report.md").write_text("# ceiling\n")
            (root / search / "ceiling.json").write_text(json.dumps({
                "complete": True, "engine": "sqlite", "scenario": f"read_mix_{mix}", "profile": profile, "scale": scale,
                "mem": mem, "readers": n, "mix": mix, "criteria": [], "started_utc": f"{sitting}T08:00:00Z",
                "sentence": "s", "steps": []}))
            rows.append({"mix": mix, "connections": n, "scale": scale, "knee_read_qps": 1000.0 * n, "reached": True,
                         "achieved_qps": 990.0 * n, "read_p99_ms": 60.0, "bounded_at_qps": 1100.0 * n,
                         "bounded_by": ["p99(read_ms) < 100ms (measured 130)"], "answers": "not checkable",
                         "host": {"cpu_model": "AMD EPYC"}, "sitting": sitting, "search": search, "sentence": "s"})
    walk = {"version": 1, "kind": "reads", "engine": "sqlite", "mem": mem, "profile": profile, "command": command,
            "protocol": protocol, "rows": rows, "started_utc": f"{sitting}T08:00:00Z", "complete": True,
            "finished_utc": f"{sitting}T09:00:00Z"}
    if overrides is not None:
        walk["overrides"] = overrides
    (run / "reads.json").write_text(json.dumps(walk))
    return run


def test_a_later_sittings_read_searches_join_the_published_ones_by_mix_and_size(tmp_path):
    """Mix A published from a reads.json that kept no settings (its command says none), then mixes B at 1x and A at
    5x: one table, each search with its own command, size, MEM and folder; the answer's settings are refused."""
    from harness.report.success.assemble import figure_of
    from harness.report.success.publish_reads import publish_reads
    dest = tmp_path / "pub"
    publish_reads(_reads(tmp_path / "a", "r1", [("a", 1.0)], "make reads MIXES=a RUNTIME=local"), dest,
                  "max_reads-reference")
    publish_reads(_reads(tmp_path / "b", "r2", [("b", 1.0)], "make reads MIXES=b", overrides=[],
                         sitting="2026-12-07"), dest, "max_reads-reference")
    out = publish_reads(_reads(tmp_path / "c", "r3", [("a", 5.0)], "make reads MIXES=a PROFILE=full MEM=8g",
                               profile="full", mem="8g", overrides=[], sitting="2026-12-08"), dest,
                        "max_reads-reference")
    r = json.loads((out / "reads.json").read_text())
    assert [(row["profile"], row["mix"], row["connections"]) for row in r["rows"]] == [
        ("ratio", "a", 1), ("ratio", "a", 10), ("ratio", "b", 1), ("ratio", "b", 10), ("full", "a", 1),
        ("full", "a", 10)]
    assert [row["mem"] for row in r["rows"]] == ["1638m"] * 4 + ["8g"] * 2
    assert sorted(p.name for p in (out / "searches").iterdir()) == [
        "mix-a-10c", "mix-a-10c-full", "mix-a-1c", "mix-a-1c-full", "mix-b-10c", "mix-b-1c"]
    readme = (out / "README.md").read_text()
    assert "`make reads MIXES=a RUNTIME=local` (mix-a-1c at 1x on 2026-12-06, AMD EPYC; mix-a-10c" in readme
    assert "| a | 5x | 8g | 10 | 10,000 |" in readme and "(searches/mix-a-10c-full/README.md)" in readme
    f = figure_of(out)
    assert f.says.startswith("A@1x 1,000 / 10,000 QPS p99 ≤ 60 ms; B@1x 1,000 / 10,000 QPS p99 ≤ 60 ms; "
                             "A@5x 1,000 / 10,000 QPS"), f.says
    assert (f.scale, f.mem, f.sitting) == (5.0, "1638m/8g", "2026-12-08")
    answer = _reads(tmp_path / "d", "r4", [("c", 1.0)], "make reads MIXES=c SET=workload.schema=current_history",
                    overrides=["workload.schema=current_history"])
    with pytest.raises(ConfigError, match=r"holds the reads of overrides \[\], this run's is "
                                          r"\['workload.schema=current_history'\]"):
        publish_reads(answer, dest, "max_reads-reference")
    # a reads.json of version 1 has its settings in its command, POLICY= and DURABILITY= as the Makefile orders them
    from harness.report.success.merge import settings_of
    assert settings_of({"command": 'make reads DURABILITY=commit SET="a=1 b=2" POLICY=p'}) == [
        "memory.policy=p", "durability=commit", "a=1", "b=2"]
