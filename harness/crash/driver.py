"""The crash run's driver, outside MEM: lives started in the run's memory cgroup as the local runtime starts
its runner, every acknowledgement logged with fsync (acks.log), each kill aimed and landed, each restart
timed and checked against the model, and result.json (v8, its `crash` section) written whatever happens."""
from __future__ import annotations

import json
import os
import queue
import random
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path

from harness.crash import powercut
from harness.crash.blocks import FILE as BLOCKS_FILE, BlockFile, match
from harness.crash.status import FILE as STATUS_FILE, Status
from harness.environment import capture
from harness.errors import EXIT_PASSED, EXIT_RUN_FAILED, EXIT_THRESHOLD_FAILED, ConfigError
from harness.engine_api import EngineInfo
from harness.platform import cgroup
from harness.results import CrashFigures, Integrity, Kill, LatencySummary, Metrics, ThresholdResult, write_json
from harness.runner.metrics import new_histogram, percentile_rank, summary_ms
from harness.runner.outcome import Outcome, histogram_value, make_result
from harness.runtime.local import limit_cgroups
from harness.scenario.plan import RunPlan
from harness.scenario.thresholds import NotEvaluable, evaluate, parse_threshold
from harness.state.clone import CLONE_RECORD, evict
from harness.units import parse_size_bytes

ACKS = "acks.log"
AIM_TIMEOUT_S = 30.0        # a kill aimed at a phase the life never enters lands where it is after this
EVENT_TIMEOUT_S = 900.0     # a life silent this long (an open, a digest at scale) has hung
STATUS_POLL_S = 0.0002
WAL_MAX_BLOCKS = 50_000     # a WAL size that this many blocks never reach: the engine checkpoints anyway


class LifeFailed(RuntimeError):
    pass


def log(plan: RunPlan, msg: str) -> None:
    print(f"[{plan.scenario}/{plan.engine}] {msg}", file=sys.stderr, flush=True)


class Life:
    """One process lifetime of the engine: its events on a pipe, read by a thread into a queue."""

    def __init__(self, plan: RunPlan, n: int, fresh: bool, env: dict, cg) -> None:
        r, w = os.pipe()
        self.log_path = Path(plan.run_dir) / f"life-{n}.log"
        with open(self.log_path, "wb") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "harness.crash.life", str(Path(plan.run_dir) / "plan.yaml"), str(w),
                 "fresh" if fresh else "restart"], stdin=subprocess.PIPE, stdout=err, stderr=err, pass_fds=(w,),
                env=env, text=True, preexec_fn=cg.add_self if cg else None)
        os.close(w)
        self.events: queue.Queue = queue.Queue()
        self._r = os.fdopen(r)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self._r:
            self.events.put(json.loads(line))
        self.events.put(None)         # EOF: the life is gone

    def next(self, timeout_s: float = EVENT_TIMEOUT_S) -> dict | None:
        try:
            return self.events.get(timeout=timeout_s)
        except queue.Empty:
            raise LifeFailed(f"no word from the engine's process for {timeout_s:.0f} s") from None

    def expect(self, kind: str) -> dict:
        ev = self.next()
        if ev is None or ev["event"] != kind:
            self.proc.wait(timeout=60)
            raise LifeFailed(f"the engine's process ended (exit {self.proc.returncode}) before '{kind}'; "
                             f"{self.log_path.name}: {self.tail()}")
        return ev

    def send(self, cmd: dict) -> None:
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()

    def tail(self, n: int = 6) -> str:
        try:
            return " | ".join(self.log_path.read_text(errors="replace").strip().splitlines()[-n:])
        except OSError:
            return "(no log)"


def _stat(pid: int) -> list[str] | None:
    """/proc/<pid>/stat's fields after the command (state, ppid, ...); None: the process is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def process_tree(root: int) -> list[int]:
    """root and every descendant (a server engine's postmaster and backends are the life's)."""
    children: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            stat = _stat(int(d.name))
            if stat:
                children.setdefault(int(stat[1]), []).append(int(d.name))
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, ()))
    return out


def stop_tree(root: int) -> list[int]:
    """SIGSTOP root and its descendants, again until no new one appears (a backend forked meanwhile)."""
    stopped: set[int] = set()
    while new := [p for p in process_tree(root) if p not in stopped]:
        _signal_all(new, signal.SIGSTOP)
        stopped.update(new)
    return sorted(stopped)


def _wait_gone(pids: list[int], timeout_s: float = 60.0) -> None:
    """Until every killed process has exited (gone or a zombie): till then it may hold the data's files."""
    deadline = time.monotonic() + timeout_s
    for p in pids:
        while time.monotonic() < deadline and (stat := _stat(p)) and stat[0] != "Z":
            time.sleep(0.01)


def _signal_all(pids: list[int], sig: int) -> None:
    for p in pids:
        try:
            os.kill(p, sig)
        except ProcessLookupError:
            pass


class Crasher:
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
            _signal_all(process_tree(self.life.proc.pid), signal.SIGKILL)
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

    def kill(self, life: Life, aim: str, wal_target: int | None) -> tuple[str, int, float]:
        """Run the life to its kill; SIGSTOP its whole tree, read where it was, SIGKILL it. (phase, block, s)."""
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
        if aim in ("commit", "checkpoint"):
            deadline = time.monotonic() + AIM_TIMEOUT_S
            while self.status.get()[0] != aim and time.monotonic() < deadline:
                self._drain(life)
                time.sleep(STATUS_POLL_S)
            typical = self.phase_ms[aim][-20:]
            time.sleep(self.rng.uniform(0, statistics.median(typical) / 1000) if typical else 0)
        elif aim == "anywhere":     # any moment of a block's cycle: its commit, a checkpoint, the wait
            commit_ms = self.phase_ms["commit"][-20:]
            cycle_s = max(self.plan.workload.block_interval_ms, statistics.median(commit_ms) if commit_ms else 0) / 1000
            time.sleep(self.rng.uniform(0, cycle_s))
        pids = stop_tree(life.proc.pid)            # nothing moves between reading the status and the kill
        where = self.status.get()
        _signal_all(pids, signal.SIGKILL)
        life.proc.wait(timeout=60)
        _wait_gone(pids)
        self.pump(life, lambda e: False)           # acknowledgements already sent count: the pipe held them
        return where

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


def _kill_record(c: Crasher, life: int, aim: str, where, found: int | None, opened: dict, state: dict,
                 dropped: dict) -> Kill:
    phase, block, in_phase_s = where
    last = c.last_acked
    sent = max(last, block)                  # the newest block the life had started on
    in_flight = block if block > last else None
    rec = dict(life=life, aimed_at=aim, landed_in=phase, in_phase_ms=round(in_phase_s * 1000, 3),
               block_in_flight=in_flight, last_acked_block=last, wal_bytes=c.wal_bytes, recovered_block=found,
               dropped_bytes=dropped.get("bytes"),
               open_s=opened["open_s"], recovery_s=opened["first_read_s"], verify_s=state["verify_s"])
    if found is None:
        return Kill(**rec, corrupt=True)
    # what the restart holds is the truth from here on: the next acknowledgement continues from it
    c.last_acked = found
    return Kill(**rec, lost_acked_blocks=max(0, last - found), in_flight_kept=in_flight is not None and found == in_flight,
                unacked_blocks=max(0, found - sent))


def crash_figures(plan: RunPlan, c: Crasher) -> CrashFigures:
    survives = plan.survives
    promised = survives in (("process_kill", "power_cut") if plan.workload.crash.mode == "kill" else ("power_cut",))
    rec = [k.recovery_s for k in c.kills if k.recovery_s is not None]
    landed: dict[str, int] = {}
    for k in c.kills:
        landed[k.landed_in] = landed.get(k.landed_in, 0) + 1
    return CrashFigures(
        mode=plan.workload.crash.mode, durability=plan.durability, survives=survives, promised=promised,
        kills=c.kills, acknowledged_blocks=c.acked, lost_acked_blocks=sum(k.lost_acked_blocks for k in c.kills),
        unacked_blocks=sum(k.unacked_blocks for k in c.kills), corrupt_restarts=sum(k.corrupt for k in c.kills),
        recovery_s=_seconds_summary(rec), landed=landed)


def _seconds_summary(values: list[float]) -> LatencySummary:
    if not values:
        return LatencySummary()
    s = sorted(values)
    at = lambda p: s[percentile_rank(p, len(s)) - 1]        # noqa: E731
    return LatencySummary(count=len(s), p50=at(50), p95=at(95), p99=at(99), p999=at(99.9), max=s[-1],
                          mean=round(sum(s) / len(s), 4))


def crash_source(c: Crasher, figures: CrashFigures):
    recovery_ms = sorted(k.recovery_s * 1000 for k in c.kills if k.recovery_s is not None)

    def source(agg: str, metric: str, window_s):
        if window_s is not None:
            raise NotEvaluable("a crash run has no windows")
        if metric == "lost_acked_blocks":
            return figures.lost_acked_blocks if agg == "count" else None
        if metric in ("commit_ms", "service_ms"):
            return histogram_value(c.hist, agg) if c.hist.get_total_count() else None
        if metric == "recovery_ms":
            if not recovery_ms:
                return None
            if agg.startswith("p"):
                return recovery_ms[percentile_rank(float(agg[1:]), len(recovery_ms)) - 1]
            return {"max": recovery_ms[-1], "min": recovery_ms[0], "mean": sum(recovery_ms) / len(recovery_ms),
                    "count": len(recovery_ms)}[agg]
        if metric in ("rows", "blocks") and agg == "count":
            return c.rows if metric == "rows" else c.acked
        raise NotEvaluable(f"{agg}({metric}) is not measured by a crash run")
    return source


def write_crash_result(plan: RunPlan, c: Crasher, out: Outcome) -> Path:
    figures = crash_figures(plan, c)
    failures = []
    if figures.corrupt_restarts:
        failures.append(f"{figures.corrupt_restarts} restarts found rows that match no block of the model")
    if figures.unacked_blocks:
        failures.append(f"{figures.unacked_blocks} blocks present that were never sent")
    if figures.promised and figures.lost_acked_blocks:
        failures.append(f"{figures.lost_acked_blocks} acknowledged blocks lost where the settings promise "
                        f"they survive a {figures.mode.replace('_', ' ')} ({plan.durability})")
    if out.integrity.ok is False:
        failures.append("the last life's rows differ from the model at its last acknowledged block")
    figures = figures.model_copy(update={"final_ok": out.integrity.ok})
    thresholds = [parse_threshold(t) for t in plan.thresholds]
    out.thresholds = [ThresholdResult(**t) for t in evaluate(thresholds, crash_source(c, figures))]
    if failures and out.status in ("passed", "error") and not out.error:   # a corrupt restart stops the lives
        out.status, out.error = "error", "; ".join(failures)
    elif out.status == "passed" and not all(t.passed for t in out.thresholds):
        out.status = "failed"
    metrics = Metrics(service_time_ms=summary_ms(c.hist), blocks=c.acked, rows=c.rows)
    warnings = [] if plan.workload.crash.mode == "kill" else [
        "every file operation went through the power-cut layer (FUSE, in Python): commit latencies are that "
        "layer's, not the engine's, and its page cache is charged to the engine twice over"]
    warnings += [] if figures.promised else [
        f"these settings do not promise that an acknowledged block survives a {figures.mode.replace('_', ' ')} "
        f"({plan.durability}): lost blocks are counted, not failed"]
    result = make_result(plan, out, metrics, warnings).model_copy(update={"crash": figures})
    path = Path(plan.run_dir) / "result.json"
    write_json(path, result)
    return path
