"""The Data Center reads' parameters and the check of their answers (engines/queries.yaml, kinds with
`check`). A reader draws a DC query's parameters from the model's deterministic ids, asks one statement
that returns (the last block its snapshot holds, the answer), and records both with the parameters; after
the clock, every answer is compared with what the model says at that block. The model's side is the log
the block feed writes outside the memory limit (dc.DcModel.start_log): the counts at the start, then each
block's changes, so any block's answers are known without the model in the runner."""
from __future__ import annotations

import bisect
import hashlib
import json
import random
from array import array
from dataclasses import dataclass, field
from pathlib import Path

from harness.workload.dc_tables import (CPU_COUNTS, NODE_STATUSES, PENDING, RAM_GB, VM_NAMES, dc_name,
                                        node_id, nodes_matching, workload_count_index)

ANSWER_LOG = "dc-answers.jsonl"     # the feed's log, in the run folder
ANSWERS = "answers.bin"             # the readers' answers, in the run folder
RECORD = 9                          # int64s per answer: kind, block seen, answer, dc, n, vm, cpu, ram, back
NULL = -1                           # a NULL block or answer
MAX_BACK_BLOCKS = 20                # a history query asks up to this many blocks before the one seen


def draw(rng: random.Random, data_centres: int, nodes_per_dc: int) -> tuple[dict, tuple[int, ...]]:
    """A DC query's parameters (by name, as the statements bind them) and their ints for the record."""
    dc, n = rng.randint(1, data_centres), rng.randint(1, nodes_per_dc)
    vm, cpu, ram, back = rng.randrange(3), rng.choice(CPU_COUNTS), rng.choice(RAM_GB), rng.randint(0, MAX_BACK_BLOCKS)
    return ({"dc_id": dc_name(dc), "node_id": node_id(dc, n), "vm_type": VM_NAMES[vm], "min_cpu": cpu,
             "min_ram": ram, "back": back}, (dc, n, vm, cpu, ram, back))


def answer_code(v) -> int:
    """An answer as one int64: a count as itself, a text by a 56-bit hash, NULL as -1."""
    if v is None:
        return NULL
    if isinstance(v, int):
        return v
    return int.from_bytes(hashlib.blake2b(str(v).encode(), digest_size=7).digest(), "big")


@dataclass
class KindCheck:
    checked: int = 0
    wrong: int = 0
    unknown: int = 0             # the model no longer knew the answer (history older than it keeps)
    first_wrong: str | None = None


@dataclass
class _State:
    """The model's answers as of one block: replayed from the log."""
    header: dict
    block: int
    node_counts: list = field(default_factory=list)
    wl_counts: list = field(default_factory=list)
    node_workloads: list = field(default_factory=list)
    history: dict = field(default_factory=dict)      # node -> [(from_block, status)], changed nodes only

    def status_at(self, node: int, block: int) -> int | None:
        changes = self.history.get(node)
        if changes:
            i = bisect.bisect_right(changes, (block, 99)) - 1
            if i >= 0:
                return changes[i][1]
        h = self.header
        if block >= h["node_from"][node]:
            return h["node_status"][node]
        if h["node_prev_status"][node] >= 0 and block >= h["node_prev_from"][node]:
            return h["node_prev_status"][node]
        return None


def expected(state: _State, check: str, seen: int, dc: int, n: int, vm: int, cpu: int, ram: int, back: int):
    """The model's answer (as answer_code) to one checked query at block `seen`, or None if it cannot say."""
    per_dc = state.header["nodes_per_dc"]
    c = state.node_counts
    available = NODE_STATUSES.index("available")
    if check == "nodes_in_dc":
        return sum(nodes_matching(c, dc, s, v) for s in range(len(NODE_STATUSES)) for v in range(len(VM_NAMES)))
    if check == "available_gpu_nodes":
        return nodes_matching(c, dc, available, VM_NAMES.index("gpu"))
    if check == "matching_nodes":
        return nodes_matching(c, dc, available, vm, cpu, ram)
    if check == "pending_workloads":
        return state.wl_counts[workload_count_index(dc, PENDING)]
    if check == "workloads_on_node":
        return state.node_workloads[(dc - 1) * per_dc + n - 1]
    if check == "node_status_at":
        s = state.status_at((dc - 1) * per_dc + n - 1, seen - back)
        return None if s is None else answer_code(NODE_STATUSES[s])
    raise ValueError(f"unknown check {check!r}")


def check_answers(run_dir: Path, checks: list[str | None], names: list[str]) -> dict[str, KindCheck]:
    """Every recorded answer against the model's at the block it saw: per mix entry (names), its counts
    and the first wrong one in words. checks[i] is entry i's check (None: not a checked kind)."""
    out = {names[i]: KindCheck() for i, c in enumerate(checks) if c}
    path = run_dir / ANSWERS
    if not out or not path.exists():
        return out
    recs = array("q")
    with open(path, "rb") as f:
        recs.frombytes(f.read())
    rows = sorted((tuple(recs[k:k + RECORD]) for k in range(0, len(recs), RECORD)), key=lambda r: r[1])
    with open(run_dir / ANSWER_LOG) as log:
        header = json.loads(log.readline())
        state = _State(header, header["block"], list(header["node_counts"]), list(header["wl_counts"]),
                       list(header["node_workloads"]))
        pending = _next(log)
        for kind, seen, answer, dc, n, vm, cpu, ram, back in rows:
            at = header["block"] if seen == NULL else seen
            while pending and pending["b"] <= at:
                _apply(state, pending)
                pending = _next(log)
            want = expected(state, checks[kind], at, dc, n, vm, cpu, ram, back)
            k = out[names[kind]]
            if want is None:
                k.unknown += 1
                continue
            k.checked += 1
            if want != answer:
                k.wrong += 1
                k.first_wrong = k.first_wrong or (
                    f"{names[kind]} (dc {dc}, node {n}, vm {VM_NAMES[vm]}, cpu>={cpu}, ram>={ram}, back {back}) at "
                    f"block {at}: the engine answered {answer}, the model {want}")
    return out


def _next(log) -> dict | None:
    line = log.readline()
    return json.loads(line) if line.strip() else None


def _apply(state: _State, line: dict) -> None:
    for idx, delta in line.get("nc", ()):
        state.node_counts[idx] += delta
    for idx, delta in line.get("wc", ()):
        state.wl_counts[idx] += delta
    for idx, delta in line.get("nw", ()):
        state.node_workloads[idx] += delta
    for idx, status in line.get("ns", ()):
        state.history.setdefault(idx, []).append((line["b"], status))
    state.block = line["b"]
