"""Read parameters drawn from the live state. The feed (outside the memory limit) ships, every few blocks,
a sample of live entities, each as the parameters it offers (`entity_params`); a reader draws one entity
among those offering everything its query needs, so a query that finds nothing is one the data says
should have found something (an entity changed since the sample, or an engine that lost it): `empty`."""
from __future__ import annotations

import random

from harness.reads import dc_check
from harness.workload.entity import owner_address, version_rows
from harness.workload.expected import LiveModel

READ_SAMPLE = 512             # live entities the feed ships as read parameters
TIME_RANGE_BLOCKS = 1000      # block_end = block + this: a window that holds the entity's own version


def entity_params(model: LiveModel, eid: int) -> dict:
    st = model.entity(eid)
    rows = version_rows(st, model.shape, model.seed, model.variant)
    strings = {r[-2]: r[-1] for r in rows["string_attributes"]}
    numerics = {r[-2]: r[-1] for r in rows["numeric_attributes"]}
    out = {"key": st.key, "block": st.from_block, "block_end": st.from_block + TIME_RANGE_BLOCKS,
           "creator": owner_address(st.creator)}
    for field, attr in (("type", "type"), ("status", "status"), ("proposal", "proposalKey"),
                        ("chunk", "nextBlockId")):
        if attr in strings:
            out[field] = strings[attr]
    if "allocatable_gpu" in numerics:
        out["gpu_below"] = numerics["allocatable_gpu"] - 1
    generic = next((k for k in strings if k.startswith("attr_")), None)
    if generic:
        out["attr"], out["attr_value"] = generic, strings[generic]
    return out


def sample_rng(seed: int) -> random.Random:
    """The feed's stream for read samples: its own, so the workload's draws are untouched."""
    return random.Random(seed ^ 0x5EED)


def sample(model: LiveModel, rng: random.Random, n: int) -> list[dict]:
    ids = rng.sample(model.live_ids, min(n, len(model.live_ids)))
    return [entity_params(model, i) for i in ids]


class Draw:
    """Per query, the parameter tuples of every sampled entity that offers what it needs, built when a new
    sample arrives so that a draw is one random index (the readers' per-query cost). A checked DC query
    draws from the DC model's ids instead (dc: data centres, nodes per DC), and keeps the draw's ints in
    `dc_ints` for the answer's record."""

    def __init__(self, queries, dc: tuple[int, int] | None = None) -> None:
        self.queries, self.dc = queries, dc
        self.dc_ints: tuple[int, ...] = ()
        self._sample: list[dict] | None = None
        # a query that draws nothing from an entity has one binding, ready before any sample
        self._eligible: list[list[list[tuple]]] = [[] if q.drawn else [self._bind(q, {})] for q in queries]

    def refresh(self, sample: list[dict] | None) -> None:
        if sample is None or sample is self._sample:
            return
        self._eligible = [[] if q.check else [self._bind(q, e) for e in sample if q.drawn <= e.keys()] if q.drawn
                          else [self._bind(q, {})] for q in self.queries]
        self._sample = sample

    @staticmethod
    def _bind(q, entity: dict) -> list[tuple]:
        e = {**entity, **q.args}
        return [tuple(e[p] for p in s.params) for s in q.statements]

    def params(self, i: int, rng: random.Random) -> list[tuple] | None:
        """The statements' parameter tuples for query i, or None when no sampled entity offers them."""
        q = self.queries[i]
        if q.check:
            if self.dc is None:
                return None
            named, self.dc_ints = dc_check.draw(rng, *self.dc)
            return self._bind(q, named)
        pool = self._eligible[i]
        if not pool:
            return None
        # random() rather than randrange(): a third of the cost, on every query of every reader
        return pool[int(rng.random() * len(pool))] if len(pool) > 1 else pool[0]
