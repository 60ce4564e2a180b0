"""Adding an engine is adding one folder: in a copy of the tree, a throwaway engine folder (its manifest,
settings, a small adapter, a control loop; no DDL, so the workload's schema in its types) is discovered,
validated, run by the contract suite and by `harness run`, with no other file touched."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

TOY = {
    "engine.toml": '''
description = "SQLite in rollback-journal mode, a throwaway engine for the test"
adapter = "adapter:ToyEngine"
settings = "settings:Settings"
baseline = "baseline:Loop"
[durability]                  # a rollback journal, synced at every commit at both values
setting = "synchronous"
select = { commit = "FULL" }
says = { FULL = "at commit", NORMAL = "at commit (rollback journal)" }
survives = { FULL = "power_cut", NORMAL = "process_kill" }
[capabilities]
server = false
wal = false                   # a rollback journal: no WAL to report
readers_in_process_only = false
[types]
bytes = "BLOB"
int64 = "INTEGER"
text = "TEXT"
[contract_settings.truncate]
journal_mode = "TRUNCATE"
''',
    "settings.py": '''
from typing import Literal
from pydantic import BaseModel, ConfigDict

class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    journal_mode: Literal["DELETE", "TRUNCATE"] = "DELETE"
    synchronous: Literal["NORMAL", "FULL"] = "FULL"
''',
    "adapter.py": '''
from engines.sqlite.adapter import SQLiteEngine

class ToyEngine(SQLiteEngine):
    name = "toydb"

    @classmethod
    def pragma_sql(cls, settings, writer):
        return [f"PRAGMA journal_mode = {settings['journal_mode']}", f"PRAGMA synchronous = {settings['synchronous']}"]

ENGINE = ToyEngine
''',
    "baseline.py": '''
from engines.sqlite.baseline import Loop as _Loop
from engines.toydb.adapter import ToyEngine

class Loop(_Loop):
    engine = ToyEngine
''',
    "README.md": "# toydb\n\nA throwaway engine for tests/cli/test_new_engine.py.\n",
}


def _run(args: list[str], tree: Path, timeout: int = 300) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([sys.executable, *args], cwd=tree, env={**env, "PYTHONPATH": str(tree)},
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
def test_a_throwaway_engine_folder_is_discovered_validated_and_run(tmp_path):
    tree = tmp_path / "tree"
    for part in ("harness", "engines", "tests", "scenarios", "docker"):
        shutil.copytree(ROOT / part, tree / part, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tree)
    folder = tree / "engines" / "toydb"
    folder.mkdir()
    for name, text in TOY.items():
        (folder / name).write_text(text.lstrip())

    p = _run(["-c", "import engines, harness.registry as r; print(engines.__file__); print(' '.join(r.names()))"], tree)
    where, names = p.stdout.splitlines()
    assert where.startswith(str(tree)), "the copy's code, not the installed tree's"
    assert "toydb" in names.split(), "discovered"

    # validated: its settings model guards scenarios like any other engine's
    bad = _run(["-m", "harness.cli", "run", "--engine", "toydb", "--scenario", "reorg", "--profile", "smoke",
                "--set", "engines.toydb.journal_mode=WAL"], tree)
    assert bad.returncode == 2 and "engines.toydb.journal_mode" in bad.stderr and "DELETE" in bad.stderr

    contract = _run(["-m", "pytest", "tests/contract", "-k", "toydb", "-q", "-p", "no:cacheprovider"], tree)
    summary = contract.stdout.strip().splitlines()[-1]
    assert contract.returncode == 0 and "failed" not in summary and "error" not in summary, contract.stdout[-3000:]
    # the digest test for both variants x 2 settings, storage, rollback, readers, read-back x 2
    assert int(summary.split()[0]) >= 8, summary

    run = _run(["-m", "harness.cli", "run", "--engine", "toydb", "--scenario", "reorg", "--profile", "smoke",
                "--duration", "3", "--runtime", "local", "--results", str(tmp_path / "results"),
                "--data", str(tmp_path / "data")], tree)
    result = json.loads(Path(run.stdout.strip().splitlines()[-1]).read_text())
    assert result["engine"] == "toydb" and result["integrity"]["ok"] is True, run.stderr[-2000:]
    assert result["engine_settings"] == {"journal_mode": "delete", "synchronous": 2}, "read back"
    assert result["plan"]["capabilities"]["wal"] is False and result["metrics"]["wal_bytes_max"] is None
