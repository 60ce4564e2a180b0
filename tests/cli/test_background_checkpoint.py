"""Checkpoints off the commit path (engines/sqlite/background.py), measured where they ran: with the writer's
own automatic checkpoint, blocks checkpoint inside their commit; with the background connection, no block
does, and the background thread did the checkpoints (frames copied, the WAL truncated at its bound)."""
import csv

import pytest

from tests.cli.test_cli_run import run_scenario

RUN = ["--scenario", "p99_5x", "--profile", "smoke", "--duration", "4", "--set", "engines.sqlite.wal_autocheckpoint=200"]


def _checkpoint_ms(run_dir) -> list[float]:
    with open(run_dir / "blocks.csv") as f:
        return [float(r["phase_checkpoint_ms"] or 0) for r in csv.DictReader(f)]


@pytest.mark.slow
def test_a_background_checkpoint_takes_the_checkpoint_off_the_commit(tmp_path):
    _, inline, inline_dir, _ = run_scenario(tmp_path / "inline", *RUN)
    _, bg, bg_dir, _ = run_scenario(tmp_path / "bg", *RUN, "--set", "engines.sqlite.checkpoint_background=true",
                                    "--set", "engines.sqlite.checkpoint_background_truncate=4MB")
    for r in (inline, bg):
        assert r["integrity"]["ok"] is True, r["error"]
    ec_inline, ec_bg = inline["metrics"]["engine_counters"]["measured"], bg["metrics"]["engine_counters"]["measured"]
    assert ec_inline["autocheckpoints_in_commit"] > 0 and max(_checkpoint_ms(inline_dir)) > 0, "in the commit"
    assert "autocheckpoints_in_commit" not in ec_bg and max(_checkpoint_ms(bg_dir)) == 0, "none in a commit"
    assert ec_bg["background_checkpoints"] > 0
    assert ec_bg["background_frames_done"] + ec_bg["background_truncated_bytes"] > 0, "the thread did them"
    assert bg["engine_settings"]["checkpoint_background"] is True and bg["engine_settings"]["wal_autocheckpoint"] == 0
