"""PLACE=swarm: a walk's cells as one-shot Docker Swarm services, side by side, one per node.

Each cell is two services on one node, made by this driver on a manager:
  <cell>-node  the node's side (node.py): the clone, the eviction and the block feed, outside MEM. It
               reserves the node's whole CPU, so the scheduler puts one cell on a node and queues the rest;
  <cell>-run   the runner (an embedded engine inside it), pinned to that node once the node side is ready,
               with --limit-memory = --reserve-memory = MEM: the orchestrator's cgroup is the limit.
Both are on a network of their own made --internal, with nobody else on it: a swarm service cannot have
network mode none (moby/moby#42204), and the feed is a unix socket in the run folder anyway.

Starting states are built first, one job per state, into STATES, which every node mounts at the same path
(as the results folder): a state is built once, at bulk speed, not once per node, and its id proves that
what a cell clones is what was asked. A cell whose runner the kernel OOM-killed is `oom`; a cell lost with
its node (its task orphaned, rejected, or its node down) is placed once more, then `error`. Killed
mid-way, a walk leaves services behind: the next start removes them and reruns those cells only. The docker
CLI's swarm commands are swarm_api.py's."""
from __future__ import annotations

import hashlib
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from harness.errors import EXIT_RUN_FAILED, ConfigError
from harness.place.node import DONE, PLAN, READY, RUNNER_EXIT, RUNNER_PLAN
from harness.place.swarm_api import ENDED, Swarm, nodes, task_of
from harness.records import SweepInterrupted, begin_cell, end_cell, read_cell
from harness.results import CellRecord, read_json, write_json
from harness.runner.outcome import write_failed_result
from harness.runtime.compose import image_tag
from harness.runtime.docker import _give_to_container_user, _oom_killed, _return_to_owner, image_id
from harness.state import store

POLL_S = 2.0
STATUS_EVERY_S = 60.0
LOST = {"rejected", "orphaned", "remove", "shutdown"}      # ended by the cluster, not by the program
PLACEMENTS = 2                                              # a cell lost with its node is placed once more


def log(msg: str) -> None:
    print(f"[swarm] {msg}", file=sys.stderr, flush=True)


@dataclass
class Placed:
    """One cell on its way: queued (its node side waits for a node), running (the runner beside it), ending."""
    cr: object                           # sweep.CellRun
    rec: CellRecord
    label: str
    name: str
    net: str = ""                        # its network, shared by its node side and its runner
    phase: str = "queued"
    node_id: str | None = None
    node: str | None = None
    placements: int = 1

    @property
    def node_svc(self) -> str:
        return f"{self.name}-node"

    @property
    def run_svc(self) -> str:
        return f"{self.name}-run"


def _walk_key(runs) -> str:
    return hashlib.sha256(str(runs[0].dir.parent.parent).encode()).hexdigest()[:10]


def _images(runs) -> dict[str, str]:
    tags = {image_tag(cr.plan.engine) for cr in runs}
    ids = {t: image_id(t) for t in tags}
    missing = [t for t, i in ids.items() if i is None]
    if missing:
        raise ConfigError(f"PLACE=swarm: image {missing[0]} is not built here; `make images` (and on every other "
                          "node: `make images-load` from the tarball `make images-save` wrote, or REGISTRY=)")
    return ids


def run_swarm(runs, save) -> object:
    """Every cell of runs placed on the swarm; save() rewrites the walk's JSON (returns its content)."""
    here = nodes()
    ready = [n for n in here if n.ready]
    if not ready:
        raise ConfigError("PLACE=swarm: no node of the swarm is ready and active (docker node ls)")
    sw = Swarm(_walk_key(runs), min(n.cpus for n in ready), _images(runs))
    _give_to_container_user(store.root_dir())      # the containers' user makes its states' lock files there
    if (n := sw.leftovers()):
        log(f"removed {n} services a killed walk left; their cells run again")
    log(f"{len(ready)} node(s) ready ({', '.join(n.hostname for n in ready)}); each cell reserves {sw.cpus:g} CPUs")
    cells = []
    for i, cr in enumerate(runs, 1):
        label = f"{i}/{len(runs)}"
        rec = begin_cell(cr, label, where="swarm")
        if rec.state == "complete":
            cr.record = rec
        else:
            cr.record = rec.model_copy(update={"place": "swarm"})
            cells.append(Placed(cr, cr.record, label, f"ark-{sw.key}-{cr.cell_id[:12]}"))
    save()
    try:
        _build_states(sw, cells)
        for p in cells:
            if p.phase == "queued":
                _place(sw, p)
        _follow(sw, cells, save)
    except KeyboardInterrupt:
        log("interrupted: removing the walk's services (each runner is stopped with SIGINT)")
        for p in cells:
            if p.phase != "done":
                p.cr.record = (read_cell(p.cr.dir / "cell.json") or p.rec).model_copy(update={"state": "partial"})
        sw.leftovers()
        save()
        raise SweepInterrupted("swarm") from None
    finally:
        for cr in runs:
            _return_to_owner(cr.dir, cr.dir.parent)
    return save()


def _build_states(sw: Swarm, cells: list[Placed]) -> None:
    """One job per starting state the cells need and STATES lacks; they run side by side, a node each."""
    root = store.root_dir()
    groups: dict[str, list[Placed]] = {}
    for p in cells:
        plan = p.cr.plan
        if plan.load.method == "state" and (plan.load_entities or plan.workload.dc):
            inputs = store.inputs_for(plan)
            if store.find(root, inputs) is None:
                groups.setdefault(inputs.id, []).append(p)
    if not groups:
        return
    jobs = {}
    for sid, ps in groups.items():
        plan = ps[0].cr.plan
        spec = root / f".{sid}.job-plan.yaml"
        plan.write(spec)
        name = f"ark-{sw.key}-state-{sid[:12]}"
        sw.create(name, image_tag(plan.engine), ["state", str(spec)], entrypoint="python -m harness.place.node",
                  mounts=[root], env={store.STATES_ENV: str(root)}, network=sw.network(name),
                  reserve_cpu=sw.cpus)
        jobs[name] = (sid, ps, time.monotonic())
        log(f"state {sid[:12]} ({plan.engine}, {plan.load_entities} entities): building, a job of its own ({name})")
    while jobs:
        time.sleep(POLL_S)
        for name, (sid, ps, t0) in list(jobs.items()):
            t = task_of(name)
            if t is None or t.state not in ENDED:
                continue
            sw.logs(name, ps[0].cr.dir / "state-job.log")
            sw.remove(name)
            del jobs[name]
            if t.state == "complete":
                log(f"state {sid[:12]}: built in {time.monotonic() - t0:.0f} s")
                continue
            why = f"the state job {name} ended {t.state} (exit {t.exit_code}): {t.error or 'see state-job.log'}"
            log(f"state {sid[:12]}: {why}")
            for p in ps:
                write_failed_result(p.cr.plan, "build_failed", why)
                write_json(p.cr.dir / DONE, {"exit_code": EXIT_RUN_FAILED})
                p.phase = "ending"
    sw.drop_networks()


def _place(sw: Swarm, p: Placed) -> None:
    """The cell's node side, queued until a node is free."""
    plan = p.cr.plan
    run_dir, data_parent = Path(plan.run_dir), Path(plan.data_dir).parent
    _give_to_container_user(run_dir)
    _give_to_container_user(data_parent)
    plan.write(run_dir / PLAN)
    root = store.root_dir()
    p.net = sw.network(p.name)
    sw.create(p.node_svc, image_tag(plan.engine), ["cell", str(run_dir)], entrypoint="python -m harness.place.node",
              mounts=[run_dir, data_parent, root], env={store.STATES_ENV: str(root)}, network=p.net,
              reserve_cpu=sw.cpus)


def _start_runner(sw: Swarm, p: Placed) -> None:
    plan = p.cr.plan
    tag = image_tag(plan.engine)
    sw.create(p.run_svc, tag, [str(Path(plan.run_dir) / RUNNER_PLAN)], mounts=[Path(plan.run_dir), Path(plan.data_dir)],
              env={"ARKBENCH_MEM_ENFORCEMENT": "docker", "ARKBENCH_IMAGE_ID": sw.images[tag],
                   "TMPDIR": f"{plan.data_dir}/.tmp"},
              network=p.net, mem_bytes=plan.memory.runner_limit_bytes, node=p.node_id)


def _follow(sw: Swarm, cells: list[Placed], save) -> None:
    last_status = time.monotonic()
    while any(p.phase != "done" for p in cells):
        time.sleep(POLL_S)
        down = {n.id for n in nodes() if not n.ready}
        for p in cells:
            run_dir = p.cr.dir
            if p.phase == "queued":
                t = task_of(p.node_svc)
                if (run_dir / READY).exists():
                    p.node_id, p.phase = t.node_id if t else None, "running"
                    p.node = (read_json(run_dir / READY) or {}).get("node")
                    log(f"{p.label} {p.cr.cell.scenario}/{run_dir.name}: on {p.node}, cloned and fed; runner "
                        f"started (limit {p.cr.plan.memory.runner_limit_bytes or 'none'})")
                    _start_runner(sw, p)
                elif (run_dir / DONE).exists() or (t and t.state in ENDED):
                    p.phase = "ending"       # no runner: the state could not be cloned, or the node side failed
                elif t and t.node_id in down:
                    _lost(sw, p, "its node went down")
            elif p.phase == "running":
                t = task_of(p.run_svc)
                if p.node_id in down:
                    _lost(sw, p, "its node went down")
                elif t and t.state in LOST:
                    _lost(sw, p, f"its runner's task ended {t.state}")
                elif t and t.state in ENDED:
                    sw.logs(p.run_svc, run_dir / "container.log")
                    # Docker's own flag where the task's container is on this engine; elsewhere exit 137 speaks
                    oom = bool(t.container) and _oom_killed(t.container)
                    write_json(run_dir / RUNNER_EXIT, {"exit_code": t.exit_code, "oom_killed": oom})
                    p.phase = "ending"
            if p.phase == "ending":
                t = task_of(p.node_svc)
                if t is None or t.state not in ENDED:
                    if not (t and t.node_id in down):
                        continue
                sw.logs(p.node_svc, run_dir / "node.log")
                sw.remove(p.node_svc, p.run_svc)
                done = read_json(run_dir / DONE)
                if done is None and not (run_dir / "result.json").exists():
                    write_failed_result(p.cr.plan, "error", f"the cell's node side ended {t.state if t else 'lost'} "
                                                            f"(exit {t.exit_code if t else '-'}: {t.error if t else ''}) "
                                                            "with no result; see node.log")
                rc = done["exit_code"] if done else 3
                p.cr.record = end_cell(p.cr, read_cell(p.cr.dir / "cell.json") or p.rec, rc, p.label, place="swarm", node=p.node)
                p.phase = "done"
                save()
        if time.monotonic() - last_status > STATUS_EVERY_S:
            last_status = time.monotonic()
            running = [f"{p.cr.dir.name}@{p.node}" for p in cells if p.phase == "running"]
            queued = [p.cr.dir.name for p in cells if p.phase == "queued"]
            log(f"running: {', '.join(running) or '-'}; queued: {', '.join(queued) or '-'}")
    sw.drop_networks()


def _lost(sw: Swarm, p: Placed, why: str) -> None:
    """A cell lost with its node: placed again once, then recorded as an error."""
    sw.remove(p.node_svc, p.run_svc)
    if p.placements >= PLACEMENTS:
        log(f"{p.label} {p.cr.dir.name}: lost again ({why}): error")
        write_failed_result(p.cr.plan, "error", f"lost with its node twice ({why})")
        write_json(p.cr.dir / DONE, {"exit_code": 3})
        p.phase = "ending"
        return
    log(f"{p.label} {p.cr.dir.name}: lost ({why}); placed once more")
    p.placements += 1
    p.rec = begin_cell(p.cr, p.label, where="swarm, again").model_copy(update={"place": "swarm"})
    p.phase, p.node_id, p.node = "queued", None, None
    _place(sw, p)
