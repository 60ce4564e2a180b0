"""The CLI as a user runs it, checked through result.json."""
import json
import subprocess
from pathlib import Path

import pytest

from harness.results import RESULT_VERSION, load_result
from tests.conftest import ROOT, can_use_cgroups, harness_cmd


def run_cli(args: list[str], tmp_path: Path, timeout=120) -> tuple[int, str, str]:
    p = subprocess.run(harness_cmd() + args, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def run_scenario(tmp_path, *extra, timeout=120) -> tuple[int, dict, Path, str]:
    # sqlite, --runtime local unless `extra` says otherwise (argparse keeps the last one given)
    rc, out, err = run_cli(["run", "--engine", "sqlite", "--runtime", "local", "--results", str(tmp_path / "results"),
                            "--data", str(tmp_path / "data"), *extra], tmp_path, timeout=timeout)
    last = out.strip().splitlines()[-1] if out.strip() else ""
    assert last.endswith("result.json"), f"last line is the result path; got {out!r} / {err[-2000:]}"
    return rc, load_result(Path(last)).model_dump(mode="json"), Path(last).parent, err     # as every reader reads it


@pytest.mark.slow
def test_reorg_smoke_run(tmp_path):
    rc, r, run_dir, _ = run_scenario(tmp_path, "--scenario", "reorg", "--profile", "smoke", "--duration", "4")
    assert r["version"] == RESULT_VERSION and r["engine"] == "sqlite" and r["scenario"] == "reorg"
    assert r["integrity"]["ok"] is True and r["integrity"]["expected"] == r["integrity"]["actual"]
    c = r["metrics"]["commit_latency_ms"]
    assert c["count"] > 20 and 0 < c["p50"] <= c["p99"] <= c["max"]
    assert r["status"] in ("passed", "failed") and rc == {"passed": 0, "failed": 1}[r["status"]]
    assert all(t["value"] is not None for t in r["thresholds"])
    assert r["environment"]["fsync_floor"]["samples"] > 0 and r["engine_library"].startswith("SQLite ")
    assert r["engine_driver"].startswith("APSW ") and r["engine_settings"]["wal_autocheckpoint"] == 10000
    ec = r["metrics"]["engine_counters"]      # SQLite's own page cache counters, over the measured phase
    assert ec["measured"]["page_cache_hits"] > 0 and 0 < ec["page_cache_hit_ratio"] <= 1
    assert ec["at_end"]["page_cache_used_bytes"] > 0
    assert ec["at_end"]["engine_heap_bytes"] >= ec["at_end"]["page_cache_used_bytes"]
    h = r["metrics"]["harness"]          # no MEM: the runner's RSS, told apart all the same
    assert h["harness_bytes_end"] == h["inside_limit_bytes_end"] - h["engine_heap_bytes_end"] > 0
    assert r["memory"]["policy"] == "stock" and r["load"]["preload"] is False
    assert r["metrics"]["bloat_ratio"] > 0 and r["metrics"]["rows_per_s"] > 0
    for f in ("commit.hlog", "timeseries.csv", "blocks.csv", "plan.yaml"):
        assert (run_dir / f).stat().st_size > 0, f
    assert not (tmp_path / "data" / r["run_id"]).exists(), "database files are removed after the run"


@pytest.mark.slow
def test_checkpoint_storm_smoke_has_readers_and_checkpoints(tmp_path):
    rc, r, _, _ = run_scenario(tmp_path, "--scenario", "checkpoint_storm", "--profile", "smoke", "--duration", "5")
    m = r["metrics"]
    assert r["integrity"]["ok"] is True
    assert m["reads"] > 50 and m["read_latency_ms"]["p99"] > 0 and m["read_errors"] == 0
    assert m["wal_bytes_max"] > 0


def test_misspelled_key_exits_2_and_names_field(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text((ROOT / "scenarios" / "reorg.yaml").read_text().replace("rows_per_block", "rows_per_blok"))
    rc, out, err = run_cli(["run", "--engine", "sqlite", "--scenario", str(bad), "--results",
                            str(tmp_path / "r")], tmp_path)
    assert rc == 2
    assert "workload.rows_per_blok" in err and str(bad) in err and "Traceback" not in err
    assert not (tmp_path / "r").exists(), "nothing ran"


def test_validate_command(tmp_path):
    rc, out, _ = run_cli(["validate", str(ROOT / "scenarios")], tmp_path)
    assert rc == 0 and "reorg.yaml" in out


@pytest.mark.cgroup
@pytest.mark.slow
@pytest.mark.skipif(can_use_cgroups() is not None, reason=str(can_use_cgroups()))
def test_memory_limit_is_enforced_and_recorded(tmp_path):
    rc, r, _, _ = run_scenario(tmp_path, "--scenario", "p99_5x", "--profile", "smoke", "--duration", "3",
                               "--mem", "256m")
    assert r["memory"]["data_limit_bytes_seen"] == 268435456 and r["memory"]["enforcement"].startswith("cgroup-")
    assert r["integrity"]["ok"] is True
    assert 0 < r["metrics"]["mem_bytes_max"] <= 268435456


@pytest.mark.cgroup
@pytest.mark.slow
@pytest.mark.skipif(can_use_cgroups() is not None, reason=str(can_use_cgroups()))
def test_sigterm_to_the_harness_alone_keeps_the_partial_result_and_removes_the_cgroup(tmp_path):
    """kill (or timeout, or a CI runner's stop) sends SIGTERM to the harness, not to its runner: it must stop as
    Ctrl-C does. Before, it died where it stood, its memory cgroup stayed under /sys/fs/cgroup and the runner,
    orphaned, ran on inside it."""
    import signal
    import time
    from harness.platform.cgroup import ROOT as CG_ROOT
    p = subprocess.Popen(harness_cmd() + ["run", "--engine", "sqlite", "--runtime", "local", "--scenario", "reorg",
                                          "--profile", "smoke", "--duration", "60", "--mem", "256m",
                                          "--results", str(tmp_path / "r"), "--data", str(tmp_path / "d")],
                         cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # the state's build and the warmup first: beside the docker suite (images cached, so it starts early) 90 s
    # once went by before the first measured block
    deadline = time.monotonic() + 240

    def measured_blocks() -> int:
        progress = [json.loads(f.read_text() or "{}") for f in (tmp_path / "r").glob("*/progress.json")]
        return progress[0].get("blocks", 0) if progress and progress[0].get("phase") == "measure" else 0

    while measured_blocks() < 5 and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.5)
    assert p.poll() is None and measured_blocks() >= 5, p.stderr.read()[-2000:] if p.poll() is not None else ""
    run_id = next((tmp_path / "r").iterdir()).name
    cgroups = [d for d in CG_ROOT.glob(f"**/arkbench/{run_id}*") if d.is_dir()]
    assert cgroups, "the run is inside a memory cgroup of its own"
    p.send_signal(signal.SIGTERM)                     # to the harness alone, as `kill PID` does
    out, err = p.communicate(timeout=120)
    r = json.loads((tmp_path / "r" / run_id / "result.json").read_text())
    assert p.returncode == 3 and r["error"] == "interrupted", err[-1500:]
    assert r["metrics"]["commit_latency_ms"]["count"] > 0, "what was measured before the stop is kept"
    assert not any(d.exists() for d in cgroups), f"left behind: {cgroups}"


@pytest.mark.cgroup
@pytest.mark.slow(seconds=90)
@pytest.mark.skipif(can_use_cgroups() is not None, reason=str(can_use_cgroups()))
def test_oom_is_recorded_with_timeseries(tmp_path):
    # ~400K rows at scale 0.02: SQLite's page cache (1 GB allowed) outgrows 256 MB once the run reads the state.
    # 40 s alone; near the limit the kernel reclaims the runner's code pages before it kills, for minutes on a
    # loaded machine (CI, the images building beside it took it past 120 s)
    rc, r, run_dir, _ = run_scenario(tmp_path, "--scenario", "p99_5x", "--profile", "quick", "--scale", "0.02",
                                     "--duration", "5", "--mem", "256m", "--set", "engines.sqlite.cache_size=1GB",
                                     timeout=420)
    assert rc == 3 and r["status"] == "oom" and "OOM" in r["error"]
    lines = (run_dir / "timeseries.csv").read_text().splitlines()
    assert len(lines) >= 2, "the time series up to the kill is kept"
    assert r["metrics"]["partial"] is True


def test_an_unwritable_results_folder_is_one_line_and_exit_2(tmp_path):
    (tmp_path / "a-file").write_text("")
    rc, out, err = run_cli(["run", "--engine", "sqlite", "--scenario", "reorg", "--profile", "smoke",
                            "--results", str(tmp_path / "a-file" / "results")], tmp_path)
    assert rc == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert "--results" in err and "a-file" in err and "cannot write there" in err


HISTORICAL = "to_block < 9223372036854775807"      # versions the workload never touches again
MUTATIONS = {
    "changed": f"UPDATE string_attributes SET value = value || '!' WHERE rowid = "
               f"(SELECT rowid FROM string_attributes WHERE {HISTORICAL} LIMIT 1)",
    "dropped": f"DELETE FROM payloads WHERE rowid = (SELECT rowid FROM payloads WHERE {HISTORICAL} LIMIT 1)",
    "duplicated": "INSERT INTO numeric_attributes SELECT entity_key, -from_block, to_block, key, value "
                  f"FROM numeric_attributes WHERE {HISTORICAL} LIMIT 1",
}


def _mutate_while_measuring(tmp_path, scenario: str, sql: str, *extra) -> tuple[bool, int, str, str]:
    """A real sqlite run at smoke, and while it measures, another connection runs `sql` once (retried
    while the writer holds the lock): (whether it changed one row, exit code, stdout, stderr)."""
    import sqlite3
    import time
    args = harness_cmd() + ["run", "--engine", "sqlite", "--runtime", "local", "--scenario", scenario,
                            "--profile", "smoke", "--results", str(tmp_path / "results"),
                            "--data", str(tmp_path / "data"), *extra]
    proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # up to 240 s to reach the measured phase, as test_sigterm allows: beside a walk's DuckDB build and the docker
    # suite, 90 s from the start ran out before the run measured
    mutated, deadline = False, time.monotonic() + 240
    try:
        while not mutated and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.3)
            progress = list((tmp_path / "results").glob("*/progress.json"))
            dbs = list((tmp_path / "data").glob("*/arkiv.db"))
            if not progress or not dbs or json.loads(progress[0].read_text() or "{}").get("phase") != "measure":
                continue
            conn = sqlite3.connect(dbs[0], timeout=10, isolation_level=None)
            try:
                mutated = conn.execute(sql).rowcount == 1
            except sqlite3.OperationalError:
                pass                                 # locked by a long block, or mid-read: try again
            finally:
                conn.close()
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    return mutated, proc.returncode, out, err


@pytest.mark.slow(seconds=55)
@pytest.mark.parametrize("mutation", MUTATIONS)
def test_a_row_the_engine_lost_or_changed_fails_integrity(tmp_path, mutation):
    """The integrity check can fail: while a real sqlite run measures, another connection changes, drops
    or duplicates one row of an old version (nothing the workload touches again). The run must end with
    integrity.ok false, status error and exit 3."""
    mutated, rc, out, err = _mutate_while_measuring(tmp_path, "p99_5x", MUTATIONS[mutation], "--duration", "8")
    assert mutated, "no historical row to mutate while the run measured"
    r = json.loads(Path(out.strip().splitlines()[-1]).read_text())
    assert rc == 3 and r["status"] == "error" and r["integrity"]["ok"] is False, (r["integrity"], err[-800:])
    assert "integrity" in r["error"] and r["integrity"]["mismatched_tables"]


CURRENT = "to_block = 9223372036854775807"
AN_AVAILABLE_GPU_NODE_OF_DC_01 = (
    f"SELECT entity_key FROM string_attributes WHERE key = 'dc_id' AND value = 'dc_01' AND {CURRENT} "
    f"INTERSECT SELECT entity_key FROM string_attributes WHERE key = 'status' AND value = 'available' AND {CURRENT} "
    f"INTERSECT SELECT entity_key FROM string_attributes WHERE key = 'vm_type' AND value = 'gpu' AND {CURRENT} LIMIT 1")


@pytest.mark.slow
def test_every_dc_answer_is_checked_and_a_node_status_changed_behind_the_harness_is_caught(tmp_path):
    """dc_read_mix at smoke with the reference's DC read table (mix dc): while the DC events are written, one
    available GPU node of dc_01 is made busy by another connection; the available-GPU counts read after it
    differ from the model's, so wrong > 0, status error, exit 3. The other kinds are still checked."""
    mutated, rc, out, err = _mutate_while_measuring(
        tmp_path, "dc_read_mix", f"UPDATE string_attributes SET value = 'busy' WHERE key = 'status' AND {CURRENT} "
                                 f"AND entity_key IN ({AN_AVAILABLE_GPU_NODE_OF_DC_01})", "--set", "readers.mix=dc")
    assert mutated, "no available GPU node of dc_01 to change while the run measured"
    r = json.loads(Path(out.strip().splitlines()[-1]).read_text())
    kinds = r["metrics"]["reads_by_kind"]
    assert rc == 3 and r["status"] == "error", (r["error"], err[-800:])
    assert kinds["available_gpu_nodes"]["wrong"] > 0, kinds
    assert all(k["checked"] > 0 for k in kinds.values()) and kinds["workloads_on_node"]["wrong"] == 0


# dc_01's available node that fits the most candidate queries (the most cores, then RAM): the one to change
A_ROOMY_AVAILABLE_NODE_OF_DC_01 = (
    f"SELECT d.entity_key FROM string_attributes d "
    f"JOIN string_attributes s ON s.entity_key = d.entity_key AND s.key = 'status' AND s.value = 'available' "
    f"AND s.{CURRENT} "
    f"JOIN numeric_attributes c ON c.entity_key = d.entity_key AND c.key = 'cpu_count' AND c.{CURRENT} "
    f"JOIN numeric_attributes r ON r.entity_key = d.entity_key AND r.key = 'ram_gb' AND r.{CURRENT} "
    f"WHERE d.key = 'dc_id' AND d.value = 'dc_01' AND d.{CURRENT} ORDER BY c.value DESC, r.value DESC LIMIT 1")


@pytest.mark.slow(seconds=40)
def test_a_node_changed_behind_the_harness_is_caught_by_the_candidates_kind(tmp_path):
    """dc_read_mix's own mix (dc_app, V1's) at smoke: while it measures, another connection makes one available
    node of dc_01 busy in place. The scheduler's candidate lists that hold it are no longer the model's:
    candidates wrong > 0, status error, exit 3."""
    mutated, rc, out, err = _mutate_while_measuring(
        tmp_path, "dc_read_mix", f"UPDATE string_attributes SET value = 'busy' WHERE key = 'status' AND {CURRENT} "
                                 f"AND entity_key IN ({A_ROOMY_AVAILABLE_NODE_OF_DC_01})", "--duration", "15")
    assert mutated, "no available node of dc_01 to change while the run measured"
    r = json.loads(Path(out.strip().splitlines()[-1]).read_text())
    kinds = r["metrics"]["reads_by_kind"]
    assert rc == 3 and r["status"] == "error", (r["error"], err[-800:])
    assert kinds["candidates"]["checked"] > 0 and kinds["candidates"]["wrong"] > 0, kinds
    assert kinds["workload_state"]["wrong"] == 0, kinds


@pytest.mark.slow
def test_a_dc_read_mix_answers_every_kind_right(tmp_path):
    """The same run untouched: every kind asked and checked, none wrong, none the model could not check."""
    rc, r, _, err = run_scenario(tmp_path, "--scenario", "dc_read_mix", "--profile", "smoke", timeout=300)
    kinds = r["metrics"]["reads_by_kind"]
    assert set(kinds) == {"candidates", "node_workloads", "workload_state", "node_state",     # the scheduler's
                          "nodes_by_dc", "available_gpu_nodes", "node_workload_match", "historical_state"}
    assert all(k["checked"] > 0 and k["wrong"] == 0 and k["unknown"] == 0 for k in kinds.values()), kinds
    assert r["integrity"]["ok"] is True and r["status"] in ("passed", "failed"), err[-2000:]


@pytest.mark.serial          # 450 blocks at a 100 ms cadence: beside neighbours the backlog outran the timeout in CI
@pytest.mark.slow(seconds=60)
def test_the_runners_memory_stays_flat_over_450_measured_blocks(tmp_path):
    """The runner's RSS is the harness's share of an embedded engine's limit; over 450 measured blocks
    it must not grow with them (it once grew ~375 KB per block: 165 MiB over these blocks, against a 4 MiB
    bound, so a leak of a fortieth of that still fails)."""
    rc, r, run_dir, _ = run_scenario(tmp_path, "--scenario", "p99_5x", "--profile", "smoke", "--duration", "45",
                                     timeout=300)
    h = r["metrics"]["harness"]
    assert r["metrics"]["commit_latency_ms"]["count"] >= 375
    growth = h["inside_limit_bytes_end"] - h["inside_limit_bytes"]
    assert growth < 4 << 20, f"runner RSS grew {growth / 2**20:.1f} MiB over the measured phase ({h})"


@pytest.mark.cgroup
@pytest.mark.slow
@pytest.mark.skipif(can_use_cgroups() is not None, reason=str(can_use_cgroups()))
def test_a_server_engine_gets_mem_and_its_client_runs_outside_it(tmp_path):
    """MEM is what the database gets: for postgres, the server, while the runner (its client) has a
    limit of its own and holds nothing inside MEM. Once the runner shared MEM with nothing and the
    server had none, so postgres effectively got twice the memory of an embedded engine."""
    rc, r, _, _ = run_scenario(tmp_path, "--engine", "postgres", "--scenario", "reorg", "--profile", "smoke",
                               "--duration", "3", "--mem", "512m", "--set", "load.preload=true")
    assert r["status"] in ("passed", "failed") and r["integrity"]["ok"] is True
    m = r["memory"]
    assert m["data_limit_bytes_seen"] == 512 << 20 and m["data_limit_bytes"] == 512 << 20
    assert m["runner_limit_bytes_seen"] == m["runner_limit_bytes"] == 1 << 30
    assert r["metrics"]["harness"]["inside_limit_bytes"] == 0
    # the preload ran in the server's cgroup, not the client's: the cluster's files were read in, inside MEM
    load = r["load"]
    assert load["preload"] is True and load["preload_bytes"] > 0
    assert load["resident_bytes_after_preload"] >= 0.9 * load["preload_bytes"] > load["resident_bytes_before_preload"]
    # the sampler reads the server's cgroup: the database's memory, below MEM
    assert 0 < r["metrics"]["mem_bytes_max"] <= 512 << 20


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["sqlite", "postgres"])
def test_read_mix_run_is_read_only_with_a_table_by_query_kind(tmp_path, engine):
    """Mix A on a loaded database, no writes: every entry of the mix is timed and found what it was drawn
    from (no empties), result.json and the printed table agree."""
    rc, r, _, err = run_scenario(tmp_path, "--scenario", "read_mix_a", "--profile", "smoke", "--engine", engine,
                                 "--set", "readers.rate_per_s=100", timeout=300)
    m = r["metrics"]
    assert r["status"] in ("passed", "failed") and r["integrity"]["ok"] is True
    assert m["commit_latency_ms"]["count"] == 0 and m["rows"] == 0
    kinds = m["reads_by_kind"]
    assert set(kinds) == {"node_status", "workload_by_status", "nodes_by_gpu", "creator_lookup",
                          "historical_state", "payload_fetch"}
    assert m["reads_empty"] == 0 and all(k["count"] > 0 and k["empty"] == 0 and k["mean_rows"] >= 1
                                         for k in kinds.values())
    assert sum(k["count"] for k in kinds.values()) == m["reads"] == m["read_latency_ms"]["count"]
    assert kinds["historical_state"]["mean_rows"] == 15       # one version's string attributes (mendoza)
    for name, k in kinds.items():
        assert f"  {name:<22}{k['count']:>7}" in err


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["sqlite", "postgres"])
def test_a_dc_heavy_write_run_starts_from_the_dc_seed_and_keeps_every_row(tmp_path, engine):
    """dc_write at smoke: the state holds the DC seed beside mendoza's entities (one payload row each:
    800 mendoza + 2 DCs x (100 nodes + 500 workloads); no ageing, so the count is the seed's), and after
    the DC events every row is the model's."""
    rc, r, _, err = run_scenario(tmp_path, "--scenario", "dc_write", "--profile", "smoke", "--engine", engine,
                                 "--duration", "4", "--set", "load.age_blocks=0", timeout=300)
    assert r["integrity"]["ok"] is True and r["status"] in ("passed", "failed"), err[-2000:]
    assert r["load"]["row_counts"]["payloads"] == 800 + 2 * (100 + 500)
    assert "the DC seed: 2 DCs of 100 nodes and 500 workloads" in err
    assert r["metrics"]["commit_latency_ms"]["count"] > 20 and r["metrics"]["rows"] > 0
