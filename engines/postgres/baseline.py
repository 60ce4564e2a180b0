"""bench-overhead's control loop: raw psycopg and a private server, the adapter's postgresql.conf
values, DDL and pipelined statements (adapter.write_block), nothing of the harness's runner."""
from pathlib import Path

import psycopg

from engines.postgres.adapter import SETTLE_SQL, block_sql, write_block
from engines.postgres.server import PostgresServer
from engines.postgres.settings import Settings
from harness import registry


class Loop:
    adapter_prepare = True      # bench-overhead converts its blocks with the adapter's prepare_block first

    def __init__(self, data_dir: Path, settings: dict, variant: str):
        s = Settings.model_validate(settings)
        self.server = PostgresServer(data_dir, s.server_conf(), s.bin_dir, s.os_user)
        self.server.start()
        self.c = psycopg.connect(self.server.conninfo(), autocommit=True)
        self.c.execute(registry.ddl("postgres", variant))
        self.sql = block_sql(variant)

    def apply(self, p) -> None:
        """p: the adapter's prepare_block (column lists), made before the clock as the feed makes it."""
        write_block(self.c, self.sql, p)

    def settle(self) -> None:
        for stmt in SETTLE_SQL:
            self.c.execute(stmt)

    def close(self) -> None:
        self.c.close()
        self.server.stop()
