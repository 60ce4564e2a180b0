"""Starting states: the compact model, the cache's identity and refusals, the cold clone."""
import json
import os
from pathlib import Path

import pytest

from harness.errors import ConfigError
from harness.scenario.plan import resolve_plan
from harness.state import sizes, store
from harness.state.clone import clone
from harness.platform.pagecache import resident_bytes
from harness.workload.generator import BlockGenerator
from harness.workload.expected import LiveModel

MODEL_BYTES_PER_ENTITY_MAX = 64


def test_the_model_of_a_loaded_state_takes_at_most_64_bytes_per_live_entity(tmp_path):
    plan = resolve_plan("p99_5x", "sqlite", scale=0.025)          # 20K entities
    gen = BlockGenerator(plan.workload_spec())
    gen.load_model(plan.load_entities, plan.load.batch_rows, plan.load.expiry_spread_blocks)
    gen.model.save(tmp_path / "model.bin", gen.block_number)
    model, _ = LiveModel.restore(tmp_path / "model.bin", gen.shape, plan.workload.seed, plan.workload.variant)
    assert len(model.live_ids) == plan.load_entities
    assert model.bytes_per_live_entity() <= MODEL_BYTES_PER_ENTITY_MAX
    assert (tmp_path / "model.bin").stat().st_size <= MODEL_BYTES_PER_ENTITY_MAX * plan.load_entities


def test_the_load_model_takes_the_same_draws_as_the_row_by_row_load():
    plan = resolve_plan("p99_5x", "sqlite", scale=0.001)
    organic, bulk = BlockGenerator(plan.workload_spec()), BlockGenerator(plan.workload_spec())
    for _ in organic.load_blocks(plan.load_entities, plan.load.batch_rows, plan.load.expiry_spread_blocks):
        pass
    bulk.load_model(plan.load_entities, plan.load.batch_rows, plan.load.expiry_spread_blocks)
    assert organic.block_number == bulk.block_number
    assert organic.model.rng.getstate() == bulk.model.rng.getstate()
    assert organic.model.cols == bulk.model.cols and organic.model.live_ids == bulk.model.live_ids


def test_a_setting_that_shapes_the_files_or_a_scale_names_another_state():
    base = store.inputs_for(resolve_plan("p99_5x", "sqlite", scale=0.001))
    other_page = store.inputs_for(resolve_plan("p99_5x", "sqlite", scale=0.001,
                                               overrides=["engines.sqlite.page_size=8192"]))
    other_cache = store.inputs_for(resolve_plan("p99_5x", "sqlite", scale=0.001,
                                                overrides=["engines.sqlite.cache_size=1GB"]))
    other_scale = store.inputs_for(resolve_plan("p99_5x", "sqlite", scale=0.002))
    assert base.id != other_page.id and base.id != other_scale.id
    assert base.id == other_cache.id, "cache_size does not change the file: the state is shared"


def test_a_build_that_will_not_fit_is_refused_with_the_bytes(tmp_path, monkeypatch):
    monkeypatch.setattr(store, "free_bytes", lambda path: 2 << 30)
    with pytest.raises(ConfigError, match=r"needs about .* GiB .* and 2.0 GiB are free"):
        store.require_free(tmp_path, 5 << 30, "building the state x")


def test_a_clone_is_the_source_byte_for_byte_and_leaves_no_page_cached(tmp_path):
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    (src / "a.db").write_bytes(os.urandom(8 << 20))
    (src / "sub" / "b").write_bytes(os.urandom(1 << 20))
    c = clone(src, tmp_path / "dst")
    assert (tmp_path / "dst" / "a.db").read_bytes() == (src / "a.db").read_bytes()
    assert (tmp_path / "dst" / "sub" / "b").read_bytes() == (src / "sub" / "b").read_bytes()
    assert c.files == 2 and c.bytes >= 9 << 20 and c.method in ("copy", "reflink")
    # read back above, so warm now: a second clone must leave its copy cold
    c2 = clone(src, tmp_path / "dst2")
    resident = resident_bytes(tmp_path / "dst2")
    assert resident < 64 << 10, f"{resident} bytes of the clone still in the page cache"
    with pytest.raises(RuntimeError, match="empty directory"):
        clone(src, tmp_path / "dst2")


def test_a_full_copy_takes_a_large_file_around_the_page_cache_and_keeps_what_cp_a_keeps(tmp_path, monkeypatch):
    """The large files by direct I/O (its last block not a multiple of dd's), the small ones through the cache,
    symlinks as links; owner, mode and times as cp -a keeps them (a server's files are its user's)."""
    from harness.state import clone as c
    monkeypatch.setattr(c, "DIRECT_MIN_BYTES", 1 << 20)
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    big = os.urandom((3 << 20) + 4096 + 77)
    (src / "db").write_bytes(big)
    (src / "sub" / "small").write_bytes(b"x" * 100)
    (src / "link").symlink_to("db")
    os.chmod(src / "db", 0o640)
    if os.geteuid() == 0:
        os.chown(src / "sub" / "small", 999, 999)
    dst = tmp_path / "dst"
    dst.mkdir()
    calls = []
    real_run = c.subprocess.run
    monkeypatch.setattr(c.subprocess, "run", lambda cmd, **kw: calls.append(cmd) or real_run(cmd, **kw))
    c._copy(src, dst)
    assert [cmd[0] for cmd in calls] == ["dd"] and "oflag=direct" in calls[0], calls     # the large file only
    assert (dst / "db").read_bytes() == big and (dst / "sub" / "small").read_bytes() == b"x" * 100
    assert os.readlink(dst / "link") == "db" and (dst / "db").stat().st_mode == (src / "db").stat().st_mode
    assert (dst / "db").stat().st_mtime_ns == (src / "db").stat().st_mtime_ns
    assert (dst / "sub").stat().st_mtime_ns == (src / "sub").stat().st_mtime_ns
    if os.geteuid() == 0:
        assert (dst / "sub" / "small").stat().st_uid == 999


def test_states_are_listed_and_removed(tmp_path):
    (tmp_path / "a" / "data").mkdir(parents=True)
    (tmp_path / "a" / "data" / "f").write_bytes(b"x" * 10000)
    (tmp_path / "b.partial").mkdir()
    entries = {e["id"]: e for e in store.listing(tmp_path)}
    assert set(entries) == {"a", "b.partial"} and not entries["a"]["complete"] and entries["a"]["bytes"] >= 10000
    with pytest.raises(ConfigError, match="no state 'zzz'"):
        store.remove(tmp_path, ["zzz"])
    assert store.remove(tmp_path, ["a"]) == ["a"] and not (tmp_path / "a").exists()
    assert store.remove(tmp_path, []) == ["b.partial"]


def test_ratio_memory_limits_are_the_state_size_over_each_ratio():
    from harness.scenario.decision import RatioMems, load_decision
    from harness.walks.sweep import CellOptions
    from harness.walks.verdict import ratio_mems
    tree = load_decision()
    mems, basis = ratio_mems(tree, RatioMems(data_to_memory=[2.0, 8.0], size_of="sqlite"), "smoke", 0.001,
                             CellOptions(profile="smoke"))
    found = store.find(store.root_dir(), store.inputs_for(resolve_plan(tree.criteria[0].scenario, "sqlite",
                                                                       profile="smoke", scale=0.001)))
    assert found, "the size comes from the state, built when missing"
    size = found[1].data_bytes
    assert mems == [f"{max(16, int(size / 2.0) >> 20)}m", f"{max(16, int(size / 8.0) >> 20)}m"]
    assert "divided by 2, 8" in basis and f"{size / 2**30:.2f} GiB" in basis


def test_an_engine_out_of_memory_during_a_build_is_a_recorded_oom_not_a_crash(tmp_path):
    """DuckDB builds its indexes in memory: at a limit too small for them the build fails as an oom,
    recorded beside the states, and nothing half-built is left."""
    from harness.state.build import StateBuildFailed, build
    plan = resolve_plan("p99_5x", "duckdb", scale=0.01, overrides=["engines.duckdb.memory_limit=8MB"])
    inputs = store.inputs_for(plan)
    with pytest.raises(StateBuildFailed, match="Out of Memory") as e:
        build(plan, inputs, tmp_path)
    assert e.value.oom and "\n" not in str(e.value)
    failed = json.loads((tmp_path / f"{inputs.id}.failed.json").read_text())
    assert failed["oom"] is True and failed["id"] == inputs.id
    assert not (tmp_path / inputs.id).exists() and not (tmp_path / f"{inputs.id}.partial").exists()


def test_an_added_index_another_shape_or_changed_row_code_names_another_state(tmp_path, monkeypatch):
    """The id covers what shapes the files beyond the settings: the DDL text, the shape's parameters, the
    row generator's and bulk path's source, the build-only settings; MEM and its policy do not."""
    from dataclasses import replace

    from harness import registry
    from harness.workload import shapes
    plan = resolve_plan("p99_5x", "sqlite", scale=0.001)
    base = store.inputs_for(plan)
    assert base.id == store.inputs_for(resolve_plan("p99_5x", "sqlite", scale=0.001, mem="512m")).id, \
        "the memory policy's cache_size shapes no file"

    engines = tmp_path / "engines"
    (engines / "sqlite").mkdir(parents=True)
    ddl = registry.ddl("sqlite", "bitemporal")
    (engines / "sqlite" / "ddl-bitemporal.sql").write_text(ddl + "\nCREATE INDEX extra_idx ON payloads(to_block);\n")
    monkeypatch.setattr(registry, "ENGINES_DIR", engines)
    with_index = store.inputs_for(plan)
    monkeypatch.undo()
    assert with_index.id != base.id and with_index.ddl_sha256 != base.ddl_sha256

    monkeypatch.setitem(shapes.SHAPES, "mendoza", replace(shapes.SHAPES["mendoza"], payload_bytes_max=10 * 1024))
    assert store.inputs_for(plan).id != base.id
    monkeypatch.undo()

    store.code_digest.cache_clear()
    rows_py = Path(store.__file__).with_name("rows.py")
    monkeypatch.setattr(Path, "read_bytes", lambda p, orig=Path.read_bytes: orig(p) + (b"#" if p == rows_py else b""))
    assert store.inputs_for(plan).code_sha256 != base.code_sha256
    monkeypatch.undo()
    store.code_digest.cache_clear()

    from engines.sqlite import adapter
    monkeypatch.setitem(adapter.BUILD_PRAGMAS, "synchronous", "NORMAL")
    assert store.inputs_for(plan).id != base.id, "a build-only setting changes the files' history"


def test_a_much_smaller_state_does_not_estimate_a_build(tmp_path, monkeypatch):
    """A smoke cluster's fixed cost over 800 entities must not make 1x look 65 GiB: only a state of at least a
    tenth of the entities asked speaks for its size; else the shape's guess."""
    from harness.scenario.plan import resolve_plan
    monkeypatch.setenv(store.STATES_ENV, str(tmp_path))
    small = store.inputs_for(resolve_plan("p99_5x", "sqlite", profile="smoke", results_root=tmp_path))
    big = store.inputs_for(resolve_plan("p99_5x", "sqlite", scale=1.0, results_root=tmp_path))
    guess = sizes.estimate_bytes(tmp_path, big)
    d = tmp_path / small.id
    d.mkdir()
    man = store.StateManifest(id=small.id, inputs=small, method="bulk", engine_version="x", model_digest={},
                              logical_bytes=0, row_counts={}, rows=0, data_bytes=small.entities * 80_000, db_bytes=0,
                              model_bytes=0, model_bytes_per_entity=0, build_s=1, phases_s={}, rows_per_s=1,
                              build_only_settings={}, built_utc="")
    (d / store.MANIFEST).write_text(man.model_dump_json())
    assert sizes.estimate_bytes(tmp_path, big) == guess                    # 800 entities do not speak for 800,000
    assert sizes.estimate_bytes(tmp_path, small) == small.entities * 80_000  # but do for themselves


def test_a_state_moved_into_its_last_cell_still_sizes_the_next_build(tmp_path, monkeypatch):
    """DROP_STATES=1 takes the 1x state with its cell; the 5x build after it is sized from the ledger its build
    left (1x's bytes per entity), not from the shape's guess, which errs three times high and refused it here."""
    from harness.scenario.plan import resolve_plan
    monkeypatch.setenv(store.STATES_ENV, str(tmp_path))
    one, five = (store.inputs_for(resolve_plan("p99_5x", "sqlite", scale=s, results_root=tmp_path)) for s in (1.0, 5.0))
    guess = sizes.estimate_bytes(tmp_path, five)
    man = store.StateManifest(id=one.id, inputs=one, method="bulk", engine_version="x", model_digest={},
                              logical_bytes=0, row_counts={}, rows=0, data_bytes=one.entities * 13_600, db_bytes=0,
                              model_bytes=0, model_bytes_per_entity=0, build_s=1, phases_s={}, rows_per_s=1,
                              build_only_settings={}, built_utc="")
    sizes.remember(tmp_path, man)
    assert not list(tmp_path.glob("*/manifest.json")), "no state on disk"
    assert sizes.estimate_bytes(tmp_path, five) == five.entities * 13_600 < guess
    smaller = man.model_copy(update={"inputs": one.model_copy(update={"entities": 1000}), "data_bytes": 1})
    sizes.remember(tmp_path, smaller)
    assert sizes.estimate_bytes(tmp_path, five) == five.entities * 13_600, "the largest build stays the ledger's"


def test_an_aged_state_is_shared_across_cache_settings_and_not_across_layouts_or_blocks():
    from harness.state import aged

    def aged_id(*over):
        plan = resolve_plan("p99_5x", "sqlite", scale=0.001, overrides=["load.aged_state=true", *over])
        assert aged.wanted(plan)
        return aged.aged_inputs(plan, store.inputs_for(plan)).id
    base = store.inputs_for(resolve_plan("p99_5x", "sqlite", scale=0.001)).id
    one = aged_id()
    assert one != base and "-aged50-" in one
    assert aged_id("engines.sqlite.cache_size=1GB") == aged_id("engines.sqlite.mmap_size=1GB") == \
        aged_id("engines.sqlite.wal_autocheckpoint=0", "checkpoint.every_blocks=1") == one
    # the build opens with synchronous=OFF whatever the run's: a run at OFF shares the state (a 1x matrix
    # built a 10 GB base and aged it again for sync_off before this)
    assert aged_id("engines.sqlite.synchronous='OFF'") == one
    assert aged_id("engines.sqlite.page_size=8192") != one, "a page size is the file's own"
    assert aged_id("workload.rows_per_block=100") != one, "other blocks age it otherwise"
    assert aged_id("load.age_blocks=10") != one


def test_a_rows_knees_steps_clone_one_state_aged_at_the_scenarios_own_block_size():
    """12-06: each step of a rows knee at 1x aged a state of its own (8 to 11 GiB, 1.5 min a step); its steps now
    start from one, aged with the scenario's blocks, and each step's cell still writes its own."""
    from harness.state import aged
    from harness.walks.knee import step_cell
    start = resolve_plan("p99_5x", "sqlite", profile="ratio").workload.rows_per_block

    def step(rows: int):
        cell = step_cell("p99_5x", "sqlite", "rows", rows, None, 0.001, 1, False, aged_rows=start)
        plan = resolve_plan("p99_5x", "sqlite", profile="ratio", scale=0.001, overrides=list(cell.overrides))
        return plan, aged.aged_inputs(plan, store.inputs_for(plan)).id
    (small, small_id), (big, big_id) = step(start // 4), step(start * 2)
    assert small_id == big_id == step(start)[1]
    assert (small.workload.rows_per_block, big.workload.rows_per_block) == (start // 4, start * 2)
    assert small.ageing_spec().rows_per_block == big.ageing_spec().rows_per_block == start
    with pytest.raises(ConfigError, match="age_rows_per_block.*aged_state"):
        resolve_plan("p99_5x", "sqlite", scale=0.001, overrides=["load.age_rows_per_block=100"])


def test_a_build_with_no_size_to_go_by_asks_only_for_its_logical_bytes(tmp_path, monkeypatch):
    from harness.scenario.plan import resolve_plan
    monkeypatch.setenv(store.STATES_ENV, str(tmp_path))
    five = store.inputs_for(resolve_plan("p99_5x", "duckdb", scale=5.0, results_root=tmp_path))
    assert sizes.is_guess(tmp_path, five)
    assert sizes.required_bytes(tmp_path, five) * sizes.GUESS_BYTES_PER_LOGICAL == \
        pytest.approx(sizes.estimate_bytes(tmp_path, five), rel=1e-6)
