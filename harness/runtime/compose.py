"""The compose file of one docker run, made from the engine's manifest and the plan, and kept in the run
folder as the record of exactly what ran. Every container: a non-root user (the images' USER), no
privileged mode, all capabilities dropped, no new privileges, no host network, memory limit = memory+swap
limit (no swap), a cpus limit, the run's results and data folders as the only mounts. An embedded engine's
runner gets no network at all; a server engine (capabilities.server) gets two containers on an internal
network: `server`, whose limit is MEM, and `runner`, its client, under the plan's client limit."""
from __future__ import annotations

import os
import platform

from harness import registry
from harness.environment import NODE_ENV
from harness.errors import ConfigError
from harness.provenance import harness_version
from harness.engine_api import server_contract
from harness.scenario.plan import RunPlan

CONTAINER_RUN_DIR, CONTAINER_DATA_DIR = "/results/run", "/data"
NETWORK = "private"
# Only the secret is left to compose's interpolation from the environment: it never lands in a file.
PASSWORD_REF = f"${{{server_contract.PASSWORD_ENV}}}"


def image_tag(engine: str, role: str = "runner") -> str:
    return f"arkbench/{registry.image_name(engine, role)}:{harness_version()}"


def _container(image: str, data_limit_bytes: int | None, run_dir: str, data_dir: str) -> dict:
    limit = str(data_limit_bytes or 0)          # 0: no limit
    return {"image": image, "mem_limit": limit, "memswap_limit": limit, "cpus": str(os.cpu_count() or 1),
            "cap_drop": ["ALL"], "security_opt": ["no-new-privileges:true"],
            "stop_signal": "SIGINT",           # the runner writes a partial result on SIGINT
            "stop_grace_period": "60s",
            "volumes": [f"{run_dir}:{CONTAINER_RUN_DIR}", f"{data_dir}:{CONTAINER_DATA_DIR}"],
            "command": [f"{CONTAINER_RUN_DIR}/plan.container.yaml"]}


def compose_file(plan: RunPlan, image_id: str) -> dict:
    server = plan.capabilities.server
    runner = _container(image_tag(plan.engine), plan.memory.runner_limit_bytes, plan.run_dir, plan.data_dir)
    runner["environment"] = {
        "ARKBENCH_MEM_ENFORCEMENT": "docker", "ARKBENCH_IMAGE_ID": image_id, NODE_ENV: platform.node(),
        # Engines' temporary files (SQLite's statement journals and sorters) beside the database, on the
        # data mount, as on a host: the container's own /tmp is on its storage driver, which is no database's disk.
        "TMPDIR": f"{CONTAINER_DATA_DIR}/.tmp"}
    if not server:
        runner["network_mode"] = "none"
        return {"services": {"runner": runner}}
    runner["environment"].update({
        server_contract.HOST_ENV: server_contract.SERVER_HOST, server_contract.PASSWORD_ENV: PASSWORD_REF,
        server_contract.ENVIRONMENT_FILE_ENV: f"{CONTAINER_RUN_DIR}/{server_contract.ENVIRONMENT_FILE}"})
    runner["networks"] = [NETWORK]
    runner["depends_on"] = {server_contract.SERVER_HOST: {"condition": "service_healthy"}}
    srv = _container(image_tag(plan.engine, "server"), plan.memory.data_limit_bytes, plan.run_dir, plan.data_dir)
    srv["environment"] = {server_contract.PASSWORD_ENV: PASSWORD_REF}
    srv["networks"] = [NETWORK]
    srv["healthcheck"] = {"test": ["CMD", "test", "-f", str(server_contract.READY_FILE)], "interval": "1s",
                          "timeout": "2s", "retries": 120, "start_period": "5s"}
    return {"services": {"runner": runner, server_contract.SERVER_HOST: srv},
            "networks": {NETWORK: {"internal": True}}}       # no route out: the runner and its server only


def not_startable(plan: RunPlan) -> str | None:
    """Why the docker runtime cannot run this plan, or None: a server engine whose manifest builds no
    server image (libsql with `url`: a server arkbench does not start)."""
    if plan.capabilities.server and registry.manifest(plan.engine).images.server is None:
        return (f"{plan.engine} with these settings is the client of a server that arkbench does not start "
                f"(engines/{plan.engine}/engine.toml has no [images.server])")
    return None


def images_needed(plan: RunPlan) -> list[str]:
    """The run's image tags, runner first."""
    why = not_startable(plan)
    if why:
        raise ConfigError(f"RUNTIME=docker: {why}; use RUNTIME=local")
    return [image_tag(plan.engine), *([image_tag(plan.engine, "server")] if plan.capabilities.server else [])]
