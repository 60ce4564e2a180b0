"""The docker runtime against the locally built images (`make images`): a smoke run per engine in its
container, an OOM kill recorded as oom, and the images' own hardening checked with testcontainers
(Ryuk disabled: its image cannot be pulled without a registry)."""
import json
import os
import re
import subprocess

import pytest
import yaml

from harness import registry
from harness.runtime.compose import image_tag
from harness.runtime.docker import choose_runtime, daemon_answers, image_id
from tests.cli.test_cli_run import run_scenario

os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")


def _why_not() -> str | None:
    if not daemon_answers():
        return "no Docker daemon answers"
    tags = [image_tag(e) for e in registry.names()]
    tags += [image_tag(e, "server") for e, m in registry.manifests().items() if m.images.server]
    missing = [t for t in tags if image_id(t) is None]
    return f"images not built ({', '.join(missing)}): run `make images`" if missing else None


pytestmark = [pytest.mark.docker, pytest.mark.skipif(_why_not() is not None, reason=str(_why_not()))]
MEM_BYTES = 512 * 1024 * 1024


def run_in_docker(tmp_path, *args):
    rc, r, run_dir, _ = run_scenario(tmp_path, "--runtime", "docker", *args, timeout=300)
    return rc, r, run_dir


def _leftovers(run_id: str) -> str:
    name = f"arkbench-{run_id}".lower()
    ps = subprocess.run(["docker", "ps", "-a", "--filter", f"name={name}", "-q"], capture_output=True, text=True)
    nets = subprocess.run(["docker", "network", "ls", "--filter", f"name={name}", "-q"], capture_output=True, text=True)
    return (ps.stdout + nets.stdout).strip()


@pytest.mark.parametrize("engine", registry.names())
def test_smoke_run_in_the_engines_container(tmp_path, engine):
    rc, r, run_dir = run_in_docker(tmp_path, "--engine", engine, "--scenario", "reorg", "--profile", "smoke",
                                   "--duration", "4", "--mem", "512m", "--set", "load.preload=true")
    assert r["integrity"]["ok"] is True, r.get("error")
    assert r["runtime"] == "docker" and r["memory"]["enforcement"] == "docker"
    assert r["memory"]["data_limit_bytes_seen"] == MEM_BYTES, "the limit as read inside the container, from its cgroup"
    assert r["image_id"] == image_id(image_tag(engine))
    # read inside the container that holds the data: the runner's, or a server engine's own before it started
    assert r["load"]["preload"] is True and r["load"]["resident_bytes_after_preload"] >= 0.9 * r["load"]["preload_bytes"] > 0
    if registry.capabilities(engine).server:      # the server's own container saw the same limit
        assert r["server_environment"]["data_limit_bytes_seen"] == MEM_BYTES
        assert r["memory"]["runner_limit_bytes_seen"] == 1 << 30
    compose = yaml.safe_load((run_dir / "compose.yaml").read_text())
    assert set(compose["services"]) == ({"runner", "server"} if registry.capabilities(engine).server else {"runner"})
    for svc in compose["services"].values():     # the per-run secret is never written down
        assert svc["environment"].get("ARKBENCH_SERVER_PASSWORD", "${ARKBENCH_SERVER_PASSWORD}") == "${ARKBENCH_SERVER_PASSWORD}"
    assert rc in (0, 1) and r["metrics"]["commit_latency_ms"]["count"] > 20
    assert (run_dir / "container.log").exists()
    assert os.stat(run_dir / "result.json").st_uid == os.stat(run_dir.parent).st_uid, "files handed back"
    assert _leftovers(r["run_id"]) == "", "containers and networks are removed"


@pytest.mark.parametrize("engine", ["sqlite", "postgres"])
def test_readers_are_processes_inside_the_runners_container(tmp_path, engine):
    """The reference's protocol at smoke size: 1,000 measured queries at 200 QPS from a reader process in the
    runner's container (an embedded engine's limit holds it), every one due in the window counted."""
    rc, r, run_dir = run_in_docker(tmp_path, "--engine", engine, "--scenario", "read_mix_a", "--profile", "smoke",
                                   "--mem", "512m")
    m = r["metrics"]
    # In CI this runs beside the unit suite on 2 cores: a 200 QPS read line may be missed there (postgres
    # did, once), and that is a judged cell, not a broken protocol. What is asserted is the protocol.
    assert r.get("error") is None and rc == {"passed": 0, "failed": 1}[r["status"]], r.get("error")
    assert [t["expr"] for t in r["thresholds"] if t["value"] is None] == [], "every line judged on a figure"
    assert m["harness"]["readers"]["mode"] == "processes" and 0 < m["harness"]["readers"]["rss_bytes_end_max"] < 256 << 20
    assert 950 <= m["reads"] + m["reads_empty"] <= 1000 and m["read_errors"] == 0
    assert set(m["reads_by_kind"]) == {"node_status", "workload_by_status", "nodes_by_gpu", "creator_lookup",
                                       "historical_state", "payload_fetch"}


def test_a_cache_bigger_than_the_limit_is_recorded_as_oom(tmp_path):
    # ~400K rows at scale 0.02: SQLite's page cache (1 GB allowed) outgrows a 256 MB container. Loaded row
    # by row, every page passes through that cache; a cold clone would fill it only as blocks touch pages,
    # and on a busy disk the container thrashes at its limit for minutes before the kill.
    rc, r, run_dir = run_in_docker(tmp_path, "--engine", "sqlite", "--scenario", "p99_5x", "--profile", "quick",
                                   "--scale", "0.02", "--duration", "5", "--mem", "256m",
                                   "--set", "engines.sqlite.cache_size=1GB", "--set", "load.method=organic")
    assert rc == 3 and r["status"] == "oom" and "OOM-killed" in r["error"]
    assert (run_dir / "container.log").read_text().strip(), "the container's output is kept"
    assert (run_dir / "timeseries.csv").exists()
    assert _leftovers(r["run_id"]) == ""


def test_a_server_oom_kill_is_the_runs_oom(tmp_path):
    """MEM is the postgres server's: shared buffers larger than its container get a backend OOM-killed
    during the load. That is the run's oom, not an engine error, though the runner outlived it."""
    rc, r, run_dir = run_in_docker(tmp_path, "--engine", "postgres", "--scenario", "p99_5x", "--profile", "quick",
                                   "--scale", "0.02", "--duration", "5", "--mem", "160m",
                                   "--set", "engines.postgres.shared_buffers=1GB")
    assert rc == 3 and r["status"] == "oom" and "OOM-killed" in r["error"], r["error"]
    assert re.search(r"[-_]server[-_]\d+ was OOM-killed", r["error"]), "the server's container, by name"
    assert r["memory"]["runner_limit_bytes"] == 1 << 30
    assert _leftovers(r["run_id"]) == ""


def test_images_run_unprivileged_and_embedded_engines_get_no_network():
    from testcontainers.core.container import DockerContainer
    probe = ("import json, os, pathlib; from harness.platform import cgroup; print(json.dumps({'uid': os.getuid(), "
             "'nets': sorted(p.name for p in pathlib.Path('/sys/class/net').iterdir()), "
             "'limit': cgroup.limit_bytes(cgroup.own_memory_dir())}))")
    c = (DockerContainer(image_tag("duckdb"))
         .with_kwargs(entrypoint=["python", "-c", probe], network_mode="none", mem_limit="300m",
                      memswap_limit="300m"))
    c.start()
    try:
        assert c.get_wrapped_container().wait(timeout=60)["StatusCode"] == 0
        seen = json.loads(c.get_logs()[0].decode())
        assert seen == {"uid": 10001, "nets": ["lo"], "limit": 300 * 1024 * 1024}
        cfg = c.get_wrapped_container().attrs["HostConfig"]
        assert not cfg["Privileged"]
    finally:
        c.stop()


def test_ctrl_c_keeps_the_partial_result_and_removes_the_containers(tmp_path):
    import signal
    import time
    from tests.conftest import ROOT, harness_cmd
    p = subprocess.Popen(harness_cmd() + ["run", "--runtime", "docker", "--engine", "sqlite", "--scenario", "reorg",
                                          "--profile", "smoke", "--duration", "60", "--results", str(tmp_path / "r"),
                                          "--data", str(tmp_path / "d")],
                         cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         # as from a terminal: a suite started in the background (`make test &`, nohup)
                         # ignores SIGINT, the harness would inherit that, and Ctrl-C would never arrive
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 240     # a loaded machine (a walk's state build beside) took over 90 s to measure

    seen = []           # (phase, blocks) as polled: says why, if the measured phase was never reached

    def measured_blocks() -> int:
        progress = [json.loads(f.read_text() or "{}") for f in (tmp_path / "r").glob("*/progress.json")]
        if progress and (not seen or seen[-1] != (progress[0].get("phase"), progress[0].get("blocks"))):
            seen.append((progress[0].get("phase"), progress[0].get("blocks")))
        return progress[0].get("blocks", 0) if progress and progress[0].get("phase") == "measure" else 0

    while measured_blocks() < 5 and time.monotonic() < deadline:   # into the measured phase
        time.sleep(0.5)
    assert p.poll() is None and measured_blocks() >= 5, (f"not in the measured phase of a live run: {seen[-20:]}",
                                                         p.poll(), p.stderr.read()[-2000:] if p.poll() is not None else "")
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=120)
    run_dir = next((tmp_path / "r").iterdir())
    r = json.loads((run_dir / "result.json").read_text())
    assert p.returncode == 3 and r["status"] == "error" and r["error"] == "interrupted", (err[-1500:], seen[-10:])
    assert r["metrics"]["commit_latency_ms"]["count"] > 0, "what was measured before Ctrl-C is kept"
    assert _leftovers(r["run_id"]) == ""


def test_engine_temp_files_go_to_the_data_mount_not_the_storage_driver(tmp_path):
    """SQLite writes statement journals for every multi-row UPDATE; in the container's own /tmp they went
    through the storage driver (fuse-overlayfs here), which made sqlite in docker sustain ~73% of the
    offered load where the same cell on the host sustained all of it. They belong beside the database."""
    rc, r, run_dir = run_in_docker(tmp_path, "--engine", "sqlite", "--scenario", "reorg", "--profile", "smoke",
                                   "--duration", "2", "--keep-data",
                                   "--set", "engines.sqlite.journal_mode=WAL")
    probe = subprocess.run(["docker", "run", "--rm", "--entrypoint", "sh", "-e", "TMPDIR=/data/.tmp",
                            "-v", f"{tmp_path / 'data' / r['run_id']}:/data", image_tag("sqlite"), "-c",
                            "python -c 'import tempfile; print(tempfile.gettempdir())' && stat -f -c %T /data/.tmp"],
                           capture_output=True, text=True)
    env = yaml.safe_load((run_dir / "compose.yaml").read_text())["services"]["runner"]["environment"]
    assert env["TMPDIR"] == "/data/.tmp"
    assert probe.stdout.split()[0] == "/data/.tmp" and "fuse" not in probe.stdout, probe.stdout + probe.stderr


def test_each_image_holds_the_checkouts_code_so_auto_runs_in_it():
    """Every engine's images carry the measuring code's digest they were built from (docker/images.sh): the ones
    `make images` built from this checkout are what RUNTIME=auto picks."""
    from harness.scenario.plan import resolve_plan
    for engine in registry.names():
        plan = resolve_plan("p99_5x", engine, profile="smoke")
        assert choose_runtime("auto", plan) == ("docker", f"RUNTIME=auto: docker (image {image_tag(engine)})"), engine
