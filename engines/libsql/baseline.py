"""Control loop for bench-overhead: the raw libsql driver with the adapter's pragmas and statements. It
binds the generator's integers as they are, as an application would: lossy above 2**53 (the binding
sends them as doubles; engines/libsql/README.md), and the fastest the driver goes. So libsql's ratio
includes what the adapter's exact binding (integers beyond 2**53 as text) costs the engine."""
from engines.libsql.adapter import LibSQLEngine
from engines.sqlite.baseline import Loop as _SQLiteLoop


class Loop(_SQLiteLoop):
    engine = LibSQLEngine
    adapter_prepare = False
