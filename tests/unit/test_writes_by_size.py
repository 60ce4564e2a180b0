"""The degradation curve's knee column: max writes against the database's size, at one data-to-memory ratio."""
import json


def _writes(d, points, sittings=None, boots=None, filesystems=None):
    """A published max_writes folder: writes.json and each point's knee.json with its steps' database sizes."""
    rows = []
    for i, (scale, mem, rows_per_s, gib) in enumerate(points):
        name = f"{scale:g}x-{mem}"
        (d / "knees" / name).mkdir(parents=True)
        (d / "knees" / name / "knee.json").write_text(json.dumps(
            {"steps": [{"db_bytes": int((gib + 0.1) * 2**30)}, {"db_bytes": int(gib * 2**30)}, {"db_bytes": None}]}))
        rows.append({"scale": scale, "mem": mem, "rows_per_s": rows_per_s,
                     "sitting": sittings[i] if sittings else "2026-12-07", "boot_id": boots[i] if boots else None,
                     "host": {"cpu_model": "AMD EPYC", "filesystem": filesystems[i] if filesystems else "ext4"}})
    (d / "writes.json").write_text(json.dumps({"rows": rows}))


def test_the_knee_against_size_joins_one_ratios_points_projects_only_through_three_and_sets_a_literal_mem_apart(
        tmp_path):
    from harness.report.success.writes_by_size import PNG, section
    _writes(tmp_path / "max_writes-reference", [(1.0, "1284m", 430.0, 10.6), (2.0, "2568m", 400.0, 21.0),
                                                 (5.0, "8g", 300.0, 51.0)])
    lines = "\n".join(section(tmp_path))
    # the smallest database of the knee's steps is its size; a literal 8g at 5x is another ratio, off the line
    assert "| SQLite as the reference deploys it | 1x | 10.6 | 1284m | 430 | measured 2026-12-07: [1x-1284m]" in lines
    assert "| 2x | 21.0 | 2568m | 400 |" in lines
    assert "| 5x | - | 8g | 300 | measured 2026-12-07 at another ratio: not on the line |" in lines
    assert "projected" not in lines.split("|---|")[1], "two points on the line: nothing is projected"
    assert (tmp_path / PNG).is_file() and f"]({PNG})" in lines
    # a third point at the line's ratio: 10x projected, said so in its own row, never as measured
    _writes(tmp_path / "max_writes-answer", [(0.5, "642m", 9000.0, 4.0), (1.0, "1284m", 8500.0, 8.1),
                                              (2.0, "2568m", 8100.0, 16.0)])
    lines = "\n".join(section(tmp_path))
    projected = [ln for ln in lines.splitlines() if ln.startswith("| the verdict's answer | 10x")]
    assert len(projected) == 1 and "| projected " in projected[0] and "projected, not measured: 95% interval" in \
        projected[0], projected
    assert not any(ln.startswith("| SQLite as the reference deploys it | 10x") for ln in lines.splitlines())


def test_no_published_writes_no_section(tmp_path):
    from harness.report.success.writes_by_size import PNG, section
    assert section(tmp_path) == [] and not (tmp_path / PNG).exists()


def test_a_line_joins_one_sittings_points_only(tmp_path):
    """Three points at one ratio from two sittings: no projection (no sitting has three of its own), every point
    listed; a knee moves with the host, which can change between sittings."""
    from harness.report.success.writes_by_size import section
    _writes(tmp_path / "max_writes-reference", [(0.5, "642m", 450.0, 5.3), (1.0, "1284m", 430.0, 10.6),
                                                 (2.0, "2568m", 1200.0, 21.0)],
            sittings=["2026-12-07", "2026-12-07", "2026-12-08"])
    lines = section(tmp_path)
    assert not any("projected" in ln for ln in lines if ln.startswith("| SQLite")), lines
    assert sum(ln.startswith("| SQLite as the reference deploys it |") for ln in lines) == 3
    assert "A line joins one sitting's points" in "\n".join(lines)

    # one day, two machines' boots (two sittings: 12-07 00:53 and 06:43 held 849 and 1,854 rows a block): apart too
    _writes(tmp_path / "max_writes-answer", [(0.5, "642m", 450.0, 5.3), (1.0, "1284m", 430.0, 10.6),
                                              (2.0, "2568m", 1200.0, 21.0)], boots=["a", "a", "b"])
    assert not any("projected" in ln for ln in section(tmp_path) if ln.startswith("| the verdict's answer"))
    import shutil
    shutil.rmtree(tmp_path / "max_writes-answer")
    _writes(tmp_path / "max_writes-answer", [(0.5, "642m", 450.0, 5.3), (1.0, "1284m", 430.0, 10.6),
                                              (2.0, "2568m", 1200.0, 21.0)], boots=["a", "a", "a"])
    assert any("| projected " in ln for ln in section(tmp_path) if ln.startswith("| the verdict's answer | 10x"))


def test_a_point_on_the_store_says_so_and_never_joins_the_disks_line(tmp_path):
    """One sitting, 1x and 2x on ext4 and 5x on the copy-on-write store (XFS on a loop device, whose writes take
    another path): the 5x point is marked, and no line (nor 10x projection) runs through the two filesystems."""
    from harness.report.success.assemble import max_writes
    from harness.report.success.writes_by_size import section
    store = "xfs on a loop device (make store)"
    d = tmp_path / "max_writes-reference"
    _writes(d, [(1.0, "1284m", 430.0, 10.6), (2.0, "2568m", 400.0, 21.0), (5.0, "6420m", 300.0, 52.0)],
            boots=["a", "a", "a"], filesystems=["ext4", "ext4", store])
    lines = section(tmp_path)
    assert not any("projected" in ln for ln in lines if ln.startswith("| SQLite")), lines
    five = [ln for ln in lines if ln.startswith("| SQLite as the reference deploys it | 5x")]
    assert len(five) == 1 and "measured 2026-12-07 on the store: [5x-6420m]" in five[0], five
    assert sum("on the store" in ln for ln in lines if ln.startswith("| SQLite")) == 1
    w = json.loads((d / "writes.json").read_text())
    for r in w["rows"]:
        r.update(knee_rows_per_block=r["rows_per_s"] * 2, reached=True, p99_ms=450.0, bounded_by=[],
                 command="make writes ENGINE=sqlite")
    says = max_writes((w, []), d.name, "reference").says
    assert "5x@6420m on the store " in says and "1x@1284m 430 rows/s" in says, says
