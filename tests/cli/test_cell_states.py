"""DROP_STATES=1 on a real matrix: a base state goes once its aged state is built (cells clone aged states),
an option with a layout of its own (page size) has its aged state removed after its cell, before the next
option's cell runs, while the baseline's stays until the matrix is done; the disk it needs is said before
the first cell. The last cell to clone a state moves its data in (the state would go after it anyway)."""
import json
import re
from pathlib import Path

import pytest

from harness.walks import matrix as hm
from harness.walks import sweep
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
    # the page size's aged state took its base by rename (no later cell needed it); the baseline's was copied
    assert err.count("[state] took the base ") == 1, err[-3000:]
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

    from harness import cell_states as ms
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

    from harness import cell_states as ms
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


@pytest.mark.slow
def test_a_sweeps_last_cell_moves_its_state_in_and_no_earlier_cell_does(tmp_path, monkeypatch, capsys):
    """Two repeats of one cell clone one state: with DROP_STATES=1 the first copies it, the second (its last)
    moves it in, and it is gone after; the run's record and log say moved, not copied."""
    monkeypatch.setenv("STATES", str(tmp_path / "states"))
    opts = sweep.CellOptions(profile="smoke", runtime="local", duration_s=2, data_root=str(tmp_path / "data"))
    assert sweep.sweep("p99_5x", ["sqlite"], [None], [None], 2, opts, tmp_path / "results", drop_states=True) in (0, 1)
    err = capsys.readouterr().err
    assert "[sweep] disk: needs about" in err and "(states dropped after their last cell)" in err
    records = sorted((tmp_path / "results").rglob("state.json"))
    assert [json.loads(f.read_text())["clone_method"] for f in records] == ["copy", "move"], records
    assert err.count("[state] cloned ") == 1 and err.count("[state] took ") == 1, err[-2000:]
    assert store.listing(tmp_path / "states") == [], "the state went with its last cell"
    assert not list((tmp_path / "states").glob("*.taken")), "the moved state's remains went too"


def test_a_walk_where_not_every_clone_fits_is_said_and_refused_only_where_not_one_state_fits(tmp_path, monkeypatch,
                                                                                            capsys):
    """A disk that holds a state but not a clone beside it: DROP_STATES=1 walks on, each cell deciding when it
    starts (test below); without it, or where even one state does not fit, refused before anything is built."""
    from harness import cell_states as cs
    from harness.scenario.plan import resolve_plan
    monkeypatch.setenv("STATES", str(tmp_path / "states"))
    monkeypatch.setattr(cs.probe, "guessed", lambda plans: [])   # the arithmetic on the guess (test_size_probe.py)
    plans = [resolve_plan("p99_5x", e, profile="ratio", mem=m) for e in ("sqlite", "postgres") for m in ("4g", "2g")]
    need = cs.walk_disk(plans, tmp_path / "states", drop_states=True)
    assert need.taking < need.cloning < cs.walk_disk(plans, tmp_path / "states", drop_states=False).cloning
    assert len(need.lines) == 6, need.lines     # each engine's base and aged state, the clone, a cell's writes
    monkeypatch.setattr(store, "free_bytes", lambda path: need.taking + cs.MARGIN + (1 << 20))
    assert cs.check_walk_disk(plans, drop_states=True, who="sweep") is False
    assert "a cell whose clone does not fit when its turn comes moves its state in" in capsys.readouterr().err
    with pytest.raises(ConfigError, match=r"the sweep needs about .* GiB .* are free; DROP_STATES=1"):
        cs.check_walk_disk(plans, drop_states=False, who="sweep")
    monkeypatch.setattr(store, "free_bytes", lambda path: need.taking // 2)
    with pytest.raises(ConfigError, match=r"the verdict needs about .* GiB"):
        cs.check_walk_disk(plans, drop_states=True, who="verdict")
    assert not (tmp_path / "states").exists() or not any((tmp_path / "states").iterdir()), "nothing built"


def test_a_cells_writes_are_reckoned_from_its_rows_the_states_bytes_per_row_and_its_spool():
    from harness import cell_states as cs
    from harness.scenario.plan import resolve_plan
    plan = resolve_plan("p99_5x", "sqlite", profile="ratio")
    inputs = store.inputs_for(plan)
    rows = inputs.entities * store.SHAPES[inputs.shape].rows_per_entity
    blocks = (plan.phases.warmup_s + plan.phases.measure_s) * 1000 / plan.workload.block_interval_ms
    offered = blocks * plan.workload.rows_per_block         # and the feed's spool of them, outside the state
    want = (100 + cs.sizes.SPOOL_BYTES_PER_ROW) * offered
    assert cs.sizes.growth_bytes(plan, rows * 100) == pytest.approx(want, abs=1)


def test_a_verdict_goes_on_without_a_later_engine_whose_state_cannot_fit(tmp_path, monkeypatch, capsys):
    """At 5x here a PostgreSQL state (~112 GiB) fits no disk this machine has: a verdict with DROP_STATES=1 says
    so and walks the engines that fit (where only the shape's guess sizes it, that it may not, and its first
    build tells); the first engine must fit, or nothing runs."""
    from harness import cell_states as cs
    from harness.scenario.plan import resolve_plan
    monkeypatch.setenv("STATES", str(tmp_path / "states"))
    plans = [resolve_plan("p99_5x", e, profile="ratio", mem="4g") for e in ("sqlite", "postgres")]
    sizes = {"sqlite": 10 * cs.GIB, "postgres": 40 * cs.GIB}
    monkeypatch.setattr(cs, "_bytes", lambda root, inputs: (sizes[inputs.engine], False))
    sqlite_alone = cs.walk_disk(plans[:1], tmp_path / "states", True)
    monkeypatch.setattr(store, "free_bytes", lambda path: sqlite_alone.cloning + cs.MARGIN)
    assert cs.check_walk_disk(plans, True, "verdict", skip_later=True) is False
    assert re.search(r"postgres's states may not fit \(about [\d.]+ GiB by the shape's guess", capsys.readouterr().err)
    monkeypatch.setattr(cs.sizes, "is_guess", lambda root, inputs: False)      # a build near its size says so
    assert cs.check_walk_disk(plans, True, "verdict", skip_later=True) is False
    assert re.search(r"postgres's states do not fit \(about [\d.]+ GiB with every cell", capsys.readouterr().err)
    with pytest.raises(ConfigError, match="the sweep needs about"):
        cs.check_walk_disk(plans, True, "sweep")          # a sweep asked for every cell: refused
    sizes["sqlite"] = 80 * cs.GIB
    with pytest.raises(ConfigError, match="the verdict needs about"):
        cs.check_walk_disk(plans, True, "verdict", skip_later=True)


def test_a_cell_whose_state_does_not_fit_records_build_failed_and_builds_nothing(tmp_path, monkeypatch):
    from harness.cell import execute
    from harness.results import load_result
    from harness.scenario.plan import resolve_plan
    monkeypatch.setenv("STATES", str(tmp_path / "states"))
    monkeypatch.setattr(store, "free_bytes", lambda path: 1 << 20)
    plan = resolve_plan("reorg", "sqlite", profile="smoke", results_root=tmp_path / "results",
                        data_root=tmp_path / "data").model_copy(update={"runtime": "local"})
    assert execute(plan) != 0
    r = load_result(Path(plan.run_dir) / "result.json")
    assert r.status == "build_failed" and "needs about" in r.error and "GiB are free" in r.error, r.error
    assert store.listing(tmp_path / "states") == [], "nothing built"


def test_a_cell_whose_aged_state_is_on_disk_needs_no_base(tmp_path, monkeypatch):
    """make state at 5x ages the state by taking its base: the run after it needs the aged state's writes only,
    not the base again (which refused the first 5x run here: 63.6 GiB asked, 26 GiB free)."""
    from harness import cell_states as cs
    from harness.scenario.plan import resolve_plan
    plan = resolve_plan("p99_5x", "sqlite", profile="ratio", mem="4g")
    base, aged_state = cs.state_inputs(plan)
    on_disk = {aged_state.id}
    monkeypatch.setattr(cs, "_bytes", lambda root, inputs: (10 * cs.GIB, inputs.id in on_disk))
    need = cs.walk_disk([plan], tmp_path, True)
    assert need.taking == cs.sizes.growth_bytes(plan, 10 * cs.GIB) and not any("to build" in ln for ln in need.lines)
    on_disk.clear()
    assert cs.walk_disk([plan], tmp_path, True).taking == 10 * cs.GIB + cs.sizes.growth_bytes(plan, 10 * cs.GIB)


def test_a_data_centre_states_writes_are_reckoned_from_its_seeds_rows():
    """dc_read_mix's state holds the DC seed and no mendoza entity: its rows are the seed's (a cell's writes
    came to 1,235 GiB over 0 mendoza rows before)."""
    from harness import cell_states as cs
    from harness.scenario.plan import resolve_plan
    from harness.state import sizes
    from harness.workload.generator import DC_ROWS_PER_ENTITY
    plan = resolve_plan("dc_read_mix", "sqlite", profile="smoke")
    inputs = store.inputs_for(plan)
    assert inputs.entities == 0 and sizes.dc_seed_entities(inputs) > 0
    rows = sizes.dc_seed_entities(inputs) * DC_ROWS_PER_ENTITY
    interval_ms = plan.workload.block_interval_ms or cs.sizes.UNTHROTTLED_BLOCK_MS
    blocks = (plan.phases.warmup_s + plan.phases.measure_s) * 1000 / interval_ms
    offered = blocks * plan.workload.rows_per_block         # and the feed's spool of them, outside the state
    want = (100 + cs.sizes.SPOOL_BYTES_PER_ROW) * offered
    assert cs.sizes.growth_bytes(plan, rows * 100) == pytest.approx(want, abs=1)


@pytest.mark.slow
def test_a_cell_whose_clone_does_not_fit_when_it_starts_moves_its_state_in_and_one_that_fits_copies_it(
        tmp_path, monkeypatch):
    """Whether a clone fits is the disk's when the cell starts (earlier cells may have left states or not): one
    that fits copies and leaves the state listed; one that does not moves the state in, and it is gone after."""
    from harness import cell
    from harness.scenario.plan import resolve_plan
    from harness.state.build import ensure
    monkeypatch.setenv("STATES", str(tmp_path / "states"))
    plan = resolve_plan("reorg", "sqlite", profile="smoke", results_root=tmp_path / "results",
                        data_root=tmp_path / "data").model_copy(update={"runtime": "local"})
    state_dir, man, _ = ensure(plan)
    started = cell.start_state(plan)
    assert not started.take_state and store.listing(tmp_path / "states"), "room for a copy: the state stays"
    assert json.loads((Path(plan.run_dir) / "state.json").read_text())["clone_method"] == "copy"
    roomy = store.free_bytes
    monkeypatch.setattr(store, "free_bytes", lambda path: man.data_bytes + (1 << 20))     # no room for a clone
    second = plan.model_copy(update={"run_dir": str(tmp_path / "results" / "second"),
                                     "data_dir": str(tmp_path / "data" / "second")})
    started = cell.start_state(second)
    assert started.take_state
    assert json.loads((Path(second.run_dir) / "state.json").read_text())["clone_method"] == "move"
    monkeypatch.setattr(store, "free_bytes", roomy)
    assert [s for s in store.listing(tmp_path / "states") if s["id"] == man.id] == [], "moved: no longer listed"


@pytest.mark.slow
def test_a_reads_alone_cell_with_no_room_for_a_copy_links_its_state_and_leaves_it_listed(tmp_path, monkeypatch):
    """A link takes no room: 12-06's read ceiling on the 2-DC state (32.8 GiB, no room for a copy beside it) moved
    the state into each step and built it again for the next, six minutes a step, where a link would do."""
    from harness import cell
    from harness.scenario.plan import resolve_plan
    from harness.state.build import ensure
    monkeypatch.setenv("STATES", str(tmp_path / "states"))
    plan = resolve_plan("read_mix_dc", "sqlite", profile="smoke", results_root=tmp_path / "results",
                        data_root=tmp_path / "data").model_copy(update={"runtime": "local"})
    _, man, _ = ensure(plan)
    monkeypatch.setattr(store, "free_bytes", lambda path: man.data_bytes + (1 << 20))     # no room for a clone
    started = cell.start_state(plan)
    assert not started.take_state
    assert json.loads((Path(plan.run_dir) / "state.json").read_text())["clone_method"] == "link"
    assert man.id in [s["id"] for s in store.listing(tmp_path / "states")], "linked: still listed"


@pytest.mark.slow
def test_an_ageing_with_no_room_for_a_copy_of_its_base_and_a_clone_takes_the_base(tmp_path, monkeypatch, capsys):
    """The aged state is made from its base by copy where the disk holds both and a cell's clone of the aged
    state, else by moving the base in (a later cell that needs the base builds it again): said, and the base no
    longer listed. Room for the copy alone is not enough (12-06: the copy left no room for the clone)."""
    from harness.scenario.plan import resolve_plan
    from harness.state.build import ensure
    monkeypatch.setenv("STATES", str(tmp_path / "states"))
    plan = resolve_plan("p99_5x", "sqlite", profile="smoke")
    plan = plan.model_copy(update={"load": plan.load.model_copy(update={"aged_state": True, "age_blocks": 3})})
    _, base, _ = ensure(plan, aged_ok=False)
    # room for a copy of the base, not for the copy and a clone of the aged state beside it
    monkeypatch.setattr(store, "free_bytes", lambda path: base.data_bytes + store.MARGIN_BYTES + (1 << 20))
    _, aged_man, built = ensure(plan)
    assert built and aged_man.inputs.aged["base"] == base.id
    assert "no room for a copy and a cell's clone beside it" in capsys.readouterr().err
    assert [s["id"] for s in store.listing(tmp_path / "states")] == [aged_man.id], "the base was moved, not kept"
