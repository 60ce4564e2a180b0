"""Read kinds, mixes, parameters drawn from live entities, and the application vocabulary they query."""
import random
import time
from collections import Counter

import pytest

from harness.errors import ConfigError
from harness.reads.params import Draw, entity_params
from harness.reads.queries import check_mix, mix_entries, mixes, resolve
from harness.runner.readers import ReaderPool
from harness.runner.counters import RunState
from harness.scenario.spec import Readers
from harness.scenario.plan import resolve_plan
from harness.workload import vocabulary
from harness.workload.entity import EntityState, entity_key, version_rows
from harness.workload.generator import BlockGenerator
from harness.workload.shapes import SHAPES
from tests.conftest import mixed_spec


def test_the_reference_mixes_are_there_with_their_weights():
    m = mixes()
    assert {"a", "b", "c", "strategy"} <= set(m)
    assert [(e.label, e.weight) for e in m["a"].queries] == [
        ("node_status", 30), ("workload_by_status", 25), ("nodes_by_gpu", 20), ("creator_lookup", 10),
        ("historical_state", 10), ("payload_fetch", 5)]
    assert sum(e.weight for e in m["strategy"].queries) == 100


def test_a_mix_naming_what_does_not_exist_is_refused_with_the_field():
    with pytest.raises(ConfigError, match="readers.mix: unknown mix 'z'"):
        mix_entries("z")
    with pytest.raises(ConfigError, match=r"checkpoint_storm.yaml: \(with --set\): readers.mix: unknown mix 'nope'"):
        resolve_plan("checkpoint_storm", "sqlite", profile="smoke", overrides=["readers.mix=nope"])
    with pytest.raises(ConfigError, match="readers.mix: unknown query kind 'nope'"):
        check_mix({"entity_fetch": 1, "nope": 1}, "bitemporal")
    with pytest.raises(ConfigError, match="history' runs on the bitemporal schema, not simple"):
        resolve_plan("read_mix_a", "sqlite", profile="smoke", overrides=["workload.schema=simple"])


def test_statements_take_the_engine_placeholder_and_the_variant_current_clause():
    q = {x.name: x for x in resolve("a", "postgres", "bitemporal", "%s")}
    hist = q["historical_state"].statements[0]
    assert hist.sql.count("%s") == 3 and hist.params == ("key", "block", "block")
    assert "to_block = 9223372036854775807" in q["node_status"].statements[0].sql
    assert q["workload_by_status"].args == {"status": "pending"} and q["workload_by_status"].drawn == frozenset()
    simple = resolve({"entity_current": 1}, "sqlite", "simple", "?")[0].statements[0]
    assert "to_block" not in simple.sql and simple.sql.endswith("entity_key = ? ")


def test_every_entity_carries_the_vocabulary_in_its_shape_counts_with_skewed_values():
    types, gpus = Counter(), Counter()
    for eid in range(1, 4000):
        st = EntityState(eid, entity_key(7, eid), 5, 0, 0, eid % 50, 10**6)
        rows = version_rows(st, SHAPES["mendoza"], 7, "bitemporal")
        s = {r[3]: r[4] for r in rows["string_attributes"]}
        n = {r[3]: r[4] for r in rows["numeric_attributes"]}
        assert len(s) == len(rows["string_attributes"]) == 15 and len(n) == 9     # counts unchanged, names unique
        types[s["type"]] += 1
        assert s["status"] in dict(vocabulary.STATUS[s["type"]])
        assert ("proposalKey" in s) == (s["type"] == "vote") and ("nextBlockId" in s) == (s["type"] == "chunk")
        if s["type"] == "node":
            gpus[n["allocatable_gpu"]] += 1
    # hot first, long tail: the weights' order holds in the draws
    assert types.most_common(1)[0][0] == "sensor" and types["profile"] < types["proposal"] < types["node"]
    assert gpus[0] > gpus[8] > 0
    # the type is fixed for an entity's life: another version, the same type
    st = EntityState(3, entity_key(7, 3), 9, 4, 4, 1, 10**6)
    again = {r[3]: r[4] for r in version_rows(st, SHAPES["mendoza"], 7, "bitemporal")["string_attributes"]}
    assert again["type"] == vocabulary.entity_type(entity_key(7, 3))


def test_parameters_come_from_an_entity_offering_them_or_none():
    gen = BlockGenerator(mixed_spec())
    for _ in gen.load_blocks(200, 2000, 15):
        pass
    sample = [entity_params(gen.model, i) for i in gen.model.live_ids]
    queries = resolve("b", "sqlite", "bitemporal", "?")
    draw = Draw(queries)
    draw.refresh(sample)
    rng = random.Random(2)
    i = next(i for i, q in enumerate(queries) if q.name == "votes_for_proposal")
    (p,) = draw.params(i, rng)
    assert p[0] in {e["proposal"] for e in sample if e.get("type") == "vote"}
    draw.refresh([e for e in sample if e.get("type") != "vote"])
    assert draw.params(i, rng) is None


class EmptyReader:
    """Returns no rows for one statement text: an engine that lost what the data says is there."""
    placeholder = "?"

    def __init__(self, lose: str):
        self.lose = lose

    def run(self, sql, params):
        return 0 if self.lose in sql else 1

    def close(self):
        pass


class FakeEngine:
    def __init__(self, lose):
        self.lose = lose

    def reader(self):
        return EmptyReader(self.lose)


def test_a_query_that_finds_nothing_is_counted_empty_not_timed():
    """Harness logic only (a fake reader): the lost kind's reads are empties, the others are timed."""
    gen = BlockGenerator(mixed_spec())
    for _ in gen.load_blocks(200, 2000, 15):
        pass
    sample = [entity_params(gen.model, i) for i in gen.model.live_ids]
    state = RunState()
    pool = ReaderPool(FakeEngine("proposalKey"), Readers(threads=1, rate_per_s=2000, mix="b"), lambda: sample,
                      state, 1, "sqlite", "bitemporal", in_process=True)
    pool.start()
    time.sleep(0.5)
    pool.stop()
    kinds = state.read_kinds
    assert kinds["votes_for_proposal"].empty > 0 and kinds["votes_for_proposal"].hist.get_total_count() == 0
    assert kinds["get_proposal"].empty == 0 and kinds["get_proposal"].hist.get_total_count() > 0
    assert state.reads_empty == kinds["votes_for_proposal"].empty and state.read_errors == 0
    assert state.reads == sum(k.hist.get_total_count() for k in kinds.values())


def test_a_read_counts_in_the_phase_it_was_due_in():
    """Harness logic only: a warmup query reported late, or one due after the window, is not measured."""
    from array import array
    from harness.runner.read_loop import EMPTY, ReadSink
    state = RunState()
    sink = ReadSink(state, ["k"])
    state.start_measure(1_000_000_000)
    state.window_end_ns = 2_000_000_000
    sink.batch(array("q", [0, 999_999_999, 1_500_000_000, 3,       # due in the warmup, ended in the measured phase
                           0, 2_000_000_000, 2_000_001_000, 3,     # due after the window
                           0, 1_000_000_000, 1_000_250_000, 3,     # measured: 250 us from its intended start
                           0, 1_500_000_000, 1_500_100_000, EMPTY]))
    assert state.reads == 1 and state.reads_empty == 1
    assert state.read.total.get_max_value() == pytest.approx(250, rel=0.01)
    assert state.read_kinds["k"].rows == 3 and state.read_kinds["k"].empty == 1


def test_a_read_due_in_the_window_and_reported_before_its_reset_is_measured():
    """Harness logic only: the window starts at its planned start. A query due just after it, reported before the
    writer (or a read-only run's sleep) reset the figures, is held and measured, not lost to both phases: 998 of
    the protocol's 1,000 queries were counted in CI's `make reads` (12-05), its window 2.496 s of 2.5."""
    from array import array
    from harness.runner.read_loop import ReadSink
    state = RunState()
    sink = ReadSink(state, ["k"])
    state.measure_from_ns, state.window_end_ns = 1_000_000_000, 2_000_000_000
    sink.batch(array("q", [0, 999_000_000, 999_100_000, 3,        # the warm-up's
                           0, 1_001_000_000, 1_001_200_000, 3]))   # measured, reported 4 ms before the reset
    assert state.reads == 1
    state.start_measure(1_000_000_000)
    assert state.reads == 0
    sink.batch(array("q"))                      # the next report, even an empty one, brings it in
    assert state.reads == state.read_kinds["k"].hist.get_total_count() == 1
    assert state.read.total.get_max_value() == pytest.approx(200, rel=0.01)


def test_a_read_only_runs_window_is_its_planned_phase_however_late_its_sleep_ends():
    """Harness logic only (a stub engine with counters): the measured window is measure_s exactly."""
    from harness.runner.writer import hold_phases

    class Counting:
        def counters(self):
            return None

    state = RunState()
    hold_phases(Counting(), state, warmup_s=0.05, measure_s=0.1)
    assert state.measure_start_ns == state.timed_start_ns + 50_000_000 and state.window_s() == pytest.approx(0.1)


def test_a_batch_lands_wholly_before_the_measured_phases_reset_or_wholly_after_it():
    """Harness logic only: a reader's batch and the start of the measured phase exclude each other. A batch
    split by the reset once counted a read in `reads` and the read histogram but not in its kind (999 against
    1000 in a `make test` of 11-29): the reset now waits for the batch, and a batch for the reset."""
    import threading
    from array import array
    from harness.runner.read_loop import ReadSink
    state = RunState()
    sink = ReadSink(state, ["k"])
    measured = array("q", [0, 1_000_000_000, 1_000_250_000, 3])
    with state.reads_lock:                      # a batch under way: the reset waits for it
        reset = threading.Thread(target=state.start_measure, args=(1_000_000_000,))
        reset.start()
        reset.join(0.2)
        assert reset.is_alive(), "the measured phase's reset did not wait for the readers' figures"
    reset.join(5)
    state.window_end_ns = 2_000_000_000
    with state.reads_lock:                      # the reset under way: a batch waits for it
        batch = threading.Thread(target=sink.batch, args=(measured,))
        batch.start()
        batch.join(0.2)
        assert batch.is_alive() and state.reads == 0, "a batch did not wait for the reset"
    batch.join(5)
    assert state.reads == state.read_kinds["k"].hist.get_total_count() == state.read.total.get_total_count() == 1


def test_queries_due_but_never_started_when_the_readers_stop_are_counted_late_not_dropped():
    """Harness logic only (a stub reader): at 100 QPS, a reader whose queries take 300 ms each is stopped
    during its second (50 ms into it: a fixed 0.35 s timer lost the race when the loop started late); the ~58 queries due behind it by its end (0.6 s) are reported late, in the
    latencies at their lower bound, not censored out of the tail, and not counted as reads."""
    import threading
    from array import array
    from harness.runner.read_loop import LATE, ReadSink, Report, query_loop

    class Stuck:
        placeholder = "?"
        calls = 0

        def run(self, sql, params):
            Stuck.calls += 1
            if Stuck.calls == 2:        # stopped during its second query, however late the first one began
                threading.Timer(0.05, stop.set).start()
            time.sleep(0.3)
            return 1

    state = RunState()
    sink = ReadSink(state, ["entity_current"])
    t0 = time.monotonic_ns()
    state.start_measure(t0)
    state.window_end_ns = t0 + 10**9
    stop = threading.Event()
    records = array("q")
    report = Report(lambda out, answers: records.extend(out))
    query_loop(Stuck(), {"entity_current": 1.0}, "sqlite", "bitemporal", random.Random(1), 10_000_000, t0,
               lambda s: stop.wait(s) if s else stop.is_set(), lambda: [{"key": b"k"}], report.add, pytest.fail)
    report.flush(time.monotonic())
    late = [records[k:k + 4] for k in range(0, len(records), 4) if records[k + 3] == LATE]
    assert 50 <= len(late) <= 90, len(late)
    assert all(r[2] >= r[1] for r in late) and max(r[2] - r[1] for r in late) >= 500_000_000
    sink.batch(records)
    assert state.reads_late == len(late) and state.reads == 2        # the two queries that did run
    assert state.read.total.get_total_count() == state.reads + state.reads_late
    assert state.read.total.get_max_value() >= 500_000        # us: the oldest never-started query


def test_a_report_is_recorded_as_each_of_its_queries_would_be():
    """The runner records a reader's report in one pass, one histogram update per distinct latency: the
    same histograms, counts, rows, empties and clamps as recording each measured query on its own."""
    from array import array
    from harness.runner.metrics import HIGHEST_US, new_histogram
    from harness.runner.read_loop import EMPTY, ReadSink
    rng = random.Random(5)
    lo, hi = 1_000_000_000, 2_000_000_000
    records, want = [], {"all": new_histogram(), **{n: new_histogram() for n in range(3)}}
    rows_by_kind, empty_by_kind, clamped = Counter(), Counter(), 0
    for _ in range(3000):
        kind, due = rng.randrange(3), rng.randrange(0, 3_000_000_000)
        end = due + rng.choice([0, 500, rng.randrange(1000, 50_000_000), (HIGHEST_US + 7) * 1000])
        rows = rng.choice([EMPTY, 0, 1, 40])
        records += [kind, due, end, rows]
        if not lo <= due < hi:
            continue
        if rows == EMPTY:
            empty_by_kind[kind] += 1
            continue
        us = (end - due) // 1000
        clamped += us > HIGHEST_US
        for h in (want["all"], want[kind]):
            h.record_value(min(max(us, 1), HIGHEST_US))
        rows_by_kind[kind] += rows
    state = RunState()
    sink = ReadSink(state, ["a", "b", "c"])
    state.start_measure(lo)
    state.window_end_ns = hi
    half = len(records) // 8 * 4
    sink.batch(array("q", records[:half]))     # two reports, as a reader flushes
    sink.batch(array("q", records[half:]))
    assert 0 < state.reads < 3000 and state.reads_empty > 0 and clamped > 0
    assert state.reads == want["all"].get_total_count() and state.read.clamped == clamped
    assert state.reads_empty == sum(empty_by_kind.values()) and len(state.read.interval_values) == state.reads
    assert state.read.total.encode() == want["all"].encode() == state.read.interval.encode()
    for i, n in enumerate("abc"):
        k = state.read_kinds[n]
        assert k.hist.encode() == want[i].encode() and (k.rows, k.empty) == (rows_by_kind[i], empty_by_kind[i])


def test_query_count_phases_are_seconds_at_the_offered_rate():
    plan = resolve_plan("read_mix_a", "sqlite", profile="quick", overrides=["readers.rate_per_s=1000"])
    assert (plan.phases.warmup_s, plan.phases.measure_s) == (1.0, 10.0)
    assert resolve_plan("read_mix_a", "sqlite", profile="quick", duration_s=7).phases.measure_s == 7
    # unthrottled readers have no rate to turn counts into seconds: the seconds stand
    plan = resolve_plan("read_mix_a", "sqlite", profile="quick", overrides=["readers.rate_per_s=0"])
    assert (plan.phases.warmup_s, plan.phases.measure_s) == (2.0, 20.0)
    with pytest.raises(ConfigError, match="phases.warmup_queries / measure_queries count read queries"):
        resolve_plan("reorg", "sqlite", profile="smoke", overrides=["phases.measure_queries=10"])


def test_reader_processes_read_a_real_sqlite_and_stay_small(tmp_path):
    """sqlite allows several processes on one file: each reader is a process of its own, its queries reach
    the run's recorders, and its RSS is reported."""
    from engines.sqlite.adapter import SQLiteEngine
    from harness import registry
    assert not registry.capabilities("sqlite", {}).readers_in_process_only
    assert registry.capabilities("duckdb", {}).readers_in_process_only
    engine = SQLiteEngine()
    engine.open(registry.settings_model("sqlite")().model_dump(mode="json"), tmp_path)
    engine.create_schema("bitemporal")
    gen = BlockGenerator(mixed_spec())
    for b in gen.load_blocks(300, 3000, 15):
        engine.apply_block(b)
    engine.settle()
    sample = [entity_params(gen.model, i) for i in gen.model.live_ids]
    state = RunState()
    pool = ReaderPool(engine, Readers(threads=2, rate_per_s=400, mix="a"), lambda: sample, state, 1, "sqlite",
                      "bitemporal", in_process=False)
    t0 = time.monotonic()
    try:
        pool.start()
        time.sleep(1.5)
    finally:
        pool.stop()
        elapsed_s = time.monotonic() - t0
        engine.close()
    assert state.read_errors == 0, state.read_error
    # ~1.5 s at 400 QPS, open loop: no more than were due by the time the pool stopped (a loaded machine stops it
    # later, and the reads due by then are read: 760 in 2.1 s beside a verdict once)
    assert 300 <= state.reads + state.reads_empty <= 400 * elapsed_s + 50, (state.reads, elapsed_s)
    assert state.readers["mode"] == "processes" and state.readers["count"] == 2
    assert 0 < state.readers["rss_bytes_end_max"] < 200 << 20


def test_a_reader_whose_runner_is_gone_stops_in_one_line():
    """The 5,000 QPS ceiling step of 2026-12-02 was OOM-killed; its four readers each printed two tracebacks.
    A reader whose runner's end closes says so once and exits 1."""
    import socket
    import subprocess
    import sys
    from harness.runner.reader_proc import PROJECT_ROOT
    ours, theirs = socket.socketpair()
    p = subprocess.Popen([sys.executable, "-m", "harness.runner.reader_proc", str(theirs.fileno())],
                         pass_fds=[theirs.fileno()], cwd=PROJECT_ROOT, stderr=subprocess.PIPE, text=True)
    theirs.close()
    ours.close()                      # the runner gone before its spec arrived
    _, err = p.communicate(timeout=60)
    assert p.returncode == 1 and "Traceback" not in err
    assert "the runner's end closed (EOFError): stopping" in err
