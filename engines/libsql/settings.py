"""libSQL takes SQLite's PRAGMAs (it is a fork of SQLite, on-disk format and WAL included). With `url`
(or LIBSQL_URL in the environment) the engine talks to a libSQL server instead; the auth token comes
only from LIBSQL_AUTH_TOKEN, so it never lands in plan.yaml or result.json."""
import os

from pydantic import Field, field_validator

from engines.sqlite.settings import Pragmas
from harness.engine_api import HARNESS_SIDE

SERVER_SCHEMES = ("ws://", "wss://", "http://", "https://", "libsql://")


class Settings(Pragmas):
    url: str | None = Field(default_factory=lambda: os.environ.get("LIBSQL_URL") or None,
                            description="libSQL server URL (ws/wss/http/https/libsql); unset: embedded",
                            json_schema_extra=HARNESS_SIDE)

    @field_validator("url")
    @classmethod
    def _url(cls, v: str | None) -> str | None:
        if v is not None and not v.startswith(SERVER_SCHEMES):
            raise ValueError(f"must start with one of {', '.join(SERVER_SCHEMES)}; a file: URL would run "
                             "the stdlib sqlite3 through libsql-client, not libSQL (leave url unset for "
                             "embedded libSQL)")
        return v
