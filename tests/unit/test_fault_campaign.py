"""The fault campaign's table (harness/crash/campaign.py): a crash result per engine and failure, read into one
row each; a row is clean only with no acknowledged block lost, nothing unsent or corrupt, the last life whole."""
from types import SimpleNamespace

from harness.crash.campaign import campaign_row, clean, table
from harness.results.models import CrashFigures, Kill


def _result(lost: int, unacked: int = 0, final_ok: bool = True):
    """What campaign_row reads of a crash run's RunResult."""
    kills = [Kill(life=i, aimed_at=at, landed_in=at, last_acked_block=10 * (i + 1), recovery_s=0.1 * (i + 1),
                  replayed_blocks=i, replay_s=0.01 * i, lost_acked_blocks=lost if i == 0 else 0)
             for i, at in enumerate(("commit", "apply", "rotate", "idle"))]
    crash = CrashFigures(mode="power_cut", survives="power_cut", promised=True, kills=kills, acknowledged_blocks=40,
                         lost_acked_blocks=lost, unacked_blocks=unacked, landed={k.landed_in: 1 for k in kills},
                         final_ok=final_ok)
    return SimpleNamespace(run_id="r", engine="sqlite", status="passed" if not lost else "failed", error=None,
                           crash=crash)


def test_a_row_says_what_the_kills_found_and_is_clean_only_when_nothing_was_lost():
    row = campaign_row(_result(0), wall_s=61.0)
    assert (row["kills"], row["replays"], row["replayed_blocks_max"], row["recovery_s_max"]) == (4, 3, 3, 0.4)
    assert round(row["recovery_s_p50"], 6) == 0.3 and row["replay_s_max"] == 0.03 and clean(row)
    assert not clean(campaign_row(_result(1), wall_s=1.0))
    assert not clean(campaign_row(_result(0, unacked=1), wall_s=1.0))
    assert not clean(campaign_row(_result(0, final_ok=False), wall_s=1.0))
    text = table([row])
    assert "| sqlite | power_cut | 4 (apply 1, commit 1, idle 1, rotate 1) | 40 | **0** | 3 (3) |" in text
