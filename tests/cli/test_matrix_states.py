"""DROP_STATES=1 on a real matrix: an option with a layout of its own (page size) has its states removed
after its cell, before the next option's cell runs, while the baseline's stay until the matrix is done;
the disk it needs is said before the first cell."""
import pytest

from harness import matrix as hm
from harness import sweep
from harness.errors import ConfigError
from harness.state import store
from tests.cli.test_matrix_pick import use_matrix

MATRIX = """
noise: 0.1
cells: {warmup_blocks: 2, measure_blocks: 4, aged_state: true, integrity: counts}
engines:
  sqlite:
    options:
      page_8k: {says: "page_size 8 KiB", group: page, cost: 1, settings: {page_size: 8192}}
      cache_small: {says: "a small cache", group: cache, cost: 0, settings: {cache_size: 2MB}}
"""


@pytest.mark.slow
def test_drop_states_removes_an_options_layout_after_its_cell_and_the_rest_at_the_end(tmp_path, monkeypatch,
                                                                                      capsys):
    opts = use_matrix(tmp_path, monkeypatch, MATRIX)
    monkeypatch.setenv("STATES", str(tmp_path / "states"))
    listed = lambda: sorted(e["id"] for e in store.listing(tmp_path / "states"))  # noqa: E731
    seen = []                                    # (option, the states before its cell, and after it)

    def watching(cr, label, run_cell=sweep.run_cell):
        before = listed()
        rec = run_cell(cr, label)
        seen.append((cr.cell.tag, before, listed()))
        return rec
    monkeypatch.setattr(sweep, "run_cell", watching)
    assert hm.matrix("sqlite", "p99_5x", None, None, opts, tmp_path / "results", drop_states=True) in (0, 1)
    err = capsys.readouterr().err
    assert "[matrix] disk: needs about" in err and "(an option's own states dropped after its cells)" in err
    (base, _, base_after), (page, _, page_after), (cache, cache_before, _) = seen[:3]
    assert (base, page, cache) == ("baseline", "page_8k", "cache_small")
    page_own = [sid for sid in page_after if sid not in base_after]
    assert len(page_own) == 2 and sum("-aged" in s for s in page_own) == 1     # its base and its aged state
    assert not set(page_own) & set(cache_before), "the page size's states went before the next cell"
    assert set(base_after) <= set(cache_before), "the baseline's states stay"
    assert store.listing(tmp_path / "states") == [], "all gone once the matrix is done"


def test_a_matrix_the_disk_cannot_hold_is_refused_before_its_first_cell(tmp_path, monkeypatch):
    opts = use_matrix(tmp_path, monkeypatch, MATRIX)
    monkeypatch.setenv("STATES", str(tmp_path / "states"))
    monkeypatch.setattr(store, "free_bytes", lambda path: 1 << 20)
    with pytest.raises(ConfigError, match=r"the matrix needs about .* GiB .* and 0\.0 GiB are free; DROP_STATES=1"):
        hm.matrix("sqlite", "p99_5x", None, None, opts, tmp_path / "results")
    assert not list((tmp_path / "results").rglob("result.json")), "no cell ran"
