"""`make reproduce` for real (issue 77): a smoke verdict walked with a reference cell and a watched machine, published,
then reproduced twice: alone (every level agreed, its sitting kept and counted), and beside a process that keeps a
core busy (disturbed, exit 3; the count leaves it out). Serial: the watch reads the CPU of every other process."""
import json
import subprocess
import sys

import pytest

from tests.cli.test_sweep import run_verdict
from tests.conftest import ROOT, can_use_cgroups, harness_cmd

pytestmark = [pytest.mark.slow, pytest.mark.serial, pytest.mark.cgroup,
              pytest.mark.skipif(can_use_cgroups() is not None, reason=str(can_use_cgroups()))]


def _decision(tmp_path):
    tree = {"steps": [{"engine": "sqlite", "decision": "use sqlite"}], "otherwise": "revisit the architecture",
            "criteria": [{"name": "reorg", "scenario": "reorg", "thresholds": ["max(commit_ms) < 60000"],
                          "target": {"scale": 1.0, "measure_s": 3600}}],
            "mems": {"smoke": ["384m"]}, "screen_blocks": 8,
            "reference": {"engine": "sqlite", "blocks": 4, "every_cells": 1,
                          "record": [{"date": "2026-01-01", "profile": "smoke", "service_p50_ms": 0.01,
                                      "source": "a test"}]},
            "quiet": {"outside_cores": 0.5, "wait_s": 1}}
    path = tmp_path / "watched.yaml"
    path.write_text(json.dumps(tree))
    return path


def _reproduce(folder, results) -> subprocess.CompletedProcess:
    return subprocess.run(harness_cmd() + ["reproduce", str(folder), "--runtime", "local", "--results", str(results),
                                           "--data", str(results / "data")],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_a_published_verdict_reproduced_alone_agrees_and_beside_a_busy_core_is_disturbed(tmp_path):
    p, v = run_verdict(tmp_path, _decision(tmp_path), "--duration", "3")
    assert p.returncode == 0 and v["answers"][0]["engine"] == "sqlite", p.stderr[-3000:]
    run = next((tmp_path / "watched").glob("verdict-*"))
    pub = tmp_path / "docs"
    out = subprocess.run(harness_cmd() + ["publish", str(run), "--to", str(pub), "--name", "walked"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    folder = pub / "walked"

    alone = _reproduce(folder, tmp_path / "again")
    assert alone.returncode == 0, alone.stderr[-3000:]
    assert "384m: AGREED: answer, sqlite at its own settings at 384m: passed with headroom" in alone.stderr
    rf = json.loads(next((folder / "sittings").glob("*/reproduce.json")).read_text())
    assert [x["outcome"] for x in rf["levels"]] == ["agreed"]
    assert [r["at"] for r in rf["reference"]] == ["start", "end"] and rf["speed"] > 0
    (answer,) = [t for t in rf["targets"] if t["role"] == "answer"]
    measured = [c["measure_s"] for c in answer["cells"] if c["label"] == "candidate"]
    assert measured == [3.0], "the published walk's DURATION, read from its verdict"
    assert any(f["name"] == "reorg: max(commit_ms) < 60000" and f["raw"] is not None for f in answer["figures"])
    kept = next((folder / "sittings").glob("*"))
    assert list(kept.glob("cells/reorg/*/result.json.gz")), "the sitting's cells are kept"
    readme = (folder / "README.md").read_text()
    assert "| 2 of 2 |" in _held_row(readme), readme
    assert json.loads((folder / "verdict.json").read_text())["answers"][0]["held"] == "2 of 2", "a script reads it too"
    table = readme.split("## The answer", 1)[1].split("## Held in k of n sittings", 1)[0]
    (row,) = [line for line in table.splitlines() if line.startswith("| 384m")]
    assert row.endswith("| 2 of 2 |"), "the answer table says what is on record, as verdict.json does: " + row

    burner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        busy = _reproduce(folder, tmp_path / "busy")
    finally:
        burner.kill()
        burner.wait()
    assert busy.returncode == 3, busy.stderr[-3000:]
    assert "384m: DISTURBED:" in busy.stderr and "of a core while it ran" in busy.stderr
    readme = (folder / "README.md").read_text()
    assert "| 2 of 2 |" in _held_row(readme) and "disturbed" in _held_row(readme), readme
    assert len(list((folder / "sittings").glob("*/reproduce.json"))) == 2, "a second sitting the same day is kept"


def _held_row(readme: str) -> str:
    """The answer's row in the README's "held in k of n" section."""
    section = readme.split("## Held in k of n sittings", 1)[1]
    return next(line for line in section.splitlines() if line.startswith("| 384m | use sqlite |"))
