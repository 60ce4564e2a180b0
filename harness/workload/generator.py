"""Seeded, deterministic stream of blocks (arkiv semantics) built by mutating the LiveModel."""
from __future__ import annotations

import bisect
import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from harness.workload.block import Block
from harness.workload import dc_file
from harness.workload.dc import DcModel
from harness.workload.dc_tables import DcSpec
from harness.workload.expected import LONG_LIVED_BTL, LiveModel, LoadHistory
from harness.workload.shapes import SHAPES

OPS = ("create", "update", "delete", "extend", "change_owner")
DC_ROWS_PER_ENTITY = 17          # a node's or a workload's rows (dc.py): the DC seed's entities per load block


@dataclass(frozen=True)
class WorkloadSpec:
    shape: str
    seed: int
    variant: str                      # "bitemporal" | "simple"
    rows_per_block: int               # row budget: rows inserted + terminated + deleted
    op_weights: dict[str, float]      # over OPS; expiries come from $expiration, not from weights
    reorg_fraction: float             # share of blocks that are reorgs (delete + re-insert same keys)
    ephemeral_btl_blocks: tuple[int, int]
    extend_blocks: tuple[int, int] = (10, 100)
    long_lived_fraction: float | None = None
    dc: DcSpec | None = None          # the Data Center model beside mendoza's entities (dc.py)
    history_versions: int = 0         # the load's passes revising every entity: ended versions each one carries


class BlockGenerator:
    def __init__(self, spec: WorkloadSpec):
        self.spec = spec
        self.shape = SHAPES[spec.shape]
        self.model = LiveModel(self.shape, spec.seed, spec.variant, spec.long_lived_fraction)
        self.dc = DcModel(spec.dc, spec.seed, spec.variant, self.model.digest) if spec.dc else None
        self.block_number = 0
        ops = [(op, w) for op, w in spec.op_weights.items() if w > 0]
        self._ops = [op for op, _ in ops]
        self._cum = list(itertools.accumulate(w for _, w in ops))

    def _new_block(self, kind: str) -> Block:
        self.block_number += 1
        return Block(number=self.block_number, kind=kind, variant=self.spec.variant)

    def _dc_history_versions(self) -> int:
        own = self.spec.dc.history_versions if self.spec.dc else None
        return self.spec.history_versions if own is None else own

    def _dc_per_block(self, batch_rows: int) -> int:
        return max(1, batch_rows // DC_ROWS_PER_ENTITY)

    def save(self, path: Path) -> None:
        """The models beside a state (harness/state): mendoza's at `path`, the DC model's next to it."""
        self.model.save(path, self.block_number)
        if self.dc:
            dc_file.save(self.dc, Path(path).with_name(dc_file.DC_MODEL_FILE))

    def restore(self, path: Path) -> None:
        spec = self.spec
        self.model, self.block_number = LiveModel.restore(Path(path), self.shape, spec.seed, spec.variant,
                                                          spec.long_lived_fraction)
        if self.dc:
            self.dc.digest = self.model.digest
            dc_file.restore(self.dc, Path(path).with_name(dc_file.DC_MODEL_FILE))

    def load_blocks(self, entities: int, batch_rows: int, expiry_spread_blocks: int) -> Iterator[Block]:
        """The blocks that build the starting database: creates, then history_versions passes revising every
        entity. Ephemeral entities expire uniformly over the `expiry_spread_blocks` after the load, so the
        measured phase sees a steady trickle of expiries rather than all of them at once. The DC model's seed
        follows mendoza's entities."""
        yield from self._mendoza_load_blocks(entities, batch_rows, expiry_spread_blocks)
        if self.dc:
            yield from self.dc.seed_blocks(lambda: self._new_block("load"), self._dc_per_block(batch_rows),
                                           self._dc_history_versions())

    def _mendoza_load_blocks(self, entities: int, batch_rows: int, expiry_spread_blocks: int) -> Iterator[Block]:
        m = self.model
        per_block = max(1, batch_rows // self.shape.rows_per_entity)
        first_id = m.next_id
        load_end = self.block_number + -(-entities // per_block) * (1 + self.spec.history_versions)
        made = 0
        while made < entities:
            block = self._new_block("load")
            for _ in range(min(per_block, entities - made)):
                btl = LONG_LIVED_BTL if m.rng.random() < m.long_lived_fraction else \
                    load_end + m.rng.randint(1, max(1, expiry_spread_blocks)) - block.number
                block.rows_written += m.create(block, btl)
                block.ops["create"] += 1
                made += 1
            yield block
        yield from self._history_blocks(first_id, entities, per_block)

    def _history_blocks(self, first_id: int, entities: int, per_block: int) -> Iterator[Block]:
        """history_versions passes after the creates, each revising every entity once, in creation order, as
        many to a block as the creates were: each revision ends the current version (into the history tables
        under current_history, in place under bitemporal) and inserts the next, with new values and payload."""
        m = self.model
        for _ in range(self.spec.history_versions):
            for start in range(0, entities, per_block):
                block = self._new_block("load")
                for eid in range(first_id + start, first_id + min(entities, start + per_block)):
                    block.rows_written += m.revise(block, m.entity(eid))
                    block.ops["update"] += 1
                yield block

    def load_model(self, entities: int, batch_rows: int, expiry_spread_blocks: int) -> None:
        """The model as load_blocks(...) leaves it, with the same draws in the same order, but no row built
        and no digest taken: a state build (harness/state) generates the rows apart, sorted, and sets the
        digest from them."""
        m = self.model
        per_block = max(1, batch_rows // self.shape.rows_per_entity)
        first, first_id, first_nonce = self.block_number, m.next_id, m.nonce + 1
        creates = -(-entities // per_block)
        load_end = first + creates * (1 + self.spec.history_versions)
        for made in range(entities):
            number = first + 1 + made // per_block
            btl = LONG_LIVED_BTL if m.rng.random() < m.long_lived_fraction else \
                load_end + m.rng.randint(1, max(1, expiry_spread_blocks)) - number
            m._track(m.new_entity(number, btl))
        m.history = LoadHistory(first, first_id, entities, per_block, self.spec.history_versions, first_nonce)
        for p in range(1, self.spec.history_versions + 1):
            for made in range(entities):
                m.revise_untracked(first_id + made, first + p * creates + 1 + made // per_block)
        self.block_number = load_end
        if self.dc:
            self.block_number = self.dc.load_seed(self.block_number, self._dc_per_block(batch_rows),
                                                  self._dc_history_versions())

    def next_block(self) -> Block:
        m, spec = self.model, self.spec
        if spec.reorg_fraction > 0 and m.live_ids and m.rng.random() < spec.reorg_fraction:
            return self._reorg_block()
        block = self._new_block("ops")
        touched: set[int] = set()
        for st in m.due_expiries(block.number):      # mandatory work first
            touched.add(st.id)
            block.rows_written += m.delete(block, st)
            block.ops["expire"] += 1
        if self.dc:
            block.rows_written += self.dc.expire(block)
            while block.rows_written < spec.rows_per_block * spec.dc.write_share:
                block.rows_written += self.dc.next_event(block)
            self.dc.end_block(block.number)
            if spec.dc.write_share >= 1:
                return block
        lo, hi = spec.ephemeral_btl_blocks
        while block.rows_written < spec.rows_per_block and self._ops:
            op = self._ops[bisect.bisect_right(self._cum, m.rng.random() * self._cum[-1])]
            st = None if op == "create" else m.random_live(touched)
            if st is None:
                op = "create"
                block.rows_written += m.create(block, m.btl(lo, hi))
                touched.add(m.live_ids[-1])          # the entity just created
            else:
                touched.add(st.id)
                if op == "update":
                    block.rows_written += m.update(block, st, m.rng.randint(lo, hi))
                elif op == "delete":
                    block.rows_written += m.delete(block, st)
                elif op == "extend":
                    block.rows_written += m.extend(block, st, m.rng.randint(*spec.extend_blocks))
                else:
                    block.rows_written += m.change_owner(block, st)
            block.ops[op] += 1
        return block

    def _reorg_block(self) -> Block:
        """DELETE rows by existing primary keys + INSERT the same keys with new values (the reference's
        validation test). rows_per_block rows are deleted and as many re-inserted."""
        m = self.model
        block = self._new_block("reorg")
        touched: set[int] = set()
        deleted = 0
        while deleted < self.spec.rows_per_block:
            st = m.random_live(touched)
            if st is None:
                break
            touched.add(st.id)
            n = m.reorg(block, st)
            deleted += n // 2
            block.rows_written += n
            block.ops["reorg"] += 1
        return block
