"""The reference's Data Center model (docs/reference.md, "Data Center Benchmark"): nodes and workloads with
deterministic ids, attributes from its tables, and load events (node status changes, workload submissions,
assignments, completions and failures), each an arkiv update or create of the right entities plus an event
entity. Every answer a DC query can give is known: the model keeps exact counts (by DC, status, vm type,
cpu and ram; workloads by status; workloads per node) and each node's previous version, beside a few
integers per entity from which any version's rows are rebuilt, as the mendoza model does (entity.py).

Ids follow the reference: node n of DC d is `node_{d:02d}_{n:06d}` (n from 1), workload w is
`wl_{d:02d}_{w:06d}` (w from 1), and workload w runs on node `(w % nodes_per_dc) + 1` of its DC: at the
seed, every node carries exactly 5 workloads. (The reference's prose examples, wl_07_000001 on
node_07_000001, contradict its own formula by one; the formula is what is implemented.) A scenario may
take a fraction of a DC: nodes and workloads per DC scale by it, exactly, and the 5 per node hold."""
from __future__ import annotations

import bisect
import random
from array import array
from pathlib import Path

from harness.workload.block import MAX_BLOCK, Block
from harness.workload.dc_tables import (COMPLETED, EVENTS, FAILED, NODE_STATUSES, PENDING, RUNNING,
                                        VM_NAMES, WORKLOAD_STATUSES, DcSpec, NodeAttrs, event_rows, node_attrs,
                                        node_count_index, node_rows, nodes_matching, weighted, workload_count_index,
                                        workload_rows)
from harness.workload.dc_log import AnswerLog
from harness.workload.dc_seed import DcSeed
from harness.workload.digest import StateDigest
from harness.workload.expected import insert_version, terminate_version


class IdSet:
    """Ints with O(1) add, remove and uniform choice (swap-remove), for the pending and running workloads."""

    def __init__(self) -> None:
        self.items, self.pos = array("i"), {}

    def add(self, v: int) -> None:
        self.pos[v] = len(self.items)
        self.items.append(v)

    def remove(self, v: int) -> None:
        i = self.pos.pop(v)
        last = self.items.pop()
        if last != v:
            self.items[i], self.pos[last] = last, i

    def choice(self, rng: random.Random) -> int | None:
        return self.items[rng.randrange(len(self.items))] if self.items else None

    def __len__(self) -> int:
        return len(self.items)


class DcModel(DcSeed):
    """The DC entities' current versions as a few integers each, the exact counts every DC query's answer
    comes from, and the live event entities (which expire like mendoza's ephemeral ones). It writes into
    the block and the digest it is given, beside the mendoza model's (generator.py)."""

    def __init__(self, spec: DcSpec, seed: int, variant: str, digest: StateDigest) -> None:
        self.spec, self.seed, self.variant, self.digest = spec, seed, variant, digest
        self.rng = random.Random(seed ^ 0xDC)
        n_nodes = spec.data_centres * spec.nodes_per_dc
        # nodes, by global index (dc - 1) * nodes_per_dc + (n - 1)
        self.node_status = array("B", bytes(n_nodes))
        self.node_nonce = array("i", bytes(4 * n_nodes))
        self.node_from = array("i", bytes(4 * n_nodes))
        self.node_created = array("i", bytes(4 * n_nodes))
        self.node_prev_status = array("b", b"\xff" * n_nodes)     # -1: no earlier version
        self.node_prev_from = array("i", bytes(4 * n_nodes))
        self.node_workloads = array("H", bytes(2 * n_nodes))       # workloads assigned to the node
        # workloads, per DC by w - 1 (submissions append)
        self.wl_status = [array("B") for _ in range(spec.data_centres)]
        self.wl_assigned = [array("B") for _ in range(spec.data_centres)]
        self.wl_nonce = [array("i") for _ in range(spec.data_centres)]
        self.wl_from = [array("i") for _ in range(spec.data_centres)]
        self.wl_created = [array("i") for _ in range(spec.data_centres)]
        self.pending = [IdSet() for _ in range(spec.data_centres)]
        self.running = [IdSet() for _ in range(spec.data_centres)]
        # counts: nodes by (dc, status, vm, cpu, ram), workloads by (dc, status)
        self.node_counts = array("i", bytes(4 * spec.data_centres * 3 * 3 * 4 * 4))
        self.wl_counts = array("i", bytes(4 * spec.data_centres * 4))
        # live events: seq -> (dc, on_node, subject, event, old, new, block, expiration); expiring by block
        self.events: dict[int, tuple] = {}
        self.expiring: dict[int, list[int]] = {}
        self._expired_through = 0
        self._next_event = 1
        self._nonce = 0
        self._seeded_as = (0, 1, 0, 0)      # first block, entities a block, history passes, the nonce before them
        self._touched_block, self._touched = 0, set()    # the entities changed in the current block
        self._log: AnswerLog | None = None              # start_log: what every block changes, for dc_check
        self._ev_cum, self._ev_total = weighted(EVENTS)

    # ---- the answer log (dc_log.py; harness/reads/dc_check.py reads it) ----------------------------------
    def start_log(self, path: Path, block_number: int) -> None:
        """From now on, every block's changes, after a header holding the state at `block_number`: what checks
        a read's answer at the block it saw."""
        arrays = {name: list(getattr(self, name)) for name in (
            "node_counts", "wl_counts", "node_workloads", "node_status", "node_from", "node_prev_status",
            "node_prev_from")}
        self._log = AnswerLog(path, {"block": block_number, "seed": self.seed, "data_centres": self.spec.data_centres,
                                     "nodes_per_dc": self.spec.nodes_per_dc, **arrays,
                                     "wl_status": [list(a) for a in self.wl_status],
                                     "wl_assigned": [list(a) for a in self.wl_assigned]})

    def _change(self, what: str, *values) -> None:
        if self._log is not None:
            self._log.change(what, values)

    def end_block(self, number: int) -> None:
        if self._log is not None:
            self._log.end_block(number)

    def close_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None

    # ---- indexes and counts ----------------------------------------------------------------------
    def _ni(self, dc: int, n: int) -> int:
        return (dc - 1) * self.spec.nodes_per_dc + n - 1

    def _nc(self, dc: int, status: int, a: NodeAttrs) -> int:
        return node_count_index(dc, status, a.vm, a.cpu, a.ram)

    def _wc(self, dc: int, status: int) -> int:
        return workload_count_index(dc, status)

    def nodes_in(self, dc: int) -> int:
        return self.spec.nodes_per_dc

    def nodes_with(self, dc: int, status: str, vm_type: str, min_cpu: int = 0, min_ram_gb: int = 0) -> int:
        """Nodes of the DC in that status and vm type with at least that many cores and GB: exact."""
        return nodes_matching(self.node_counts, dc, NODE_STATUSES.index(status), VM_NAMES.index(vm_type),
                              min_cpu, min_ram_gb)

    def workloads_with(self, dc: int, status: str) -> int:
        return self.wl_counts[self._wc(dc, WORKLOAD_STATUSES.index(status))]

    def workloads_on(self, dc: int, n: int) -> int:
        return self.node_workloads[self._ni(dc, n)]

    def workloads_in(self, dc: int) -> int:
        return len(self.wl_status[dc - 1])

    def node_status_at(self, dc: int, n: int, block: int) -> str | None:
        """The node's status as of `block`, where the model still knows it (its current version or the one
        before), else None."""
        i = self._ni(dc, n)
        if block >= self.node_from[i]:
            return NODE_STATUSES[self.node_status[i]]
        if self.node_prev_status[i] >= 0 and block >= self.node_prev_from[i]:
            return NODE_STATUSES[self.node_prev_status[i]]
        return None

    def _append_workload(self, dc: int, status: int, assigned: bool, block_number: int) -> int:
        d = dc - 1
        for arr, v in ((self.wl_status, status), (self.wl_assigned, assigned), (self.wl_nonce, 0),
                       (self.wl_from, block_number), (self.wl_created, block_number)):
            arr[d].append(v)
        w = len(self.wl_status[d])
        self.wl_counts[self._wc(dc, status)] += 1
        self._change("wc", self._wc(dc, status), 1)
        self._change("ws", dc, w, status)
        if assigned:
            self.node_workloads[self._ni(dc, w % self.spec.nodes_per_dc + 1)] += 1
        if status in (PENDING, RUNNING):
            (self.pending if status == PENDING else self.running)[d].add(w)
        return w

    # ---- rows ----------------------------------------------------------------------------------------
    def _node_rows(self, dc: int, n: int, to_block: int = MAX_BLOCK) -> dict[str, list[tuple]]:
        i = self._ni(dc, n)
        return node_rows(self.seed, dc, n, self.node_status[i], self.node_nonce[i], self.node_from[i],
                         self.node_created[i], self.variant, to_block)

    def _workload_rows(self, dc: int, w: int, to_block: int = MAX_BLOCK) -> dict[str, list[tuple]]:
        d = dc - 1
        return workload_rows(self.seed, dc, w, self.spec.nodes_per_dc, self.wl_status[d][w - 1],
                             bool(self.wl_assigned[d][w - 1]), self.wl_nonce[d][w - 1], self.wl_from[d][w - 1],
                             self.wl_created[d][w - 1], self.variant, to_block)

    def _event_rows(self, seq: int, to_block: int = MAX_BLOCK) -> dict[str, list[tuple]]:
        return event_rows(self.seed, seq, *self.events[seq], self.variant, to_block)

    def _insert(self, block: Block, rows: dict[str, list[tuple]]) -> int:
        return insert_version(self.digest, block, rows)

    def _terminate(self, block: Block, rows: dict[str, list[tuple]]) -> int:
        return terminate_version(self.digest, block, rows, self.variant)

    def _new_nonce(self) -> int:
        self._nonce += 1
        return self._nonce

    # ---- events --------------------------------------------------------------------------------------
    def _event(self, block: Block, dc: int, on_node: bool, subject: int, event: str, old: str, new: str) -> int:
        lo, hi = self.spec.event_btl_blocks
        seq, self._next_event = self._next_event, self._next_event + 1
        expiration = block.number + self.rng.randint(lo, hi)
        self.events[seq] = (dc, on_node, subject, event, old, new, block.number, expiration)
        self.expiring.setdefault(expiration, []).append(seq)
        return self._insert(block, self._event_rows(seq))

    def expire(self, block: Block) -> int:
        """Delete the events whose $expiration is at or before this block (blocks only move forward)."""
        rows = 0
        for b in range(self._expired_through + 1, block.number + 1):
            for seq in self.expiring.pop(b, ()):
                rows += self._terminate(block, self._event_rows(seq))
                del self.events[seq]
                block.ops["dc_expire"] += 1
        self._expired_through = max(self._expired_through, block.number)
        return rows

    def next_event(self, block: Block) -> int:
        """One load event, drawn by EVENTS' weights; the rows it writes. No entity changes twice in a block
        (its new version would collide with the one made there): a draw that finds only entities already
        changed becomes a submission."""
        if self._touched_block != block.number:
            self._touched_block, self._touched = block.number, set()
        kind = EVENTS[bisect.bisect_right(self._ev_cum, self.rng.randrange(self._ev_total))][0]
        dc = self.rng.randint(1, self.spec.data_centres)
        d = dc - 1
        target = None
        if kind == "node_status":
            target = self._untouched(lambda: ("n", dc, self.rng.randint(1, self.spec.nodes_per_dc)))
        elif kind != "submit":
            pool = self.pending[d] if kind == "assign" else self.running[d]
            target = self._untouched(lambda: ("w", dc, pool.choice(self.rng)) if len(pool) else None)
        if target is None:
            kind = "submit"
        block.ops[f"dc_{kind}"] += 1
        if kind == "node_status":
            return self._node_status(block, dc, target[2])
        if kind == "submit":
            w = self._append_workload(dc, PENDING, False, block.number)
            self._touched.add(("w", dc, w))
            return self._insert(block, self._workload_rows(dc, w)) + \
                self._event(block, dc, False, w, "submitted", "", "pending")
        if kind == "assign":
            return self._workload_to(block, dc, target[2], RUNNING, "assigned")
        done = kind == "complete"
        return self._workload_to(block, dc, target[2], COMPLETED if done else FAILED, "completed" if done else "failed")

    def _untouched(self, draw, tries: int = 8) -> tuple | None:
        for _ in range(tries):
            t = draw()
            if t is None:
                return None
            if t not in self._touched:
                self._touched.add(t)
                return t
        return None

    def _node_status(self, block: Block, dc: int, n: int) -> int:
        i, a = self._ni(dc, n), node_attrs(self.seed, dc, n)
        old = self.node_status[i]
        new = (old + self.rng.randint(1, 2)) % 3          # another status, never the same
        rows = self._terminate(block, self._node_rows(dc, n))
        self.node_counts[self._nc(dc, old, a)] -= 1
        self.node_counts[self._nc(dc, new, a)] += 1
        self._change("nc", self._nc(dc, old, a), -1)
        self._change("nc", self._nc(dc, new, a), 1)
        self._change("ns", i, new)
        self.node_prev_status[i], self.node_prev_from[i] = old, self.node_from[i]
        self.node_status[i], self.node_nonce[i], self.node_from[i] = new, self._new_nonce(), block.number
        rows += self._insert(block, self._node_rows(dc, n))
        return rows + self._event(block, dc, True, n, "status_change", NODE_STATUSES[old], NODE_STATUSES[new])

    def _workload_to(self, block: Block, dc: int, w: int, status: int, event: str) -> int:
        d, j = dc - 1, w - 1
        old = self.wl_status[d][j]
        rows = self._terminate(block, self._workload_rows(dc, w))
        (self.pending[d] if old == PENDING else self.running[d]).remove(w)
        if status == RUNNING:
            self.running[d].add(w)
            if not self.wl_assigned[d][j]:
                self.wl_assigned[d][j] = 1
                node = self._ni(dc, w % self.spec.nodes_per_dc + 1)
                self.node_workloads[node] += 1
                self._change("nw", node, 1)
                self._change("as", dc, w)
        self.wl_counts[self._wc(dc, old)] -= 1
        self.wl_counts[self._wc(dc, status)] += 1
        self._change("wc", self._wc(dc, old), -1)
        self._change("wc", self._wc(dc, status), 1)
        self._change("ws", dc, w, status)
        self.wl_status[d][j], self.wl_nonce[d][j], self.wl_from[d][j] = status, self._new_nonce(), block.number
        rows += self._insert(block, self._workload_rows(dc, w))
        return rows + self._event(block, dc, False, w, event, WORKLOAD_STATUSES[old], WORKLOAD_STATUSES[status])
