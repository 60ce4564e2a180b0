"""MEM reaches every engine the way its users give it memory (engine.toml [memory], harness/scenario/memory.py),
and the settings a run asked for are the ones the engine reports back: compared value for value, in bytes."""
import pytest

from harness import registry
from harness.scenario.plan import resolve_plan
from harness.units import parse_size_bytes

MEM = "512m"


def as_bytes(setting: str, value, page_bytes: int = 4096) -> int:
    """A size as asked or read back: SQLite's cache_size (negative: KiB; positive: pages), PostgreSQL's
    '128MB', DuckDB's '244.1 MiB'."""
    if isinstance(value, int) or (isinstance(value, str) and value.lstrip("-").isdigit()):
        n = int(value)
        return -n * 1024 if n < 0 else n * page_bytes
    return parse_size_bytes(value.replace(" ", ""))


def read_back(name: str, settings: dict, data_dir) -> dict:
    e = registry.engine_class(name)()
    e.open(settings, data_dir)
    try:
        return e.info().settings
    finally:
        e.close()


@pytest.mark.parametrize("engine", registry.names())
def test_sized_settings_read_back_equal_to_the_fractions_of_mem(engine, open_tmp):
    plan = resolve_plan("reorg", engine, profile="smoke", mem=MEM)
    sizing = registry.manifest(engine).memory
    assert plan.memory.policy == "sized" and set(plan.memory.sized_settings) == set(sizing.sized)
    got = read_back(engine, plan.engine_settings, open_tmp / "db")
    for setting, fraction in sizing.sized.items():
        asked = int(fraction * parse_size_bytes(MEM)) >> 20 << 20
        assert as_bytes(setting, plan.engine_settings[setting]) == asked, setting
        # DuckDB prints its limit to 0.1 MiB
        assert abs(as_bytes(setting, got[setting]) - asked) <= 0.001 * asked, (setting, got[setting], asked)
    cache = int(sizing.sized[sizing.cache] * parse_size_bytes(MEM)) if sizing.cache else None
    assert plan.memory.engine_cache_bytes == cache       # none: MEM reaches it through the page cache alone


@pytest.mark.parametrize("engine", ["sqlite", "postgres"])
def test_stock_and_explicit_settings_are_left_as_asked(engine, open_tmp):
    setting = registry.manifest(engine).memory.cache
    stock = resolve_plan("reorg", engine, profile="smoke", mem=MEM, overrides=["memory.policy=stock"])
    default = registry.settings_model(engine)().model_dump(mode="json")[setting]
    assert stock.memory.sized_settings == {} and stock.engine_settings[setting] == default
    explicit = resolve_plan("reorg", engine, profile="smoke", mem=MEM, overrides=[f"engines.{engine}.{setting}=40MB"])
    assert setting not in explicit.memory.sized_settings
    got = read_back(engine, explicit.engine_settings, open_tmp / "db")
    assert as_bytes(setting, got[setting]) == 40 << 20


@pytest.mark.parametrize("engine,asked,setting,expected", [
    ("sqlite", "commit", "synchronous", 2), ("sqlite", "checkpoint", "synchronous", 1),
    ("postgres", "commit", "synchronous_commit", "on"), ("postgres", "checkpoint", "synchronous_commit", "off")])
def test_durability_selects_the_matching_setting_and_the_plan_says_what_a_commit_guarantees(
        engine, asked, setting, expected, open_tmp):
    plan = resolve_plan("reorg", engine, profile="smoke", overrides=[f"durability={asked}"])
    assert read_back(engine, plan.engine_settings, open_tmp / "db")[setting] == expected
    assert plan.durability.startswith("at commit" if asked == "commit" else
                                      "at checkpoint" if engine == "sqlite" else "after the WAL writer")


@pytest.mark.parametrize("connections", [1, 10])
def test_reader_connections_divide_the_cache_share_where_each_keeps_its_own(connections, open_tmp):
    """SQLite's cache is each connection's: at the writer's share apiece, ten readers scanning the DC counts grew
    past MEM (OOM-killed, 12-06). The readers divide the share; the writer keeps it; the connections say so."""
    plan = resolve_plan("read_mix_a", "sqlite", profile="smoke", mem=MEM,
                        overrides=[f"readers.threads={connections}"])
    share = int(0.5 * parse_size_bytes(MEM)) >> 20 << 20
    assert plan.memory.sized_settings["reader_cache_size"] == f"{(share // connections) >> 20}MB"
    e = registry.engine_class("sqlite")()
    e.open(plan.engine_settings, open_tmp / "db")
    try:
        e.create_schema("bitemporal")
        reader = e.reader()
        try:
            got = next(iter(reader.handle.execute("PRAGMA cache_size")))[0]
        finally:
            reader.close()
        writer = next(iter(e.conn.execute("PRAGMA cache_size")))[0]
    finally:
        e.close()
    assert as_bytes("cache_size", writer) == share
    assert as_bytes("cache_size", got) == (share // connections) >> 20 << 20


def test_a_run_without_readers_sizes_no_reader_cache_and_an_explicit_one_is_kept():
    assert "reader_cache_size" not in resolve_plan("reorg", "sqlite", profile="smoke", mem=MEM).memory.sized_settings
    plan = resolve_plan("read_mix_a", "sqlite", profile="smoke", mem=MEM,
                        overrides=["readers.threads=10", "engines.sqlite.reader_cache_size=64MB"])
    assert "reader_cache_size" not in plan.memory.sized_settings
    assert plan.engine_settings["reader_cache_size"] == -(64 << 10)
