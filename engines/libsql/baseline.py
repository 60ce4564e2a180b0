"""Control loop for bench-overhead: the raw libsql driver with the adapter's pragmas and statements."""
from engines.libsql.adapter import LibSQLEngine
from engines.sqlite.baseline import Loop as _SQLiteLoop


class Loop(_SQLiteLoop):
    engine = LibSQLEngine
