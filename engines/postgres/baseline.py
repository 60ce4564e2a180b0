"""Control loop for bench-overhead: raw psycopg in pipeline mode, the same unnest() statements."""
from pathlib import Path

import psycopg

from engines.postgres.adapter import SETTLE_SQL, _unnest
from engines.postgres.server import PostgresServer
from engines.postgres.settings import Settings
from engines.sqlite import dialect


class Loop:
    def __init__(self, data_dir: Path, settings: dict, variant: str):
        s = Settings.model_validate(settings)
        self.server = PostgresServer(data_dir, s.server_conf(), s.bin_dir, s.os_user)
        self.server.start()
        self.c = psycopg.connect(self.server.conninfo(), autocommit=True)
        self.c.execute((Path(__file__).parent / f"ddl-{variant}.sql").read_text())
        self.v = variant

    def apply(self, p) -> None:
        """p: the adapter's prepare_block (column lists), made before the clock as the feed makes it."""
        b, deletes, inserts = p.block, p.deletes, p.inserts
        v = self.v
        with self.c.pipeline(), self.c.transaction():
            cur = self.c.cursor()
            for t, cols in deletes.items():
                pk = dialect.primary_key(v, t)
                cur.execute(f"DELETE FROM {t} WHERE ({', '.join(pk)}) IN (SELECT * FROM {_unnest(t, pk)})", cols)
            if b.terminate_keys:
                for t in ("string_attributes", "numeric_attributes", "payloads"):
                    cur.execute(f"UPDATE {t} SET to_block = %s WHERE entity_key = ANY(%s::bytea[]) "
                                "AND from_block <= %s AND to_block > %s",
                                (b.number, b.terminate_keys, b.number, b.number))
            for t, cols in inserts.items():
                names = dialect.columns(v, t)
                cur.execute(f"INSERT INTO {t} ({', '.join(names)}) SELECT * FROM {_unnest(t, names)}", cols)

    def settle(self) -> None:
        for sql in SETTLE_SQL:
            self.c.execute(sql)

    def close(self) -> None:
        self.c.close()
        self.server.stop()
