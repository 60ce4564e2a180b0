"""libSQL takes SQLite's PRAGMAs (it is a fork of SQLite, on-disk format and WAL included)."""
from engines.sqlite.settings import CAPABILITIES as _SQLITE_CAPABILITIES
from engines.sqlite.settings import Settings as _SQLiteSettings

CAPABILITIES = _SQLITE_CAPABILITIES


class Settings(_SQLiteSettings):
    pass
