"""One life of a crash run, inside MEM (the process holding an embedded engine, or a server engine's client
and, as its child, the server): open the engine on its files, read once, digest every row, learn from the
driver where to go on, then apply blocks until killed (or, the last life, for tail_blocks and a final
digest). Every event goes to the driver as a JSON line on --events; the driver answers on stdin."""
from __future__ import annotations

import ctypes
import json
import os
import signal
import sys
import time
from pathlib import Path

from harness import designs
from harness.crash.blocks import Reader
from harness.crash.status import FILE as STATUS_FILE, Status
from harness.engine_api import TABLES, tables
from harness.scenario.plan import RunPlan
from harness.workload.digest import digest_rows

_PR_SET_PDEATHSIG = 1


def main(plan_path: str, events_fd: int, fresh: bool) -> int:
    try:   # die with the driver, whatever kills it (a server engine's server is our child: it loses its client)
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass
    plan = RunPlan.read(Path(plan_path))
    events = os.fdopen(events_fd, "w", buffering=1)
    status = Status(Path(plan.run_dir) / STATUS_FILE)

    def emit(kind: str, **fields) -> None:
        events.write(json.dumps({"event": kind, **fields}) + "\n")

    engine, first_read_s = _open(plan, fresh, emit, status)
    status.set("verify")
    t1 = time.perf_counter()
    digest = digest_rows({t: engine.iter_rows(t) for t in tables(plan.workload.variant)})
    emit("state", digest=digest, verify_s=round(time.perf_counter() - t1, 3))
    cmd = json.loads(sys.stdin.readline() or "{}")
    if cmd.get("go") is None:
        engine.close(discard=True)
        return 0
    _apply_blocks(plan, engine, cmd, emit, status, first_read_s)
    status.set("verify")
    emit("final", digest=digest_rows({t: engine.iter_rows(t) for t in tables(plan.workload.variant)}),
         counts=engine.row_counts())
    status.set("done")
    engine.close(discard=not plan.keep_data)
    return 0


def _open(plan: RunPlan, fresh: bool, emit, status: Status):
    """The engine opened on the data as a restart finds it, timed to its first read (WAL recovery may wait for
    it); (engine, seconds to the first read)."""
    status.set("open")
    t0 = time.perf_counter()
    engine = designs.engine_for(plan)
    if plan.design:            # its applier says when it applies, so a kill can be aimed there
        engine.phase_hook = status.set
    engine.open(plan.engine_settings, Path(plan.data_dir))
    if fresh and not plan.state:
        engine.create_schema(plan.workload.variant, plan.workload.indexes)
    else:
        engine.use_schema(plan.workload.variant)
    open_s = time.perf_counter() - t0
    reader = engine.reader()
    reader.run(f"SELECT * FROM {TABLES[0]} LIMIT 1", ())
    reader.close()
    first_read_s = time.perf_counter() - t0
    info = engine.info()
    limit = plan.memory.data_limit_bytes
    if limit and plan.memory.runner_is_client and (info.data_limit_bytes_seen or limit + 1) > limit:
        raise RuntimeError(f"a {limit}-byte limit was asked for the {plan.engine} server, which sees "
                           f"{info.data_limit_bytes_seen}")
    replay = {"replayed_blocks": engine.replay["blocks"], "replay_s": engine.replay["seconds"]} if plan.design else {}
    emit("open", open_s=round(open_s, 4), first_read_s=round(first_read_s, 4), **replay,
         info={"library": info.library, "driver": info.driver, "settings": info.settings, "related": info.related,
               "data_limit_bytes_seen": info.data_limit_bytes_seen})
    return engine, first_read_s


def _apply_blocks(plan: RunPlan, engine, cmd: dict, emit, status: Status, first_read_s: float) -> None:
    """The driver's blocks from its file at the cadence, each acknowledged once committed, until killed (or,
    the last life, its tail)."""
    crash, ck = plan.workload.crash, plan.checkpoint
    if crash.wal_bytes and plan.capabilities.strongest_checkpoint:     # each WAL size from an empty WAL
        engine.checkpoint(plan.capabilities.strongest_checkpoint)
    blocks = Reader(Path(plan.run_dir) / cmd["file"], cmd["offset"])
    resumed = time.perf_counter()      # the first commit is timed from open without the harness's digest
    interval_s = plan.workload.block_interval_ms / 1000
    stop_after = cmd.get("blocks")          # the last life: a tail, then a final digest
    applied, next_due = 0, time.perf_counter()
    while stop_after is None or applied < stop_after:
        number, kind, prepared, rows = blocks.next()
        if interval_s:
            time.sleep(max(0.0, next_due - time.perf_counter()))
            next_due += interval_s
        status.begin(number)
        t = time.perf_counter()
        engine.apply_block(prepared)
        done = time.perf_counter()
        status.set("idle", number)
        applied += 1
        wal = engine.storage().wal_bytes if crash.wal_bytes else None
        emit("ack", block=number, ms=round((done - t) * 1000, 3), rows=rows, wal_bytes=wal,
             since_open_s=round(first_read_s + done - resumed, 4) if applied == 1 else None)
        if ck.every_blocks and kind != "load" and number % ck.every_blocks == 0:
            status.set("checkpoint", number)
            t = time.perf_counter()
            engine.checkpoint(ck.mode)
            status.set("idle", number)
            emit("checkpoint", block=number, ms=round((time.perf_counter() - t) * 1000, 3))
    blocks.close()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2]), sys.argv[3] == "fresh"))
