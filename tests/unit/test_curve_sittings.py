"""A published degradation curve keeps each earlier sitting's curve beside the newest (curve_sittings.py)."""
from __future__ import annotations

from pathlib import Path

from harness.report.success.assemble import write
from harness.report.success.publish_curve import publish_curve
from harness.results import write_json
from harness.results.curve import CurveFile, CurvePoint
from harness.results.headroom import Host
from harness.walks.curve import projections


def _curve(tmp_path: Path, name: str, boot: str | None, p50s: dict[float, float], day: str = "2026-12-07") -> Path:
    host = Host(cpu_model=f"cpu-{name}", fsync_p50_us=150.0, kernel="6.18")
    points = [CurvePoint(scale=s, mem=f"{int(1284 * s)}m", size_gib=10.5 * s, status="passed", cell=f"p99_5x/c-{s:g}",
                         sitting=day, service_p50_ms=v, ack_p99_ms=3 * v, host=host, boot_id=boot)
              for s, v in p50s.items()]
    run = tmp_path / f"curve-{name}"
    run.mkdir()
    write_json(run / "curve.json", CurveFile(
        scenario="p99_5x", engine="sqlite", profile="ratio", ratio=8.4, command=f"make curve ENGINE=sqlite # {name}",
        points=points, projections=projections(points), complete=True, updated_utc=f"{day}T0{len(name)}:00:00Z"))
    (run / "report.md").write_text("# a curve\n")
    return run


def test_a_later_sittings_curve_keeps_the_earlier_beside_it_and_the_same_sittings_replaces_its_own(tmp_path):
    folder = tmp_path / "2026-12-05-success"
    first = _curve(tmp_path, "a", None, {0.25: 110.0, 1: 114.0, 2: 94.0})        # published before points kept a boot
    publish_curve(first, folder.parent, f"{folder.name}/degradation-reference")
    later = _curve(tmp_path, "bb", "cd855c4c-1111", {1: 120.0, 2: 130.0, 3: 140.0, 5: 150.0})
    dest = publish_curve(later, folder.parent, f"{folder.name}/degradation-reference")
    [kept] = (dest / "sittings").iterdir()
    assert kept.name == "2026-12-07-cpu-a-6.18" and (kept / "README.md").is_file()
    readme = (dest / "README.md").read_text()
    assert "## Each sitting" in readme
    assert "| 2026-12-07-cd855c4c (this one) | cpu-bb, fsync p50 150 µs | 5x | 52.50 | 6420m | 150 | 450 |" in readme
    assert f"| [2026-12-07-cpu-a-6.18](sittings/{kept.name}/README.md) | cpu-a, fsync p50 150 µs | 0.25x |" in readme
    [row] = [ln for ln in write(folder).read_text().splitlines() if ln.startswith("| Degradation curve")]
    assert "service p50 120 ms at 10.5 GiB → 150 ms at 52.5 GiB" in row
    assert "an earlier sitting (cpu-a, fsync p50 150 µs): service p50 110 ms at 2.6 GiB → 94 ms at 21.0 GiB" in row
    # the same sitting published again, with a point fewer: replaced, no point of the old left, no sitting added
    (tmp_path / "x").mkdir()
    again = _curve(tmp_path / "x", "bb", "cd855c4c-1111", {1: 121.0, 2: 131.0, 3: 141.0})
    publish_curve(again, folder.parent, f"{folder.name}/degradation-reference")
    assert [p.name for p in (dest / "sittings").iterdir()] == [kept.name]
    assert "| 5x |" not in (dest / "README.md").read_text().split("## Each sitting")[0]
