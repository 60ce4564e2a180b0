"""bench-overhead's control loop for the SQLite family: the raw driver, the adapter's PRAGMAs, DDL and
statements (harness.sql.write_block), nothing of the harness's runner. libsql and turso subclass it
with their engine class."""
from pathlib import Path

from harness import registry, sql
from engines.sqlite.adapter import SQLiteEngine


class Loop:
    engine = SQLiteEngine
    # bench-overhead hands it blocks through the adapter's prepare_block (built before its clock, as the
    # feed does); False: the generator's values as they are
    adapter_prepare = True

    def __init__(self, data_dir: Path, settings: dict, variant: str):
        data_dir.mkdir(parents=True, exist_ok=True)
        self.settings = settings
        self.c = self.engine.connect(data_dir / "loop.db", settings)
        for stmt in self.engine.pragma_sql(settings, writer=True):
            self.c.execute(stmt).fetchall()
        self.c.executescript(registry.ddl(self.engine.name, variant))
        self.begin, self.sql = self.engine.begin_sql(settings), sql.BlockSQL.generic(variant)

    def apply(self, block) -> None:
        """block: the adapter's prepare_block, made before the clock as the feed makes it."""
        sql.write_block(self.c, self.begin, self.sql, block)

    def settle(self) -> None:
        for stmt in self.engine.settle_sql(self.settings):
            self.c.execute(stmt).fetchall()

    def close(self) -> None:
        self.c.close()
