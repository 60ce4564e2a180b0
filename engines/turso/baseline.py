"""Control loop for bench-overhead: the raw pyturso driver with the adapter's pragmas and statements."""
from engines.sqlite.baseline import Loop as _SQLiteLoop
from engines.turso.adapter import TursoEngine


class Loop(_SQLiteLoop):
    engine = TursoEngine
