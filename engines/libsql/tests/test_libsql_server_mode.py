"""libSQL server mode (libsql-client against sqld). The real server test skips, saying why, when no
server answers at LIBSQL_URL; sqld cannot be built or pulled on this project's machines."""
import os
import socket
from urllib.parse import urlparse

import pytest
from pydantic import ValidationError

from engines.libsql.remote import RemoteLibSQL
from engines.libsql.settings import Settings
from harness import registry
from harness.engine_api import TABLES
from harness.workload.digest import digest_rows
from harness.workload.generator import BlockGenerator
from tests.conftest import mixed_spec


def _server_url() -> str | None:
    url = os.environ.get("LIBSQL_URL")
    if not url:
        return None
    u = urlparse(url)
    try:
        socket.create_connection((u.hostname, u.port or (443 if u.scheme in ("https", "wss") else 80)), 2).close()
    except OSError:
        return None
    return url


def _stream_into(apply, variant="bitemporal"):
    gen = BlockGenerator(mixed_spec(variant=variant, reorg=0.25))
    for b in gen.load_blocks(80, 1500, 10):
        apply(b)
    for _ in range(25):
        apply(gen.next_block())
    return gen.model.digest.as_dict()


def test_block_statements_leave_the_models_digest(tmp_path):
    """Harness logic, not a libSQL measurement: the statements server mode sends (multi-row inserts,
    per-key deletes/terminations, one batch per block) run through libsql-client's file: backend,
    which is the stdlib sqlite3. This is exactly why the engine refuses file: URLs for real runs."""
    r = RemoteLibSQL(f"file:{tmp_path / 'stmts.db'}", None)
    try:
        r.create_schema(registry.ddl("libsql", "bitemporal"))
        expected = _stream_into(r.apply_block)
        assert digest_rows({t: r.iter_rows("bitemporal", t, page_rows=97) for t in TABLES}) == expected
    finally:
        r.close()


def test_a_file_url_is_refused_naming_the_trap():
    with pytest.raises(ValidationError, match="stdlib sqlite3"):
        Settings(url="file:/tmp/x.db")


@pytest.mark.skipif(_server_url() is None, reason="no libSQL server reachable: set LIBSQL_URL to a running "
                    "sqld (the upstream image, which this machine cannot pull)")
def test_server_mode_same_digest_as_model(tmp_path):
    from engines.libsql.adapter import LibSQLEngine
    e = LibSQLEngine()
    e.open(Settings(url=_server_url()).model_dump(mode="json"), tmp_path)
    try:
        for t in TABLES:
            e.remote.handle.execute(f"DROP TABLE IF EXISTS {t}")
        e.create_schema("bitemporal")
        expected = _stream_into(lambda b: e.apply_block(e.prepare_block(b)))
        assert digest_rows({t: e.iter_rows(t) for t in TABLES}) == expected
        assert "libSQL server" in e.info().library
    finally:
        e.close()
