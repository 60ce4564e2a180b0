"""The crash driver's judgement, apart from any engine: which block a restart holds, and what each kill cost."""
from pathlib import Path
from types import SimpleNamespace

from harness.crash.blocks import match
from harness.crash.driver import _kill_record
from harness.crash.figures import _seconds_summary
from harness.crash.status import Status, Where

OPENED = {"open_s": 0.1, "first_read_s": 0.2}
STATE = {"verify_s": 1.0}


def _kill(last_acked: int, where: tuple, found):
    c = SimpleNamespace(last_acked=last_acked, wal_bytes=None)
    phase, block, secs, *newest = where        # a fourth: the newest block started, else the phase's
    at = Where(phase, block, secs, newest[0] if newest else block)
    k = _kill_record(c, 0, "commit", at, found, OPENED, STATE, {})
    return k, c


def test_the_newest_block_whose_model_the_rows_match_is_found():
    digests = {10: {"t": "1:a"}, 11: {"t": "2:b"}, 12: {"t": "2:b"}}      # block 12 changed nothing
    assert match(digests, {"t": "2:b"}) == 12
    assert match(digests, {"t": "1:a"}) == 10
    assert match(digests, {"t": "9:z"}) is None


def test_a_kill_inside_a_commit_may_keep_the_block_in_flight_or_not():
    kept, c = _kill(41, ("commit", 42, 0.01), 42)
    assert kept.in_flight_kept and kept.lost_acked_blocks == 0 and kept.block_in_flight == 42 and c.last_acked == 42
    gone, _ = _kill(41, ("commit", 42, 0.01), 41)
    assert not gone.in_flight_kept and gone.lost_acked_blocks == 0 and gone.unacked_blocks == 0


def test_acknowledged_blocks_missing_after_a_restart_are_lost_and_the_stream_goes_on_from_there():
    k, c = _kill(50, ("idle", 50, 0.2), 47)
    assert k.lost_acked_blocks == 3 and k.block_in_flight is None and c.last_acked == 47


def test_a_block_never_sent_or_rows_of_no_block_are_failures_whatever_the_settings():
    k, _ = _kill(50, ("idle", 50, 0.2), 53)
    assert k.unacked_blocks == 3
    k, c = _kill(50, ("checkpoint", 50, 0.2), None)
    assert k.corrupt and k.recovered_block is None and c.last_acked == 50


def test_the_status_file_says_where_a_life_was(tmp_path):
    s = Status(tmp_path / "status", create=True)
    assert s.get()[:2] == ("start", -1) and s.get().newest_block == -1
    s.begin(7)
    other = Status(tmp_path / "status")          # the driver's view, another mapping of the same file
    phase, block, secs, newest = other.get()
    assert (phase, block, newest) == ("commit", 7, 7) and 0 <= secs < 5
    s.set("idle", 6)                             # a block log's applier, a group behind the writer
    assert other.get()[:2] == ("idle", 6) and other.get().newest_block == 7


def test_a_block_appended_under_a_block_log_before_its_acknowledgement_is_in_flight_not_made_up():
    """The writer synced block 11's record, the applier then said it idles after block 10, the kill came before
    11's acknowledgement: a restart that replays 11 kept the block in flight (the CI run of 2026-12-06 counted it
    as a block never sent)."""
    k, c = _kill(10, ("idle", 10, 0.001, 11), 11)
    assert k.unacked_blocks == 0 and k.block_in_flight == 11 and k.in_flight_kept and c.last_acked == 11
    k, _ = _kill(10, ("apply", 9, 0.001, 10), 12)
    assert k.unacked_blocks == 2


def test_recovery_seconds_summarised_by_the_same_rank_rule_as_latencies():
    s = _seconds_summary([0.3, 0.1, 0.2, 0.4])
    assert (s.count, s.p50, s.max, s.mean) == (4, 0.2, 0.4, 0.25)
    assert _seconds_summary([]).count == 0


def test_a_corrupt_restart_is_an_error_that_says_why(tmp_path):
    from harness.crash.driver import Crasher
    from harness.crash.figures import write_crash_result
    from harness.results import load_result
    from harness.runner.outcome import Outcome
    from harness.scenario.plan import resolve_plan
    plan = resolve_plan("crash", "sqlite", profile="smoke", results_root=tmp_path, data_root=tmp_path)
    Path(plan.run_dir).mkdir(parents=True)
    c = Crasher(plan)
    c.kills.append(_kill(20, ("commit", 21, 0.01), None)[0])     # the rows matched no block
    write_crash_result(plan, c, Outcome(environment={}, status="error"))
    r = load_result(Path(plan.run_dir) / "result.json")
    assert r.status == "error" and "match no block of the model" in r.error and r.crash.corrupt_restarts == 1
