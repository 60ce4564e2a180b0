"""The Data Center model's seed (dc.py's DcModel takes it in): every DC's nodes and workloads as a load leaves
them, in the model alone for a state build or as load blocks for an organic load, and the load's history passes
(load.history_versions), each revising every seed entity once."""
from __future__ import annotations

from harness.workload.block import Block
from harness.workload.dc_tables import WORKLOADS_PER_NODE, dc_key, node_attrs, node_id, workload_attrs, workload_id


class DcSeed:
    """Methods of DcModel: they read and set its arrays."""

    # ---- the seed ------------------------------------------------------------------------------------
    def _seed_order(self):
        """(kind, dc, number) of every seed entity in load order: each DC's nodes, then its workloads."""
        for dc in range(1, self.spec.data_centres + 1):
            for n in range(1, self.spec.nodes_per_dc + 1):
                yield "node", dc, n
            for w in range(1, self.spec.nodes_per_dc * WORKLOADS_PER_NODE + 1):
                yield "workload", dc, w

    def load_seed(self, first_block: int, per_block: int, history_versions: int = 0) -> int:
        """Every DC's nodes and workloads as a load leaves them, per_block entities to a block from
        first_block + 1, then history_versions passes revising each once (revise()), into the model only (no
        row, no digest): a state build makes the rows apart (rows.py), an organic load through seed_blocks.
        Returns the last block number."""
        self._seeded_as = (first_block, per_block, history_versions, self._nonce)
        entities, k = self.spec.entities, 0
        passes_blocks = history_versions * -(-entities // per_block)
        for kind, dc, number in self._seed_order():
            b = first_block + 1 + k // per_block
            nonce = self._nonce + (history_versions - 1) * entities + k + 1 if history_versions else 0
            if kind == "node":
                a, i = node_attrs(self.seed, dc, number), self._ni(dc, number)
                self.node_status[i], self.node_nonce[i] = a.seed_status, nonce
                self.node_from[i], self.node_created[i] = b + passes_blocks, b
                if history_versions:         # a revision keeps the status: the version before says the same
                    self.node_prev_status[i] = a.seed_status
                    self.node_prev_from[i] = b + passes_blocks - passes_blocks // history_versions
                self.node_counts[self._nc(dc, a.seed_status, a)] += 1
            else:
                w = self._append_workload(dc, workload_attrs(self.seed, dc, number).seed_status, True, b)
                self.wl_nonce[dc - 1][w - 1], self.wl_from[dc - 1][w - 1] = nonce, b + passes_blocks
            k += 1
        self._nonce += history_versions * entities
        return first_block + -(-k // per_block) + passes_blocks

    def seed_blocks(self, new_block, per_block: int, history_versions: int = 0):
        """The seed as load blocks (an organic load): new_block() makes the next one; the model is seeded
        first, then each entity's rows go into its block and the digest; then the history passes."""
        block = new_block()
        self.load_seed(block.number - 1, per_block)
        for k, (kind, dc, number) in enumerate(self._seed_order()):
            if k and k % per_block == 0:
                yield block
                block = new_block()
            block.rows_written += self._insert(block, self.seed_rows(kind, dc, number))
            block.ops["dc_seed"] += 1
        yield block
        for _ in range(history_versions):
            for k, (kind, dc, number) in enumerate(self._seed_order()):
                if k % per_block == 0:
                    if k:
                        yield block
                    block = new_block()
                block.rows_written += self.revise(block, kind, dc, number)
                block.ops["dc_revise"] += 1
            yield block

    def revise(self, block: Block, kind: str, dc: int, number: int) -> int:
        """A seed entity's next version in a history pass: the same status and assignment, a new payload."""
        rows = self._terminate(block, self.seed_rows(kind, dc, number))
        if kind == "node":
            i = self._ni(dc, number)
            self.node_prev_status[i], self.node_prev_from[i] = self.node_status[i], self.node_from[i]
            self.node_nonce[i], self.node_from[i] = self._new_nonce(), block.number
        else:
            self.wl_nonce[dc - 1][number - 1], self.wl_from[dc - 1][number - 1] = self._new_nonce(), block.number
        return rows + self._insert(block, self.seed_rows(kind, dc, number))

    # ---- a state build's entities --------------------------------------------------------------------
    def seed_entities(self) -> list[tuple]:
        """(key, kind, dc, number, block, versions) of every seed entity, as load_seed() placed them: each version's
        (from_block, nonce), its seed first; rows.py builds their rows apart (seed_entity_rows), in key order."""
        first_block, per_block, passes, nonce0 = self._seeded_as
        entities = self.spec.entities
        seed_blocks = -(-entities // per_block)
        return [(dc_key(self.seed, node_id(dc, n) if kind == "node" else workload_id(dc, n)), kind, dc, n,
                 first_block + 1 + k // per_block,
                 tuple((first_block + 1 + k // per_block + p * seed_blocks,
                        nonce0 + (p - 1) * entities + k + 1 if p else 0) for p in range(passes + 1)))
                for k, (kind, dc, n) in enumerate(self._seed_order())]

    def seed_rows(self, kind: str, dc: int, number: int) -> dict[str, list[tuple]]:
        return self._node_rows(dc, number) if kind == "node" else self._workload_rows(dc, number)
