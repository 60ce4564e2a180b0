"""A cloned cluster the server's user cannot reach where it lies is moved by rename on the same filesystem,
never copied: a copy would be cached outside MEM and the cell would start warm."""
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from engines.postgres.server import PostgresServer, ServerError

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the server runs as its own user only when we are root")


@pytest.fixture
def private_dir():
    d = Path(tempfile.mkdtemp(prefix="arkbench-private-", dir="/var/tmp"))   # 0700: no other user enters
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_a_cluster_out_of_the_server_users_reach_moves_by_rename(private_dir):
    pgdata = private_dir / "data" / "pgdata"
    pgdata.mkdir(parents=True)
    (pgdata / "PG_VERSION").write_text("15\n")
    inode = (pgdata / "PG_VERSION").stat().st_ino
    server = PostgresServer(private_dir / "data", {}, None, "arkbench")
    try:
        assert server.pgdata.parent.parent == Path("/var/tmp") and not pgdata.exists()
        assert (server.pgdata / "PG_VERSION").stat().st_ino == inode, "renamed, not copied"
    finally:
        server.stop()


def test_no_folder_on_the_same_filesystem_is_a_refusal_with_the_reason(private_dir, monkeypatch):
    (private_dir / "data" / "pgdata").mkdir(parents=True)
    real_stat = Path.stat
    monkeypatch.setattr(Path, "stat", lambda p, **kw: os.stat_result(
        (*real_stat(p)[:2], real_stat(p).st_dev + 1, *real_stat(p)[3:])) if str(p) in ("/var/tmp", "/tmp")
        else real_stat(p, **kw))
    with pytest.raises(ServerError, match="neither /var/tmp nor /tmp is on its filesystem"):
        PostgresServer(private_dir / "data", {}, None, "arkbench")
