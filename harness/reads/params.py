"""Read parameters drawn from the live state. The feed (outside the memory limit) ships, every few blocks,
a sample of live entities, each as the parameters it offers (`entity_params`); a reader draws one entity
among those offering everything its query needs, so a query that finds nothing is one the data says
should have found something (an entity changed since the sample, or an engine that lost it): `empty`."""
from __future__ import annotations

import random

from harness.workload.entity import owner_address, version_rows
from harness.workload.model import LiveModel

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


def sample(model: LiveModel, rng: random.Random, n: int) -> list[dict]:
    ids = rng.sample(model.live_ids, min(n, len(model.live_ids)))
    return [entity_params(model, i) for i in ids]


class Draw:
    """Per query, the sampled entities that offer what it needs; rebuilt when a new sample arrives."""

    def __init__(self, queries) -> None:
        self.queries = queries
        self._sample: list[dict] | None = None
        self._eligible: list[list[dict]] = [[] for _ in queries]

    def refresh(self, sample: list[dict] | None) -> None:
        if sample is None or sample is self._sample:
            return
        self._eligible = [[e for e in sample if q.drawn <= e.keys()] for q in self.queries]
        self._sample = sample

    def params(self, i: int, rng: random.Random) -> list[tuple] | None:
        """The statements' parameter tuples for query i, or None when no sampled entity offers them."""
        q, pool = self.queries[i], self._eligible[i]
        if q.drawn and not pool:
            return None
        e = {**(pool[rng.randrange(len(pool))] if pool else {}), **q.args}
        return [tuple(e[p] for p in s.params) for s in q.statements]
