"""Control loop for bench-overhead: the raw pyturso driver, SQLite's SQL."""
import turso

from engines.sqlite.baseline import make

Loop = make(lambda p: turso.connect(p, isolation_level=None))
