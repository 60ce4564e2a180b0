"""Control loop for bench-overhead: the raw libsql driver, SQLite's SQL."""
import libsql

from engines.libsql.adapter import _exact
from engines.sqlite.baseline import make


class Loop(make(lambda p: libsql.connect(p, isolation_level=None))):
    def apply(self, b) -> None:
        # the same workaround the adapter needs: exact integers above 2**53 go as text
        b.inserts = {t: [_exact(r) for r in rows] for t, rows in b.inserts.items()}
        super().apply(b)
