"""A matrix over real cells picks what is known to be better: an option that offers a tenth of the rows helps
beyond the noise and is the combination; one that offers five times the rows is not. Each cell clones one aged
state per workload and checks its rows by their counts, as the matrix's cell rule asks."""
import json

import pytest

from harness.walks import matrix as hm
from harness.results import load_matrix_run
from harness.scenario.matrix import load_matrix
from harness.walks.sweep import CellOptions

MATRIX = """
noise: 0.1
cells: {warmup_blocks: 10, measure_blocks: 20, aged_state: true, integrity: counts}
engines:
  sqlite:
    options:
      fewer_rows: {says: "a tenth of the rows", group: a, cost: 0, set: {workload.rows_per_block: 60}}
      more_rows: {says: "five times the rows", group: b, cost: 0, set: {workload.rows_per_block: 3000}}
"""


def use_matrix(tmp_path, monkeypatch, text: str) -> CellOptions:
    """The matrix file `text` in place of scenarios/matrix.yaml; the smoke cells' options, run here."""
    f = tmp_path / "matrix.yaml"
    f.write_text(text)
    monkeypatch.setattr(hm, "load_matrix", lambda: load_matrix(f))
    return CellOptions(profile="smoke", runtime="local", data_root=str(tmp_path / "data"))


@pytest.mark.serial
@pytest.mark.slow
def test_a_matrix_picks_the_option_known_to_be_better(tmp_path, monkeypatch):
    opts = use_matrix(tmp_path, monkeypatch, MATRIX)
    assert hm.matrix("sqlite", "p99_5x", None, None, opts, tmp_path / "results") in (0, 1)
    [root] = (tmp_path / "results").glob("matrix-sqlite-p99_5x-*")
    m = load_matrix_run(root / "matrix.json")
    rows = {r.option: r for r in m.rows}
    assert m.basis == "service p50" and all(r.status in ("passed", "failed") for r in m.rows)
    assert rows["fewer_rows"].helped is True and rows["more_rows"].helped is False
    assert m.combination == ["fewer_rows"]
    # the cell rule: 20 measured blocks, row counts, an aged state shared per workload
    results = [json.loads(p.read_text()) for p in root.glob("p99_5x/*/result.json")]
    assert len(results) == 3
    assert {r["integrity"]["method"] for r in results} == {"counts"}
    assert all(r["load"]["state_aged_blocks"] > 0 and r["load"]["age_blocks"] == 0 for r in results)
    assert all(r["metrics"]["service_time_ms"]["count"] <= 22 for r in results)
    # settled: the option that cannot beat the baseline stops once that is certain (its 11th slow block of
    # 20), the one that may help and the baseline run every block
    def result_of(tag):
        [p] = root.glob(f"p99_5x/sqlite-{tag}-*/result.json")
        return json.loads(p.read_text())
    worse, better, base = result_of("more_rows"), result_of("fewer_rows"), result_of("baseline")
    limit = round(base["metrics"]["service_time_ms"]["p50"] * 0.9, 3)
    settled = worse["settled"]
    assert worse["plan"]["settle_service_p50_ms"] == limit and worse["metrics"]["service_time_ms"]["count"] < 20
    if "budget_s" in settled:       # a loaded machine: past the cell's clock budget with every block over the limit
        assert settled["every_block_over_ms"] == limit and 1 <= settled["block"] < 20
    else:
        assert settled["service_p50_ms_not_below"] == limit and 11 <= settled["block"] < 20
    assert rows["more_rows"].settled_blocks == worse["settled"]["block"] and rows["more_rows"].passed is None
    assert better["settled"] is None and base["settled"] is None and base["plan"]["settle_service_p50_ms"] is None
    assert better["metrics"]["service_time_ms"]["count"] >= 20
    assert "settled after" in (root / "matrix.md").read_text()
