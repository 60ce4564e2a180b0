"""Control loop for bench-overhead: the raw duckdb driver; Arrow tables (converted off the clock) ->
set-based SQL per block."""
from pathlib import Path

import duckdb

from engines.duckdb.adapter import FORCE_CHECKPOINT_SQL, connect_config
from engines.sqlite import dialect


class Loop:
    def __init__(self, data_dir: Path, settings: dict, variant: str):
        data_dir.mkdir(parents=True, exist_ok=True)
        self.c = duckdb.connect(str(data_dir / "loop.duckdb"), config=connect_config(settings))
        self.c.execute((Path(__file__).parent / f"ddl-{variant}.sql").read_text())
        self.variant = variant

    def apply(self, p) -> None:
        """p: the adapter's prepare_block (Arrow tables), made before the clock as the feed makes it."""
        b, keys, v = p.block, p.keys, self.variant
        c = self.c
        c.execute("BEGIN")
        for t, k in p.deletes.items():
            pk = dialect.primary_key(v, t)
            c.register("k", k)
            c.execute(f"DELETE FROM {t} USING k WHERE " + " AND ".join(f"{t}.{x} = k.{x}" for x in pk))
        if keys is not None:
            c.register("ks", keys)
            for t in ("string_attributes", "numeric_attributes", "payloads"):
                c.execute(f"UPDATE {t} SET to_block = $1 WHERE entity_key IN (SELECT k FROM ks) "
                          "AND from_block <= $1 AND to_block > $1", [b.number])
        for t, r in p.inserts.items():
            c.register("r", r)
            c.execute(f"INSERT INTO {t} SELECT * FROM r")
        c.execute("COMMIT")

    def settle(self) -> None:
        self.c.execute(FORCE_CHECKPOINT_SQL)

    def close(self) -> None:
        self.c.close()
