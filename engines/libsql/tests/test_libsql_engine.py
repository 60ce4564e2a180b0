"""What the libsql package really is and does: libSQL's own SQLite build (not the stdlib's),
and 64-bit integers that survive its Python binding."""
import sqlite3

import libsql
import pytest

from harness import registry
from harness.workload.block import MAX_BLOCK, Block

# Around the binding's thresholds: 2**31-1 (above it, a Python int is bound as a double), 2**53 (the
# last integer a double holds exactly), and the int64 edges (to_block of every current version is 2**63-1).
WIDE = [2**31 - 1, 2**31, 2**32 + 5, 2**53, 2**53 + 1, 2**62 + 3, MAX_BLOCK, -2**63]


@pytest.fixture
def engine(tmp_path):
    e = registry.engine_class("libsql")()
    e.open(registry.settings_model("libsql")().model_dump(mode="json"), tmp_path)
    e.create_schema("bitemporal")
    yield e
    e.close()


def test_integers_up_to_2_63_round_trip_as_integer_through_the_adapter(engine):
    """Each value goes in as from_block/to_block/value of a numeric attribute row, through the same
    prepare_block + apply_block path a run takes, and comes back as the same INTEGER."""
    rows = [(i.to_bytes(8, "big", signed=True), v, v, f"k{n}", v) for n, (i, v) in enumerate(zip(range(len(WIDE)), WIDE))]
    engine.apply_block(engine.prepare_block(Block(number=1, kind="ops", variant="bitemporal",
                                                  inserts={"numeric_attributes": rows})))
    got = engine.conn.execute("SELECT from_block, typeof(from_block), to_block, typeof(to_block), value, "
                              "typeof(value) FROM numeric_attributes ORDER BY key").fetchall()
    assert [(r[0], r[2], r[4]) for r in got] == [(v, v, v) for v in WIDE]
    assert {t for r in got for t in (r[1], r[3], r[5])} == {"integer"}


def test_the_raw_binding_is_still_lossy_so_the_workaround_stays():
    """If this fails, libsql binds 64-bit integers exactly now: drop _exact from the adapter (and its
    conversion cost from prepare_block)."""
    c = libsql.connect(":memory:")
    c.execute("CREATE TABLE t (v INTEGER)")
    for v in (2**53 + 1, MAX_BLOCK):
        c.execute("INSERT INTO t VALUES (?)", (v,))
    assert c.execute("SELECT v, typeof(v) FROM t").fetchall() != [(2**53 + 1, "integer"), (MAX_BLOCK, "integer")]


def test_the_result_names_the_sqlite_libsql_is_built_on(engine):
    """Its own build, not the stdlib's: the report puts it beside sqlite's and turso's."""
    info = engine.info()
    own = engine.conn.execute("select sqlite_version()").fetchone()[0]
    assert info.library == f"libSQL (SQLite {own})"
    assert info.related == {"sqlite": own} and own != sqlite3.sqlite_version
    assert info.driver.startswith("libsql ")


def test_a_local_file_gets_stock_sqlite_wal(engine):
    """The embedded package opens a local file with SQLite's own WAL: the -wal file carries SQLite's WAL
    magic and a -shm wal-index sits beside it (no virtual WAL, no bottomless replication). So whether
    libSQL changes checkpoint behaviour is measured, never assumed."""
    from harness.workload.generator import BlockGenerator
    from tests.conftest import mixed_spec
    gen = BlockGenerator(mixed_spec())
    for b in gen.load_blocks(60, 2000, 10):
        engine.apply_block(engine.prepare_block(b))
    assert engine._wal.checkpoint_seq() is not None, "SQLite's WAL header magic"
    assert engine.path.with_name(engine.path.name + "-shm").exists()
    assert engine.storage().wal_bytes > 0
