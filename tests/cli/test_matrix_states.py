"""DROP_STATES=1 on a real matrix: a base state goes once its aged state is built (cells clone aged states),
an option with a layout of its own (page size) has its aged state removed after its cell, before the next
option's cell runs, while the baseline's stays until the matrix is done; the disk it needs is said before
the first cell. The last cell to clone a state moves its data in (the state would go after it anyway)."""
import json
import re

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
def test_drop_states_keeps_aged_states_only_and_an_options_only_while_it_runs(tmp_path, monkeypatch,
                                                                                      capsys):
    opts = use_matrix(tmp_path, monkeypatch, MATRIX)
    monkeypatch.setenv("STATES", str(tmp_path / "states"))
    listed = lambda: sorted(e["id"] for e in store.listing(tmp_path / "states"))  # noqa: E731
    seen = []                                    # (option, the states before its cell, and after it)

    def watching(cr, label, run_cell=sweep.run_cell):
        before = listed()
        rec = run_cell(cr, label)
        if cr.cell.tag not in {tag for tag, _, _ in seen}:      # the baseline's second call finds it complete
            seen.append((cr.cell.tag, before, listed()))
        return rec
    monkeypatch.setattr(sweep, "run_cell", watching)
    assert hm.matrix("sqlite", "p99_5x", None, None, opts, tmp_path / "results", drop_states=True) in (0, 1)
    err = capsys.readouterr().err
    assert "[matrix] disk: needs about" in err and "(an option's own states dropped after its cells)" in err
    assert re.search(r"\[matrix\] sqlite at no limit: \d+\.\d min wall in this run, states included", err), err[-500:]
    # the first three cells (a fourth, the best combination, runs when both options helped)
    (base, _, base_after), (page, page_before, page_after), (cache, cache_before, _) = seen[:3]
    assert (base, page, cache) == ("baseline", "page_8k", "cache_small")
    [base_aged] = [sid for sid in base_after if "-aged" in sid]
    assert len(base_after) == 2, "the baseline's cell built its base and its aged state"
    # between the cells, the page size's states were built and both bases went: cells clone aged states
    assert len(page_before) == 2 and all("-aged" in sid for sid in page_before) and base_aged in page_before
    assert page_after == [base_aged], "the page size's only cell took its aged state (moved, not copied)"
    assert cache_before == [base_aged], "the page size's aged state went with its cell; the baseline's stays"
    moved = {f.parent.name.split("-")[1]: json.loads(f.read_text())["clone_method"]       # sqlite-<tag>-...
             for f in (tmp_path / "results").rglob("state.json")}
    assert moved["page_8k"] == "move" and moved["baseline"] == moved["cache_small"] == "copy", moved
    assert store.listing(tmp_path / "states") == [], "all gone once the matrix is done"


def test_a_matrix_the_disk_cannot_hold_is_refused_before_its_first_cell(tmp_path, monkeypatch):
    opts = use_matrix(tmp_path, monkeypatch, MATRIX)
    monkeypatch.setenv("STATES", str(tmp_path / "states"))
    monkeypatch.setattr(store, "free_bytes", lambda path: 1 << 20)
    with pytest.raises(ConfigError, match=r"the matrix needs about .* GiB .* and 0\.0 GiB are free; DROP_STATES=1"):
        hm.matrix("sqlite", "p99_5x", None, None, opts, tmp_path / "results")
    assert not list((tmp_path / "results").rglob("result.json")), "no cell ran"


def test_the_disk_a_matrix_needs_is_its_peak_with_drop_states_and_the_sum_without(monkeypatch):
    from types import SimpleNamespace as NS

    from harness import matrix_states as ms
    from harness.state import derive
    gib = ms.GIB
    # PostgreSQL at 1x: every base and aged state 23 GiB; the baseline layout, an option of its own layout,
    # and one more cell of the baseline's
    layouts = {"base": ["B", "B-aged"], "idx": ["I", "I-aged"]}
    runs = [NS(plan=name) for name in ("base", "idx", "base")]
    monkeypatch.setattr(ms, "state_inputs", lambda plan: [NS(id=i) for i in layouts[plan]])
    monkeypatch.setattr(ms, "_bytes", lambda root, inputs: (23 * gib, False))
    monkeypatch.setattr(derive, "sources", lambda plan: [NS(id="B")] if plan == "ff" else [])
    need, lines = ms.disk_needed(runs, None, drop_states=True)
    assert need == 69 * gib       # the baseline's aged + its base and a clone, or the other's base and aged
    assert ms.disk_needed(runs, None, drop_states=False)[0] == 115 * gib     # all four, and a clone
    assert len(lines) == 5 and lines[-1] == "one clone at a time: up to 23.0 GiB"
    # a layout whose base derives from the baseline's (a fillfactor): that base stays beside it meanwhile
    layouts["ff"] = ["F", "F-aged"]
    runs.append(NS(plan="ff"))
    assert ms.disk_needed(runs, None, drop_states=True)[0] == 92 * gib       # B-aged + B, F and F-aged


def test_a_base_stays_while_a_state_still_to_derive_reads_it(monkeypatch):
    """The baseline's base, which every aged state it ran has on disk, stays while a pending cell's base is
    still to derive from it (a fillfactor's), and goes once that cell's aged state is on disk."""
    from types import SimpleNamespace as NS

    from harness import matrix_states as ms
    from harness.state import derive
    on_disk = {"B-aged"}
    monkeypatch.setattr(ms.store, "root_dir", lambda: None)
    monkeypatch.setattr(ms.store, "find", lambda root, inputs: (None, None) if inputs.id in on_disk else None)
    monkeypatch.setattr(derive, "sources", lambda plan: [NS(id="B")] if plan == "ff" else [])
    ran, pending = [[NS(id="B"), NS(id="B-aged")]], [[NS(id="F"), NS(id="F-aged")]]
    assert ms._bases_done(ran, pending, ["ff"]) == [], "F is still to derive from B"
    assert ms._bases_done(ran, pending, ["other"]) == ["B"], "no derivation reads B: it goes"
    on_disk |= {"F", "F-aged"}
    assert ms._bases_done(ran, pending, ["ff"]) == ["B", "F"], "both aged states are on disk"
