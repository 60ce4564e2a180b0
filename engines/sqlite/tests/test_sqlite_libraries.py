"""Which SQLite the sqlite engine runs, and what each binding of the SQLite family does with a 64-bit
integer: the tree's SQLite → libSQL step compares like with like only if these hold."""
import json
import sqlite3
import subprocess
import sys

import apsw
import libsql
import pytest
import turso

from harness import registry
from harness.errors import ConfigError
from harness.workload.generator import BlockGenerator
from tests.conftest import ROOT, mixed_spec


def _engine(tmp_path, name="sqlite", **settings):
    e = registry.engine_class(name)()
    e.open(registry.settings_model(name)(**settings).model_dump(mode="json"), tmp_path / name)
    e.create_schema("bitemporal")
    return e


def _load(engine, blocks=8):
    for b in BlockGenerator(mixed_spec()).load_blocks(blocks * 50, 2000, 50):
        engine.apply_block(engine.prepare_block(b))


def test_by_default_sqlite_runs_the_sqlite_libsql_is_built_on(tmp_path):
    """Fails the day the APSW pin and the libsql pin drift apart: change them together (engine.toml)."""
    s, lib = _engine(tmp_path), _engine(tmp_path, "libsql")
    try:
        si, li = s.info(), lib.info()
        assert si.driver == f"APSW {apsw.apsw_version()}" and apsw.apsw_version().startswith(apsw.sqlite_lib_version())
        assert si.library == f"SQLite {apsw.sqlite_lib_version()}"
        assert si.related["sqlite"] == li.related["sqlite"] == lib.conn.execute("select sqlite_version()").fetchone()[0]
        assert si.settings["library"] == "apsw"
    finally:
        s.close(), lib.close()


def test_the_stdlib_library_is_pythons_sqlite3(tmp_path):
    e = _engine(tmp_path, library="stdlib")
    try:
        info = e.info()
        assert info.related["sqlite"] == sqlite3.sqlite_version and info.driver.endswith("sqlite3 module")
        assert isinstance(e.conn, sqlite3.Connection) and info.settings["library"] == "stdlib"
    finally:
        e.close()


def test_apsw_newest_loads_its_own_build_in_its_own_process(tmp_path):
    """The side install (engine.toml's side_requirements) in a fresh process, as a runner would load it."""
    code = ("import json, sys; from pathlib import Path; from harness import registry; "
            "e = registry.engine_class('sqlite')(); "
            "e.open(registry.settings_model('sqlite')(library='apsw-newest').model_dump(), Path(sys.argv[1])); "
            "i = e.info(); print(json.dumps([i.library, i.driver, i.related])); e.close()")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], cwd=ROOT, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    library, driver, related = json.loads(out.stdout)
    want = registry.manifest("sqlite").side_requirements["apsw-newest"].split("==")[1]
    assert driver == f"APSW {want}" and library == f"SQLite {related['sqlite']}"
    assert want.startswith(related["sqlite"])
    assert tuple(map(int, related["sqlite"].split("."))) > tuple(map(int, apsw.sqlite_lib_version().split(".")))


def test_a_second_apsw_build_in_one_process_is_refused_not_served(tmp_path):
    """This process imported the pinned APSW: asking for the newest must not silently get the pinned one."""
    with pytest.raises(ConfigError, match=r"engines.sqlite.library: 'apsw-newest' asked, but this process "
                                          r"already runs APSW"):
        _engine(tmp_path, library="apsw-newest")


def test_apsw_gives_sqlites_page_cache_counters_and_both_give_checkpoint_results(tmp_path):
    """The reference's checklist asks whether the index is in RAM and whether the cache misses."""
    for library in ("apsw", "stdlib"):
        e = _engine(tmp_path / library, library=library, cache_size=-200)   # 200 KiB: it must miss
        try:
            before = e.counters()
            _load(e)
            e.checkpoint("PASSIVE")
            after = e.counters()
            assert after.counters["checkpoint_wal_frames"] > 0
            assert after.counters["checkpoint_frames_done"] == after.counters["checkpoint_wal_frames"]
            if library == "stdlib":
                assert set(after.counters) == {"checkpoints_busy", "checkpoint_wal_frames", "checkpoint_frames_done",
                                               "autocheckpoints_in_commit"} and after.gauges == {}
                continue
            grew = {k for k in after.counters if after.counters[k] > before.counters[k]}
            assert {"page_cache_hits", "page_cache_misses", "page_cache_writes"} <= grew
            assert 0 < after.gauges["page_cache_used_bytes"] <= 400 * 1024      # about the 200 KiB asked
            assert after.gauges["engine_heap_bytes"] > after.gauges["page_cache_used_bytes"]
        finally:
            e.close()


# How each binding stores a Python int into an INTEGER column and an untyped one, as measured here.
# libsql 0.1.11 binds an int above 2**31-1 as a double (the adapter binds those beyond 2**53 as text).
STORED = {
    "stdlib": {2**31: ("integer", "integer"), 2**63 - 1: ("integer", "integer")},
    "apsw": {2**31: ("integer", "integer"), 2**63 - 1: ("integer", "integer")},
    "turso": {2**31: ("integer", "integer"), 2**63 - 1: ("integer", "integer")},
    "libsql": {2**31: ("integer", "real"), 2**63 - 1: ("real", "real")},
}
CONNECT = {"stdlib": sqlite3.connect, "apsw": apsw.Connection, "turso": turso.connect, "libsql": libsql.connect}


@pytest.mark.parametrize("binding", list(STORED))
def test_how_each_binding_stores_2_31_and_2_63_minus_1(binding):
    c = CONNECT[binding](":memory:")
    c.execute("CREATE TABLE t (i INTEGER, u)")
    for v in STORED[binding]:
        c.execute("INSERT INTO t VALUES (?, ?)", (v, v))
    got = c.execute("SELECT i, typeof(i), u, typeof(u) FROM t").fetchall()
    assert {v: (ti, tu) for v, (i, ti, u, tu) in zip(STORED[binding], got)} == STORED[binding]
    exact = [v for v, (i, ti, u, tu) in zip(STORED[binding], got) if i == v and type(i) is int]
    assert exact == [v for v, (ti, _) in STORED[binding].items() if ti == "integer"]
