"""RUNTIME=docker: the same runner inside the engine's container, from a compose file made for the run
(harness/runtime/compose.py, kept as run_dir/compose.yaml), with mem_limit = memswap_limit = MEM (no
swap). The runner reads the effective limit from its own cgroup; an OOM kill (State.OOMKilled or exit
137) becomes status "oom" (exit 3) with the container logs kept. Containers and networks go away on
success, failure and Ctrl-C."""
from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from harness.errors import EXIT_RUN_FAILED, ConfigError
from harness.platform import cgroup
from harness.results import record_server_oom
from harness.runner.outcome import write_failed_result
from harness.engine_api import server_contract
from harness.runtime.compose import (CONTAINER_DATA_DIR, CONTAINER_RUN_DIR, compose_file, image_tag, images_needed,
                                     not_startable)
from harness.scenario.plan import RunPlan

CONTAINER_UID = 10001                 # the images' non-root user (docker/install-runner.sh)


def compose_cmd() -> list[str]:
    """`docker compose` (v2 plugin) or the standalone docker-compose (v1), whichever is here."""
    if subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0:
        return ["docker", "compose"]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    raise ConfigError("RUNTIME=docker needs docker compose (plugin) or docker-compose")


def daemon_answers() -> bool:
    try:
        return subprocess.run(["docker", "info", "--format", "{{.ServerVersion}}"], capture_output=True,
                              timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def image_id(tag: str) -> str | None:
    r = subprocess.run(["docker", "image", "inspect", "-f", "{{.Id}}", tag], capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else None


CODE_LABEL = "org.arkbench.code"     # docker/images.sh: the measuring code an engine's image holds


def image_code(tag: str) -> str | None:
    r = subprocess.run(["docker", "image", "inspect", "-f", f'{{{{index .Config.Labels "{CODE_LABEL}"}}}}', tag],
                       capture_output=True, text=True)
    return (r.stdout.strip() or None) if r.returncode == 0 else None


def stale_image(plan: RunPlan, tags: list[str]) -> str | None:
    """Why an image the run needs holds other measuring code than this checkout's (it was built before a change,
    or by another checkout), or None: its cells would measure code the result does not name."""
    from harness.provenance import code_digest
    want = code_digest(plan.engine)
    for tag in tags:
        have = image_code(tag)
        if have != want:
            return f"image {tag} holds other code than this checkout's ({have or 'no code label'}, not {want})"
    return None


def choose_runtime(requested: str, plan: RunPlan) -> tuple[str, str]:
    """RUNTIME=auto: docker when a daemon answers and the run's images are built from this checkout's measuring
    code, else local."""
    if plan.workload.crash:
        if requested == "docker":
            raise ConfigError("RUNTIME=docker: a crash run kills and restarts the engine's processes itself, in "
                              "the local runtime's memory cgroup; use RUNTIME=local (or auto)")
        return "local", "crash run: local (the harness kills and restarts the engine's processes itself)"
    if requested != "auto":
        return requested, f"RUNTIME={requested}"
    if not daemon_answers():
        return "local", "RUNTIME=auto: local (no Docker daemon answers)"
    why = not_startable(plan)
    if why:
        return "local", f"RUNTIME=auto: local ({why})"
    tags = images_needed(plan)
    missing = [t for t in tags if image_id(t) is None]
    if missing:
        return "local", f"RUNTIME=auto: local (image {missing[0]} not built; `make images`)"
    stale = stale_image(plan, tags)
    if stale:
        return "local", f"RUNTIME=auto: local ({stale}; `make images`)"
    return "docker", f"RUNTIME=auto: docker (image {tags[0]})"


def _docker(*args: str, check: bool = False, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(["docker", *args], capture_output=True, text=True, check=check, **kw)


def _give_to_container_user(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        os.chown(path, CONTAINER_UID, CONTAINER_UID)
    else:   # a docker-group user cannot chown: let the container's user write here
        os.chmod(path, 0o777)


def _return_to_owner(path: Path, owner: Path) -> None:
    """Files the container wrote are uid 10001's; hand them back to whoever owns the results folder."""
    if os.geteuid() != 0 or not path.exists():
        return
    st = owner.stat()
    for p in [path, *path.rglob("*")]:
        try:
            os.lchown(p, st.st_uid, st.st_gid)
        except OSError:
            pass


def run_docker(plan: RunPlan) -> int:
    ids = {tag: image_id(tag) for tag in images_needed(plan)}
    missing = [tag for tag, i in ids.items() if i is None]
    if missing:
        raise ConfigError(f"RUNTIME=docker: image {missing[0]} is not built; run `make images`")
    stale = stale_image(plan, list(ids))
    if stale:
        raise ConfigError(f"RUNTIME=docker: {stale}; run `make images`")
    run_dir, data_dir = Path(plan.run_dir), Path(plan.data_dir)
    _give_to_container_user(run_dir)
    _give_to_container_user(data_dir)
    _give_to_container_user(data_dir / ".tmp")     # the runner's TMPDIR (compose.py): temp files on the data mount
    plan.write(run_dir / "plan.yaml")
    plan.model_copy(update={"run_dir": CONTAINER_RUN_DIR, "data_dir": CONTAINER_DATA_DIR}).write(
        run_dir / "plan.container.yaml")
    compose_path = run_dir / "compose.yaml"
    compose_path.write_text(yaml.safe_dump(compose_file(plan, ids[image_tag(plan.engine)]), sort_keys=False))
    project = f"arkbench-{plan.run_id}".lower()
    # per run, never in an image, a file or a result: a server engine's password on the private network
    env = {**os.environ, server_contract.PASSWORD_ENV: secrets.token_urlsafe(24)}
    compose = [*compose_cmd(), "-f", str(compose_path), "-p", project]
    container = f"{project}-runner"
    try:
        up = subprocess.run([*compose, "run", "-d", "--name", container, "runner"], env=env,
                            capture_output=True, text=True)
        if up.returncode:
            raise ConfigError(f"docker compose run failed ({compose_path}): {up.stderr.strip()[-1500:]}")
        rc = _wait(container, plan)
        state = json.loads(_docker("inspect", "-f", "{{json .State}}", container).stdout or "{}")
        _save_logs(compose, env, container, run_dir)
        server_oom = [c for c in _project_containers(project) if c != container and _oom_killed(c)]
        return judge_exit(plan, rc, bool(state.get("OOMKilled")), server_oom[0] if server_oom else None)
    finally:
        _docker("rm", "-f", container)
        subprocess.run([*compose, "down", "--volumes", "--remove-orphans", "--timeout", "10"], env=env,
                       capture_output=True)
        _return_to_owner(run_dir, run_dir.parent)
        if not plan.keep_data:
            shutil.rmtree(data_dir, ignore_errors=True)


def judge_exit(plan: RunPlan, rc: int, oom_killed: bool, server_oom: str | None = None) -> int:
    """The cell's exit code once its containers ended (here, or as swarm tasks): an OOM kill of what holds
    MEM is the run's "oom", whatever the runner wrote; a runner that vanished wrote no result."""
    run_dir = Path(plan.run_dir)
    if server_oom:         # MEM is the server's: its OOM kill is the run's, whatever the runner saw
        why = f"{server_oom} was OOM-killed at the {plan.memory.data_limit_bytes}-byte container memory limit"
        if (run_dir / "result.json").exists():
            record_server_oom(run_dir, why)
        else:
            write_failed_result(plan, "oom", why)
        return EXIT_RUN_FAILED
    if oom_killed or rc == 137:
        # Docker's OOMKilled flag is not always set for a kernel OOM kill (moby/moby#15621, #18510): seen here
        # on a swarm task whose runner the limit killed
        limit = plan.memory.runner_limit_bytes
        why = (f"OOM-killed at the {limit}-byte container memory limit" if oom_killed else
               "the container was killed (exit 137)" + (f" under its {limit}-byte memory limit; Docker did not flag "
                                                         "an OOM kill, which it does not always do" if limit else ""))
        # a server engine's runner is its client: its own OOM is a harness failure, not the engine's
        oom = (oom_killed or plan.memory.data_limit_bytes) and not plan.memory.runner_is_client
        write_failed_result(plan, "oom" if oom else "error", why)
        return EXIT_RUN_FAILED
    if not (run_dir / "result.json").exists():
        write_failed_result(plan, "error", f"the runner container exited with {rc} and wrote no result; "
                                           "see container.log")
        return EXIT_RUN_FAILED
    return rc


def _project_containers(project: str) -> list[str]:
    out = _docker("ps", "-a", "--format", "{{.Names}}", "--filter", f"label=com.docker.compose.project={project}")
    return out.stdout.split()


def _oom_killed(container: str) -> bool:
    """Docker sets State.OOMKilled only when the kill ends the container; a server that lost a backend to
    the OOM killer and went on running shows it in its cgroup's counter, read here on the daemon's host."""
    out = _docker("inspect", "-f", "{{.State.OOMKilled}} {{.Id}}", container).stdout.split()
    if not out:
        return False
    if out[0] == "true":
        return True
    for d in (cgroup.ROOT / "memory" / "docker" / out[1], cgroup.ROOT / "memory" / "system.slice" / f"docker-{out[1]}.scope",
              cgroup.ROOT / "docker" / out[1], cgroup.ROOT / "system.slice" / f"docker-{out[1]}.scope"):
        if d.is_dir():
            return cgroup.oom_kills(d) > 0
    return False


def remove_leftovers(run_id: str) -> int:
    """Containers and networks of a run whose harness died without cleaning up (a killed sweep, say):
    found by their compose project label, so a resumed sweep does not share the machine with them."""
    if not daemon_answers():
        return 0
    label = f"label=com.docker.compose.project=arkbench-{run_id}".lower()
    ids = _docker("ps", "-aq", "--filter", label).stdout.split()
    if ids:
        _docker("rm", "-f", *ids)
    nets = _docker("network", "ls", "-q", "--filter", label).stdout.split()
    if nets:
        _docker("network", "rm", *nets)
    return len(ids)


def _wait(container: str, plan: RunPlan) -> int:
    """The container's exit code. Ctrl-C sends the runner SIGINT (it writes its partial result and
    exits); a second Ctrl-C kills the container."""
    interrupted = False
    while True:
        try:
            return int(_docker("wait", container).stdout.strip() or -1)
        except KeyboardInterrupt:
            if interrupted:
                _docker("kill", container)
                raise
            interrupted = True
            print(f"[{plan.scenario}/{plan.engine}] interrupted: stopping the runner (Ctrl-C again to kill it)",
                  file=sys.stderr)
            k = _docker("kill", "--signal", "SIGINT", container)
            if k.returncode:        # else it would run to its end as if never interrupted
                print(f"[{plan.scenario}/{plan.engine}] could not signal the runner ({k.stderr.strip()}); "
                      "Ctrl-C again to kill it", file=sys.stderr)


def _save_logs(compose: list[str], env: dict, container: str, run_dir: Path) -> None:
    logs = _docker("logs", container)
    (run_dir / "container.log").write_text(logs.stdout + logs.stderr)
    others = subprocess.run([*compose, "logs", "--no-color"], env=env, capture_output=True, text=True).stdout
    if others.strip():
        (run_dir / "compose.log").write_text(others)
