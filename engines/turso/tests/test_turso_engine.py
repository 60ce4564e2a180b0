"""Turso is measured as what it is: MVCC really on when the scenario asks for it, and the pragmas it
ignores refused rather than silently dropped."""
import pytest

from harness import registry
from tests.unit.test_scenarios import GOOD, error_of


def _engine(tmp_path, **settings):
    e = registry.engine_class("turso")()
    e.open(registry.settings_model("turso")(**settings).model_dump(mode="json"), tmp_path)
    e.create_schema("bitemporal")
    return e


def _two_writers_interleaved(e) -> None:
    """Two connections each hold an open write transaction, then both commit: only MVCC allows that."""
    a, b = e.connect(e.path, e.settings), e.connect(e.path, e.settings)
    try:
        a.execute(e.begin_sql(e.settings))
        a.execute("INSERT INTO payloads (entity_key, from_block, to_block, payload) VALUES (x'01', 1, 2, x'')")
        b.execute(e.begin_sql(e.settings))
        b.execute("INSERT INTO payloads (entity_key, from_block, to_block, payload) VALUES (x'02', 1, 2, x'')")
        a.execute("COMMIT")
        b.execute("COMMIT")
    finally:
        a.close()
        b.close()


def test_mvcc_is_really_on_when_asked(tmp_path):
    e = _engine(tmp_path, journal_mode="mvcc")
    try:
        assert e.info().settings["journal_mode"] == "mvcc"       # read back from the engine
        _two_writers_interleaved(e)
        assert e.row_counts()["payloads"] == 2
        assert (tmp_path / "arkiv.db-log").exists(), "the MVCC log"
    finally:
        e.close()


def test_without_mvcc_concurrent_writers_are_refused(tmp_path):
    """The control: the same test fails on WAL, so the one above cannot pass by accident."""
    e = _engine(tmp_path, journal_mode="WAL")
    try:
        assert e.info().settings["journal_mode"] == "wal"
        with pytest.raises(Exception):
            _two_writers_interleaved(e)
    finally:
        e.close()


def test_turso_rejects_ignored_pragma_with_reason(tmp_path):
    msg = error_of(tmp_path, GOOD + "engines:\n  turso: {wal_autocheckpoint: 1000}\n")
    assert "engines.turso" in msg and "turso ignores the wal_autocheckpoint pragma" in msg
