"""Control loop for bench-overhead: the raw duckdb driver; rows -> Arrow -> set-based SQL per block."""
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

    def apply(self, b) -> None:
        c, v = self.c, self.variant
        c.execute("BEGIN")
        for t, pks in b.deletes.items():
            pk = dialect.primary_key(v, t)
            c.register("k", self._arrow(t, pk, pks))
            c.execute(f"DELETE FROM {t} USING k WHERE " + " AND ".join(f"{t}.{x} = k.{x}" for x in pk))
        if b.terminate_keys:
            c.register("ks", pa.table({"k": pa.array(b.terminate_keys, pa.binary())}))
            for t in ("string_attributes", "numeric_attributes", "payloads"):
                c.execute(f"UPDATE {t} SET to_block = $1 WHERE entity_key IN (SELECT k FROM ks) "
                          "AND from_block <= $1 AND to_block > $1", [b.number])
        for t, rows in b.inserts.items():
            c.register("r", self._arrow(t, dialect.columns(v, t), rows))
            c.execute(f"INSERT INTO {t} SELECT * FROM r")
        c.execute("COMMIT")

    def settle(self) -> None:
        self.c.execute(FORCE_CHECKPOINT_SQL)

    def close(self) -> None:
        self.c.close()
