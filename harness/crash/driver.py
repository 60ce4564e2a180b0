"""The crash run's driver, outside MEM: lives started in the run's memory cgroup as the local runtime starts
its runner, every acknowledgement logged with fsync (acks.log), each kill aimed and landed, each restart
timed and checked against the model, and result.json (figures.py) written whatever happens. The lives'
processes are procs.py's."""
from __future__ import annotations

import json
import os
import queue
import random
import shutil
import signal
import statistics
import time
import traceback
from pathlib import Path

from harness.crash import powercut
from harness.crash.blocks import FILE as BLOCKS_FILE, BlockFile, match
from harness.crash.figures import write_crash_result
from harness.crash.procs import Life, LifeFailed, log, process_tree, signal_all, stop_tree, wait_gone
from harness.crash.status import FILE as STATUS_FILE, Status, Where
from harness.environment import capture
from harness.errors import EXIT_PASSED, EXIT_RUN_FAILED, EXIT_THRESHOLD_FAILED, ConfigError
from harness.engine_api import EngineInfo
from harness.platform import cgroup
from harness.results import Integrity, Kill
from harness.runner.metrics import new_histogram
from harness.runner.outcome import Outcome
from harness.runtime.local import limit_cgroups
from harness.scenario.plan import RunPlan
from harness.platform.pagecache import evict
from harness.state.clone import CLONE_RECORD
from harness.units import parse_size_bytes

ACKS = "acks.log"
AIM_TIMEOUT_S = 30.0        # a kill aimed at a phase the life never enters lands where it is after this
STATUS_POLL_S = 0.0002
AIM_TRIES = 10              # stops that missed their phase (it ended first) before the kill lands where it is
WAL_MAX_BLOCKS = 50_000     # a WAL size that this many blocks never reach: the engine checkpoints anyway


class Crasher:
    """What the lives acknowledged (acks.log, the commit histogram), where each kill is aimed and where it landed."""

    def __init__(self, plan: RunPlan) -> None:
        self.plan, self.crash = plan, plan.workload.crash
        self.run_dir, self.data_dir = Path(plan.run_dir), Path(plan.data_dir)
        self.rng = random.Random(f"crash-{plan.workload.seed}")
        self.status = Status(self.run_dir / STATUS_FILE, create=True)
        self.acks = open(self.run_dir / ACKS, "a")
        self.hist = new_histogram()
        self.phase_ms: dict[str, list[float]] = {"commit": [], "checkpoint": []}
        self.kills: list[Kill] = []
        self.last_acked: int | None = None
        self.acked = self.rows = 0
        self.wal_bytes: int | None = None
        self.info: dict | None = None
        self.on_ack = lambda block: None     # the block file keeps generating ahead of the acknowledged block
        self.life: Life | None = None

    def end_life(self) -> None:
        """Whatever stopped the run, no process of the engine outlives it."""
        if self.life is not None and self.life.proc.poll() is None:
            signal_all(process_tree(self.life.proc.pid), signal.SIGKILL)
            self.life.proc.wait(timeout=60)

    def aims(self) -> list[tuple[str, int | None]]:
        c = self.crash
        if c.wal_bytes:
            return [(f"wal {s}", parse_size_bytes(s)) for s in c.wal_bytes]
        return [(c.at[i % len(c.at)], None) for i in range(c.kills)]

    def on_event(self, ev: dict) -> None:
        if ev["event"] == "ack":
            self.acks.write(f"{ev['block']} {time.time():.6f}\n")
            self.acks.flush()
            os.fsync(self.acks.fileno())
            self.last_acked, self.wal_bytes = ev["block"], ev["wal_bytes"]
            self.on_ack(ev["block"])
            self.acked, self.rows = self.acked + 1, self.rows + ev["rows"]
            self.hist.record_value(max(1, int(ev["ms"] * 1000)))
            self.phase_ms["commit"].append(ev["ms"])
        elif ev["event"] == "checkpoint":
            self.phase_ms["checkpoint"].append(ev["ms"])

    def pump(self, life: Life, until) -> dict | None:
        """Handle events until until(event) is true; returns that event (None: the life ended)."""
        while True:
            ev = life.next()
            if ev is None:
                return None
            self.on_event(ev)
            if until(ev):
                return ev

    def kill(self, life: Life, aim: str, wal_target: int | None) -> Where:
        """Run the life to its kill; SIGSTOP its whole tree, read where it was, SIGKILL it."""
        due = None if wal_target is not None else self.rng.randint(*self.crash.after_blocks)
        n, wal = [0], [0]

        def reached(e) -> bool:
            if e["event"] != "ack":
                return False
            n[0] += 1
            if due is not None:
                return n[0] >= due
            if (e["wal_bytes"] or 0) < wal[0] or n[0] > WAL_MAX_BLOCKS:
                raise LifeFailed(f"the WAL never reached {wal_target} bytes (it held {wal[0]}, then {e['wal_bytes']} "
                                 f"after {n[0]} blocks): the engine checkpoints on its own at these settings")
            wal[0] = e["wal_bytes"] or 0
            return wal[0] >= wal_target
        ev = self.pump(life, reached)
        if ev is None:
            raise LifeFailed(f"the engine's process ended before its kill; {life.log_path.name}: {life.tail()}")
        if aim in ("commit", "checkpoint", "apply", "idle", "rotate"):
            pids, where = self._stop_in(life, aim)
        else:
            if aim == "anywhere":     # any moment of a block's cycle: its commit, a checkpoint, the wait
                commit_ms = self.phase_ms["commit"][-20:]
                cycle_ms = max(self.plan.workload.block_interval_ms, statistics.median(commit_ms) if commit_ms else 0)
                time.sleep(self.rng.uniform(0, cycle_ms / 1000))
            pids = stop_tree(life.proc.pid)        # nothing moves between reading the status and the kill
            where = self.status.get()
        signal_all(pids, signal.SIGKILL)
        life.proc.wait(timeout=60)
        wait_gone(pids)
        self.pump(life, lambda e: False)           # acknowledgements already sent count: the pipe held them
        return where

    def _stop_in(self, life: Life, aim: str) -> tuple[list[int], Where]:
        """Stop the life's tree at a moment inside the phase aimed at: a random point of its typical length after
        it starts. A stop that came after the phase ended (a commit of a few ms, a loaded machine) lets the life
        go on to the next one, up to AIM_TRIES, stopped as soon as it is seen there (on a machine loaded enough to
        miss, the stop's own delay is the random point); the kill lands where the last stop found it, as recorded."""
        deadline = time.monotonic() + AIM_TIMEOUT_S
        for attempt in range(AIM_TRIES):
            while self.status.get()[0] != aim and time.monotonic() < deadline:
                self._drain(life)
                time.sleep(STATUS_POLL_S)
            typical = self.phase_ms.get(aim, [])[-20:]     # apply: a block log's, untimed here
            time.sleep(self.rng.uniform(0, statistics.median(typical) / 1000) if typical and not attempt else 0)
            pids = stop_tree(life.proc.pid)
            where = self.status.get()
            if where.phase == aim or attempt == AIM_TRIES - 1 or time.monotonic() >= deadline:
                break
            signal_all(pids, signal.SIGCONT)
        return pids, where

    def _drain(self, life: Life) -> None:
        while True:
            try:
                ev = life.events.get_nowait()
            except queue.Empty:
                return
            if ev is not None:
                self.on_event(ev)
            else:
                life.events.put(None)
                return


def check(plan: RunPlan) -> None:
    """Refuse, before a state is cloned, what cannot run here."""
    if plan.workload.crash.mode == "power_cut" and (why := powercut.unavailable()):
        raise ConfigError(f"workload.crash.mode: power_cut is not available here: {why}; mode: kill needs none")


def run_crash(plan: RunPlan) -> int:
    """The cell's exit code; result.json in plan.run_dir."""
    run_dir, data_dir = Path(plan.run_dir), Path(plan.data_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    plan.write(run_dir / "plan.yaml")
    env, limits = dict(os.environ), plan.memory
    db_cg = runner_cg = None
    c = Crasher(plan)
    out = Outcome(environment={})
    blocks = cutter = None
    try:
        db_cg, runner_cg = limit_cgroups(plan, env)
        out.environment = capture(data_dir, "local")
        out.environment.update(runner_limit_bytes_seen=cgroup.limit_bytes(runner_cg.path) if runner_cg else None,
                               memory_enforcement=runner_cg.enforcement if runner_cg else "none")
        (run_dir / "environment.json").write_text(json.dumps(out.environment, indent=2))
        if (run_dir / CLONE_RECORD).exists():     # the cloned state, as a run's load records it
            out.load = {"method": "state", "entities": plan.load_entities, "age_blocks": 0,
                        **json.loads((run_dir / CLONE_RECORD).read_text())}
        blocks = BlockFile(plan, run_dir).start()
        c.on_ack = blocks.want
        if plan.workload.crash.mode == "power_cut":
            cutter = powercut.PowerCut(data_dir)
        out.status = _lives(plan, c, blocks, env, runner_cg, out, cutter)
    except ConfigError:
        raise
    except KeyboardInterrupt:
        out.status, out.error = "error", "interrupted"
    except Exception as e:      # nothing is lost: the kills so far and what failed go into result.json
        out.status, out.error = ("oom", f"OOM-killed at the {limits.data_limit_bytes}-byte memory limit: {e}") \
            if db_cg and db_cg.oom_killed() else ("error", f"{type(e).__name__}: {e}" if not isinstance(e, LifeFailed) else str(e))
        (run_dir / "runner.log").write_text(traceback.format_exc())
        log(plan, f"run failed: {out.error}")
    finally:
        c.end_life()
        if blocks:
            blocks.close()
        if cutter:
            cutter.remove()
        for cg in {id(x): x for x in (runner_cg, db_cg) if x}.values():
            cg.remove()
        c.acks.close()
        if not plan.keep_data:
            shutil.rmtree(data_dir, ignore_errors=True)
    write_crash_result(plan, c, out)
    return {"passed": EXIT_PASSED, "failed": EXIT_THRESHOLD_FAILED}.get(out.status, EXIT_RUN_FAILED)


def _lives(plan: RunPlan, c: Crasher, blocks: BlockFile, env: dict, cg, out: Outcome, cutter) -> str:
    """Every life, kill and restart; the run's status before its thresholds."""
    aims = c.aims()
    where, dropped = None, {}
    for n in range(len(aims) + 1):
        if n:     # a restart reads its files from the disk, as after a reboot, not from a warm cache
            evict(cutter.disk if cutter else Path(plan.data_dir), write_back=True)
        if cutter:
            cutter.up()
        life = c.life = Life(plan, n, fresh=n == 0, env=env, cg=cg)
        opened = life.expect("open")
        if n == 0:
            c.info = opened.get("info")
            out.engine = EngineInfo(**c.info) if c.info else None
        state = life.expect("state")
        found = match(blocks.digests, state["digest"])
        if n:
            c.kills.append(_kill_record(c, n - 1, aims[n - 1][0], where, found, opened, state, dropped))
            k = c.kills[-1]
            log(plan, f"kill {n}/{len(aims)} aimed at {k.aimed_at}, landed in {k.landed_in} (block in flight "
                      f"{k.block_in_flight}); restart found block {k.recovered_block} of last acknowledged "
                      f"{k.last_acked_block}: {k.lost_acked_blocks} lost; recovery {k.recovery_s:.3f} s")
        elif found != blocks.start_block:
            life.send({"go": None})
            raise LifeFailed(f"the starting database matches no block of the model (digest {state['digest']})")
        if found is None:
            life.send({"go": None})
            life.proc.wait(timeout=120)
            return "error"
        c.last_acked = found if c.last_acked is None or n == 0 else c.last_acked
        last = n == len(aims)
        life.send({"go": True, "file": BLOCKS_FILE, "offset": blocks.offset_of(found + 1),
                   "blocks": plan.workload.crash.tail_blocks if last else None})
        if not last:
            first = c.pump(life, lambda e: e["event"] == "ack")
            if first is None:
                raise LifeFailed(f"the engine's process ended before its first block; {life.log_path.name}: {life.tail()}")
            if n and c.kills:
                c.kills[-1] = c.kills[-1].model_copy(update={"first_commit_s": first["since_open_s"]})
            where = c.kill(life, *aims[n])
            dropped = cutter.down(cut=True) if cutter else {}
            continue
        first = c.pump(life, lambda e: e["event"] in ("ack", "final"))
        if n and first is not None and first["event"] == "ack":
            c.kills[-1] = c.kills[-1].model_copy(update={"first_commit_s": first["since_open_s"]})
        final = c.pump(life, lambda e: e["event"] == "final")
        if final is None:
            raise LifeFailed(f"the last life ended before its final check; {life.log_path.name}: {life.tail()}")
        life.proc.wait(timeout=300)
        if cutter:
            cutter.down(cut=False)
        expected = blocks.digests[c.last_acked]
        mismatched = sorted(t for t in expected if expected[t] != final["digest"].get(t))
        out.integrity = Integrity(ok=not mismatched, method="model", expected=expected, actual=final["digest"],
                                  mismatched_tables=mismatched or None)
    return "passed"


def _kill_record(c: Crasher, life: int, aim: str, where: Where, found: int | None, opened: dict, state: dict,
                 dropped: dict) -> Kill:
    last = c.last_acked
    # not the phase's block: under a block log the applier's group is behind the head the writer had reached
    sent = max(last, where.newest_block)
    in_flight = where.newest_block if where.newest_block > last else None
    rec = dict(life=life, aimed_at=aim, landed_in=where.phase, in_phase_ms=round(where.in_phase_s * 1000, 3),
               block_in_flight=in_flight, last_acked_block=last, wal_bytes=c.wal_bytes, recovered_block=found,
               dropped_bytes=dropped.get("bytes"),
               open_s=opened["open_s"], recovery_s=opened["first_read_s"], verify_s=state["verify_s"],
               replayed_blocks=opened.get("replayed_blocks"), replay_s=opened.get("replay_s"))
    if found is None:
        return Kill(**rec, corrupt=True)
    # what the restart holds is the truth from here on: the next acknowledgement continues from it
    c.last_acked = found
    return Kill(**rec, lost_acked_blocks=max(0, last - found), in_flight_kept=in_flight is not None and found == in_flight,
                unacked_blocks=max(0, found - sent))
