"""bench-overhead's control loop: the raw duckdb driver with the adapter's connect settings, DDL and
set-based statements over Arrow tables (adapter.write_block), nothing of the harness's runner."""
from pathlib import Path

import duckdb

from engines.duckdb.adapter import FORCE_CHECKPOINT_SQL, block_sql, connect_config, write_block
from harness import registry


class Loop:
    adapter_prepare = True      # bench-overhead converts its blocks with the adapter's prepare_block first

    def __init__(self, data_dir: Path, settings: dict, variant: str):
        data_dir.mkdir(parents=True, exist_ok=True)
        self.c = duckdb.connect(str(data_dir / "loop.duckdb"), config=connect_config(settings))
        self.c.execute(registry.ddl("duckdb", variant))
        self.sql = block_sql(variant)

    def apply(self, p) -> None:
        """p: the adapter's prepare_block (Arrow tables), made before the clock as the feed makes it."""
        write_block(self.c, self.sql, p)

    def settle(self) -> None:
        self.c.execute(FORCE_CHECKPOINT_SQL)

    def close(self) -> None:
        self.c.close()
