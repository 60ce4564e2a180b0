"""The Data Center reads' parameters and the check of their answers (engines/queries.yaml, kinds with
`check`). A reader draws a DC query's parameters from the model's deterministic ids, asks one statement
whose rows hold (the last block its snapshot holds, the answer), and records both with the parameters; a
list answer (a scheduler's candidates, a node's workloads: LIST_CHECKS) is one row per item, its items
sorted and joined by the reader. After the clock, every answer is compared with what the model says at that
block. The model's side is the log the block feed writes outside the memory limit (workload/dc_log.py): the
state at the start, then each block's changes, so any block's answers are known without the model in the
runner."""
from __future__ import annotations

import bisect
import hashlib
import json
import random
from array import array
from dataclasses import dataclass, field
from pathlib import Path

from harness.workload.dc_log import DC_LOG_FORMAT
from harness.workload.dc_tables import (AVAIL_HOURS, CPU_COUNTS, NODE_STATUSES, PENDING, RAM_GB, VM_NAMES,
                                        WORKLOAD_STATUSES, WORKLOADS_PER_NODE, dc_name, node_attrs, node_id,
                                        nodes_matching, workload_count_index, workload_id)

ANSWER_LOG = "dc-answers.jsonl"     # the feed's log, in the run folder
ANSWERS = "answers.bin"             # the readers' answers, in the run folder
RECORD = 11    # int64s per answer: kind, block seen, answer, dc, n, vm, cpu, ram, back, hours, workload
NULL = -1                           # a NULL block or answer
MAX_BACK_BLOCKS = 20                # a history query asks up to this many blocks before the one seen
CANDIDATES = 10                     # a scheduler's candidates: the LIMIT of engines/queries.yaml's dc_candidates
LIST_CHECKS = ("candidate_nodes", "node_workload_ids")    # answers of one row per item


def draw(rng: random.Random, data_centres: int, nodes_per_dc: int) -> tuple[dict, tuple[int, ...]]:
    """A DC query's parameters (by name, as the statements bind them) and their ints for the record. The
    workload is one of the seed's, so it exists whatever the run has done."""
    dc, n = rng.randint(1, data_centres), rng.randint(1, nodes_per_dc)
    vm, cpu, ram, back = rng.randrange(3), rng.choice(CPU_COUNTS), rng.choice(RAM_GB), rng.randint(0, MAX_BACK_BLOCKS)
    hours, w = rng.choice(AVAIL_HOURS), rng.randint(1, nodes_per_dc * WORKLOADS_PER_NODE)
    return ({"dc_id": dc_name(dc), "node_id": node_id(dc, n), "vm_type": VM_NAMES[vm], "min_cpu": cpu,
             "min_ram": ram, "back": back, "min_hours": hours, "workload_id": workload_id(dc, w),
             "first_node": node_id(dc, 1), "last_node": node_id(dc, nodes_per_dc)},
            (dc, n, vm, cpu, ram, back, hours, w))


def answer_of(rows, check: str) -> tuple[int | None, object]:
    """A checked query's (block seen, answer) from its rows: the first row's, or a list answer's items from
    every row. Made after the query's end is timed: the sort is the reader's bookkeeping, not the engine's."""
    if not rows:
        return None, None
    return rows[0][0], list_answer(r[1] for r in rows) if check in LIST_CHECKS else rows[0][1]


def ask(reader, sql: str, params: tuple, check: str) -> tuple[int | None, object]:
    return answer_of(reader.rows(sql, params), check)


def list_answer(values) -> str:
    """A list answer as one text: its items sorted, joined by commas (the model's side builds the same)."""
    return ",".join(sorted(str(v) for v in values if v is not None))


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
    wl_status: list = field(default_factory=list)    # per DC, each workload's status and whether it is assigned
    wl_assigned: list = field(default_factory=list)
    attrs: dict = field(default_factory=dict)        # (dc, n) -> a node's fixed (vm, cores, GB, hours), as drawn

    @classmethod
    def at_start(cls, h: dict) -> "_State":
        return cls(h, h["block"], list(h["node_counts"]), list(h["wl_counts"]), list(h["node_workloads"]),
                   wl_status=[list(a) for a in h["wl_status"]], wl_assigned=[list(a) for a in h["wl_assigned"]])

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

    def now(self, node: int) -> tuple[int, int]:
        """The node's status as of the block replayed to, and the block it took it."""
        changes = self.history.get(node)
        if changes:
            return changes[-1][1], changes[-1][0]
        return self.header["node_status"][node], self.header["node_from"][node]

    def node_fits(self, dc: int, n: int, vm: int, cpu: int, ram: int, hours: int) -> bool:
        a = self.attrs.get((dc, n))
        if a is None:
            x = node_attrs(self.header["seed"], dc, n)
            a = self.attrs[(dc, n)] = (x.vm, CPU_COUNTS[x.cpu], RAM_GB[x.ram], x.avail_hours)
        return a[0] == vm and a[1] >= cpu and a[2] >= ram and a[3] >= hours

    def candidates(self, dc: int, vm: int, cpu: int, ram: int, hours: int) -> str:
        """The first CANDIDATES available nodes of the DC, by id, that fit the workload."""
        per, available, out = self.header["nodes_per_dc"], NODE_STATUSES.index("available"), []
        for n in range(1, per + 1):
            if self.now((dc - 1) * per + n - 1)[0] == available and self.node_fits(dc, n, vm, cpu, ram, hours):
                out.append(node_id(dc, n))
                if len(out) == CANDIDATES:
                    break
        return list_answer(out)

    def workloads_of(self, dc: int, n: int) -> str:
        """The ids of the workloads assigned to node n (workload w runs on node w % per + 1)."""
        per, assigned = self.header["nodes_per_dc"], self.wl_assigned[dc - 1]
        first = n - 1 if n > 1 else per
        return list_answer(workload_id(dc, w) for w in range(first, len(assigned) + 1, per) if assigned[w - 1])

    def workload(self, dc: int, w: int) -> str:
        per, d = self.header["nodes_per_dc"], dc - 1
        node = node_id(dc, w % per + 1) if self.wl_assigned[d][w - 1] else ""
        return f"{WORKLOAD_STATUSES[self.wl_status[d][w - 1]]},{node}"


def expected(state: _State, check: str, seen: int, dc: int, n: int, vm: int, cpu: int, ram: int, back: int,
             hours: int = 1, w: int = 1):
    """The model's answer (as answer_code) to one checked query at block `seen`, or None if it cannot say."""
    per_dc = state.header["nodes_per_dc"]
    c = state.node_counts
    available = NODE_STATUSES.index("available")
    node = (dc - 1) * per_dc + n - 1
    if check == "nodes_in_dc":
        return sum(nodes_matching(c, dc, s, v) for s in range(len(NODE_STATUSES)) for v in range(len(VM_NAMES)))
    if check == "available_gpu_nodes":
        return nodes_matching(c, dc, available, VM_NAMES.index("gpu"))
    if check == "matching_nodes":
        return nodes_matching(c, dc, available, vm, cpu, ram)
    if check == "pending_workloads":
        return state.wl_counts[workload_count_index(dc, PENDING)]
    if check == "workloads_on_node":
        return state.node_workloads[node]
    if check == "node_status_at":
        s = state.status_at(node, seen - back)
        return None if s is None else answer_code(NODE_STATUSES[s])
    if check == "candidate_nodes":
        return answer_code(state.candidates(dc, vm, cpu, ram, hours))
    if check == "node_workload_ids":
        return answer_code(state.workloads_of(dc, n))
    if check == "workload_status_node":
        return answer_code(state.workload(dc, w))
    if check == "node_status_since":
        status, since = state.now(node)
        return answer_code(f"{NODE_STATUSES[status]},{since}")
    raise ValueError(f"unknown check {check!r}")


def state_at_start(log_path: Path) -> _State:
    """The model's answers as of the block an answer log starts at (its header)."""
    with open(log_path) as log:
        return _State.at_start(json.loads(log.readline()))


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
        if header.get("format") != DC_LOG_FORMAT:
            raise ValueError(f"{run_dir / ANSWER_LOG}: format {header.get('format')}, this harness reads {DC_LOG_FORMAT}")
        state = _State.at_start(header)
        pending = _next(log)
        for kind, seen, answer, dc, n, vm, cpu, ram, back, hours, w in rows:
            at = header["block"] if seen == NULL else seen
            while pending and pending["b"] <= at:
                _apply(state, pending)
                pending = _next(log)
            want = expected(state, checks[kind], at, dc, n, vm, cpu, ram, back, hours, w)
            k = out[names[kind]]
            if want is None:
                k.unknown += 1
                continue
            k.checked += 1
            if want != answer:
                k.wrong += 1
                k.first_wrong = k.first_wrong or (
                    f"{names[kind]} (dc {dc}, node {n}, vm {VM_NAMES[vm]}, cpu>={cpu}, ram>={ram}, hours>={hours}, "
                    f"back {back}, workload {w}) at "
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
    for dc, w, status in line.get("ws", ()):
        if w > len(state.wl_status[dc - 1]):           # a submission: a new workload, not assigned yet
            state.wl_status[dc - 1].append(status)
            state.wl_assigned[dc - 1].append(0)
        else:
            state.wl_status[dc - 1][w - 1] = status
    for dc, w in line.get("as", ()):
        state.wl_assigned[dc - 1][w - 1] = 1
    state.block = line["b"]
