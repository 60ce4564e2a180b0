"""The load's rows, generated in parallel worker processes and handed out in primary-key order, with the
digest of every table: what a row-by-row load of the same workload would leave, in the order a B-tree
is cheapest to build in.

Entity keys are hashes, so ordering the entities by key orders every table by its primary key (each
primary key starts with entity_key; within an entity at load, from_block is one value and attribute
names are unique; an entity's ended versions, from the load's history passes, sort by their primary key).
Workers build whole entities (entity.version_rows, as the model does) for chunks of that order and convert them
for the engine; the parent only merges digests and passes chunks on."""
from __future__ import annotations

import functools
import multiprocessing as mp
import operator
import os
import time
from dataclasses import dataclass
from typing import Iterator

from harness import registry
from harness.workload.dc import DcModel
from harness.workload.dc_tables import seed_entity_rows
from harness.workload.digest import table_hasher
from harness.workload import schema
from harness.workload.entity import EntityState, entity_key, version_rows
from harness.workload.expected import LiveModel, LoadHistory
from harness.workload.shapes import SHAPES

CHUNK_ENTITIES = 2000        # ~50K mendoza rows per chunk between processes
_worker: dict = {}


@dataclass
class Chunk:
    entities: int
    row_count: int
    prepared: object                     # the engine's prepare_bulk of the rows (per table, primary-key order)
    digests: dict[str, tuple[int, int, int]]   # table -> (hash sum, count, logical bytes)


def _init(shape: str, seed: int, variant: str, engine: str | None, nodes_per_dc: int | None,
          history: LoadHistory | None) -> None:
    prepare = registry.engine_class(engine)().prepare_bulk if engine else lambda variant, rows: rows
    _worker.update(shape=SHAPES[shape], seed=seed, variant=variant, prepare=prepare, nodes_per_dc=nodes_per_dc,
                   history=history if history is not None and history.versions else None)
    try:
        os.nice(5)      # the engine's writer (the parent) comes first when the cores are short
    except OSError:
        pass


def _build_chunk(entities: list[tuple]) -> Chunk:
    shape, seed, variant = _worker["shape"], _worker["seed"], _worker["variant"]
    rows: dict[str, list[tuple]] = {}
    for key, *e in entities:
        if e[0] == "m":
            eid, from_block, names_nonce, value_nonce, owner, creator, expiration, created_at = e[1:]
            st = EntityState(eid, key, from_block, names_nonce, value_nonce, owner, expiration)
            st.creator, st.created_at = creator, created_at
            versions = version_rows(st, shape, seed, variant)
            if _worker["history"] is not None:
                _add_ended(versions, st, _worker["history"].ended(eid), shape, seed, variant)
        else:       # a DC seed entity: (kind, dc, number, block, its versions' (from_block, nonce))
            kind, dc, number, created, spans = e
            versions = seed_entity_rows(seed, _worker["nodes_per_dc"], variant, kind, dc, number, created, *spans[-1])
            for (from_block, nonce), (to_block, _) in zip(spans, spans[1:]):
                _place_ended(versions, seed_entity_rows(seed, _worker["nodes_per_dc"], variant, kind, dc, number,
                                                        created, from_block, nonce, to_block), to_block, variant)
        for table, rs in versions.items():      # one entity's rows, by primary key
            rows.setdefault(table, []).extend(sorted(rs, key=_pk_order(variant, table)))
    digests = {}
    for table, rs in rows.items():
        total = nbytes = 0
        hasher = table_hasher(variant, table)
        for r in rs:
            h, n = hasher(r)
            total += h
            nbytes += n
        digests[table] = (total, len(rs), nbytes)      # TableDigest.merge reduces the sum
    return Chunk(len(entities), sum(len(r) for r in rows.values()), _worker["prepare"](variant, rows), digests)


def _add_ended(versions: dict[str, list[tuple]], st: EntityState, ended: list[tuple[int, int, int]], shape,
               seed: int, variant: str) -> None:
    """An entity's ended versions (the load's history passes) beside its current one: in place under bitemporal,
    in the history tables under current_history, none under simple (it keeps no history)."""
    for from_block, nonce, to_block in ended:
        old = EntityState(st.id, st.key, from_block, nonce, nonce, st.owner, st.expiration)
        old.creator, old.created_at = st.creator, st.created_at
        _place_ended(versions, version_rows(old, shape, seed, variant, to_block), to_block, variant)


def _place_ended(versions: dict[str, list[tuple]], ended: dict[str, list[tuple]], to_block: int, variant: str) -> None:
    """An ended version's rows (ending at to_block) where the variant keeps them: in place under bitemporal, in
    the history tables under current_history, nowhere under simple."""
    apart = schema.keeps_history_apart(variant)
    for table, rs in ended.items():
        if apart:
            versions.setdefault(table + schema.HISTORY, []).extend(schema.history_row(r, to_block) for r in rs)
        elif variant == "bitemporal":
            versions[table].extend(rs)


@functools.lru_cache(maxsize=None)
def _pk_order(variant: str, table: str):
    names = schema.columns(variant, table)
    return operator.itemgetter(*(names.index(c) for c in schema.primary_key(variant, table)))


def _entities_by_key(model: LiveModel, dc: DcModel | None) -> list[tuple]:
    """(key, "m", mendoza fields...) per live entity, and (key, DC kind, dc, number, block) per DC seed
    entity, by key."""
    c = model.cols
    out = [(entity_key(model.seed, eid), "m", eid, c["from_block"][eid], c["names_nonce"][eid], c["value_nonce"][eid],
            c["owner"][eid], c["creator"][eid], c["expiration"][eid], c["created_at"][eid]) for eid in model.live_ids]
    if dc is not None:
        out += dc.seed_entities()
    out.sort(key=lambda e: e[0])
    return out


def sorted_chunks(model: LiveModel, shape: str, engine: str | None, workers: int | None = None,
                  dc: DcModel | None = None) -> Iterator[Chunk]:
    """Every live entity's rows (and the DC model's seed, as seeded), chunk by chunk in primary-key order,
    converted by the engine's prepare_bulk in the workers (raw rows without an engine); digests merge into
    model.digest as the chunks are handed out (complete once the iterator is exhausted)."""
    todo = _entities_by_key(model, dc)
    parts = [todo[i:i + CHUNK_ENTITIES] for i in range(0, len(todo), CHUNK_ENTITIES)]
    del todo
    workers = workers or max(1, len(os.sched_getaffinity(0)))
    ctx = mp.get_context("spawn")       # the parent may hold an engine's threads
    with ctx.Pool(workers, initializer=_init, initargs=(shape, model.seed, model.variant, engine,
                                                      dc.spec.nodes_per_dc if dc else None, model.history)) as pool:
        for chunk in pool.imap(_build_chunk, parts):
            for table, parts in chunk.digests.items():
                model.digest.table(table).merge(*parts)
            yield chunk


def generator_rate(model: LiveModel, shape: str, workers: int | None = None) -> tuple[int, float]:
    """(rows, seconds) to generate every chunk with nothing consuming them: what the generator alone reaches."""
    t0, rows = time.perf_counter(), 0
    saved = model.digest
    model.digest = type(saved)(variant=saved.variant)
    try:
        for chunk in sorted_chunks(model, shape, None, workers):
            rows += chunk.row_count
    finally:
        model.digest = saved
    return rows, time.perf_counter() - t0
