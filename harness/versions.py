"""Which library an embedded engine loads with given settings, read from the engine itself: it is opened
on an empty database in a temporary folder and asked for its EngineInfo. A verdict uses it to show the
versions of engines it did not need to run beside those it measured. One process per probe, since one
process holds one build of a binding (engines/sqlite/bindings.py).
Usage: python -m harness.versions ENGINE [KEY=VALUE ...]   (prints JSON)"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

from harness import registry
from harness.errors import ConfigError

PROBE_TIMEOUT_S = 60


def probe(engine: str, settings: dict) -> dict:
    """EngineInfo of `engine` with `settings`, in a fresh process: {library, driver, related, settings}."""
    items = [f"{k}={json.dumps(v)}" for k, v in settings.items()]
    out = subprocess.run([sys.executable, "-m", "harness.versions", engine, *items], capture_output=True,
                         text=True, timeout=PROBE_TIMEOUT_S)
    if out.returncode != 0:
        raise ConfigError(f"probing {engine} {settings or ''}: {out.stderr.strip().splitlines()[-1:]}")
    return json.loads(out.stdout)


def _info(engine: str, items: list[str]) -> dict:
    if registry.capabilities(engine).server:
        raise ConfigError(f"{engine}: a server engine; its version is read only from a run")
    given = {k: yaml.safe_load(v) for k, _, v in (i.partition("=") for i in items)}
    settings = registry.settings_model(engine)(**given).model_dump(mode="json")
    e = registry.engine_class(engine)()
    with tempfile.TemporaryDirectory(prefix="arkbench-versions-") as tmp:
        e.open(settings, Path(tmp))
        try:
            info = e.info()
        finally:
            e.close()
    return {"library": info.library, "driver": info.driver, "related": info.related, "settings": given}


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print(__doc__.rsplit("Usage: ", 1)[1], file=sys.stderr)
        sys.exit(2)
    try:
        print(json.dumps(_info(sys.argv[1], sys.argv[2:])))
    except (ConfigError, ValueError) as e:
        print(e, file=sys.stderr)
        sys.exit(2)
