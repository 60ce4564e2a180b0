"""A cell's identity holds a digest of the code that measures it (issue 56): a resumed walk reruns a cell
that other code measured and says so, while a change to a walk, the report or an engine's tests keeps it."""
from pathlib import Path

import pytest

from harness import provenance
from harness.records import Cell, CellRun, begin_cell
from harness.results import CellRecord, write_json
from harness.scenario.plan import resolve_plan
from harness.walks.sweep import cell_identity, engine_build


@pytest.fixture
def tree(tmp_path, monkeypatch):
    """A project tree of its own: measuring and walk-only units, an engine importing another."""
    files = {"harness/runner/writer.py": "x = 1\n", "harness/report/render.py": "y = 1\n",
             "harness/walks/verdict/walk.py": "z = 1\n", "engines/__init__.py": "", "engines/queries.yaml": "q: 1\n",
             "engines/foo/adapter.py": "from engines.bar.base import Base\n", "engines/foo/tests/test_foo.py": "t = 1\n",
             "engines/bar/base.py": "class Base: ...\n", "engines/baz/other.py": "w = 1\n"}
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    monkeypatch.setattr(provenance, "PROJECT_DIR", tmp_path)
    provenance.code_digest.cache_clear()
    yield tmp_path
    provenance.code_digest.cache_clear()


def _digest_after(tree: Path, rel: str) -> str:
    before = provenance.code_digest("foo")
    (tree / rel).write_text((tree / rel).read_text() + "# changed\n")
    provenance.code_digest.cache_clear()
    after = provenance.code_digest("foo")
    assert len(before) == len(after) == 16
    return before, after


@pytest.mark.parametrize("rel,changes", [
    ("harness/runner/writer.py", True), ("engines/foo/adapter.py", True),
    ("engines/bar/base.py", True),                 # imported by foo's adapter
    ("engines/queries.yaml", True),
    ("harness/report/render.py", False), ("harness/walks/verdict/walk.py", False),
    ("engines/foo/tests/test_foo.py", False), ("engines/baz/other.py", False),
])
def test_the_digest_follows_the_measuring_files_only(tree, rel, changes):
    before, after = _digest_after(tree, rel)
    assert (before != after) is changes


def test_a_cell_measured_by_other_code_is_run_again_and_said_so(tmp_path, capsys):
    """A complete cell whose record names another code digest is moved aside, not skipped, and the log
    says it was measured by other code; under the same identity it is skipped."""
    plan = resolve_plan("reorg", "sqlite", profile="smoke", results_root=tmp_path, runtime="local")
    cell_dir = tmp_path / "reorg" / "sqlite-nolimit"
    cell_dir.mkdir(parents=True)
    (cell_dir / "result.json").write_text("{}")
    old = CellRecord(cell_id="old-identity", scenario="reorg", engine="sqlite", mem=None, data_limit_bytes=None,
                     scale=plan.scale, runtime="local", dir=cell_dir.name, state="complete", code_digest="0" * 16)
    write_json(cell_dir / "cell.json", old)
    build = engine_build(plan)
    assert provenance.code_digest("sqlite") in build           # local: the measuring code, not the commit
    cr = CellRun(Cell("reorg", "sqlite", None, None), plan.model_copy(update={"data_dir": str(tmp_path / "d")}),
                 cell_identity(plan, build), cell_dir)
    rec = begin_cell(cr, "1/1")
    assert rec.state == "running" and not (cell_dir / "result.json").exists()
    err = capsys.readouterr().err
    assert f"measured by other code: digest {'0' * 16}, this tree's {provenance.code_digest('sqlite')}" in err
    assert list((tmp_path / "reorg" / ".set-aside").glob("sqlite-nolimit-superseded-*"))
    # the same identity, complete: skipped
    write_json(cell_dir / "cell.json", rec.model_copy(update={"state": "complete"}))
    (cell_dir / "result.json").write_text("{}")
    assert begin_cell(cr, "1/1").state == "complete" and "skipped" in capsys.readouterr().err
