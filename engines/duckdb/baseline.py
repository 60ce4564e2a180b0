"""Control loop for bench-overhead: the raw duckdb driver; rows -> Arrow (off the clock) -> set-based SQL
per block."""
from pathlib import Path

import duckdb
import pyarrow as pa

from engines.duckdb.adapter import FORCE_CHECKPOINT_SQL, _arrow_type, connect_config
from engines.sqlite import dialect


class Loop:
    def __init__(self, data_dir: Path, settings: dict, variant: str):
        data_dir.mkdir(parents=True, exist_ok=True)
        self.c = duckdb.connect(str(data_dir / "loop.duckdb"), config=connect_config(settings))
        self.c.execute((Path(__file__).parent / f"ddl-{variant}.sql").read_text())
        self.variant = variant

    def _arrow(self, t, names, rows):
        return pa.table({n: pa.array(col, _arrow_type(t, n)) for n, col in zip(names, zip(*rows))})

    def prepare(self, b):
        """Rows -> Arrow before the clock, as the harness's feed converts them."""
        v = self.variant
        return (b,
                {t: (dialect.primary_key(v, t), self._arrow(t, dialect.primary_key(v, t), pks))
                 for t, pks in b.deletes.items() if pks},
                pa.table({"k": pa.array(b.terminate_keys, pa.binary())}) if b.terminate_keys else None,
                {t: self._arrow(t, dialect.columns(v, t), rows) for t, rows in b.inserts.items() if rows})

    def apply(self, p) -> None:
        b, deletes, keys, inserts = p
        c = self.c
        c.execute("BEGIN")
        for t, (pk, k) in deletes.items():
            c.register("k", k)
            c.execute(f"DELETE FROM {t} USING k WHERE " + " AND ".join(f"{t}.{x} = k.{x}" for x in pk))
        if keys is not None:
            c.register("ks", keys)
            for t in ("string_attributes", "numeric_attributes", "payloads"):
                c.execute(f"UPDATE {t} SET to_block = $1 WHERE entity_key IN (SELECT k FROM ks) "
                          "AND from_block <= $1 AND to_block > $1", [b.number])
        for t, r in inserts.items():
            c.register("r", r)
            c.execute(f"INSERT INTO {t} SELECT * FROM r")
        c.execute("COMMIT")

    def settle(self) -> None:
        self.c.execute(FORCE_CHECKPOINT_SQL)

    def close(self) -> None:
        self.c.close()
