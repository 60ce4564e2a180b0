"""The application attributes the reference's read mixes ask about (docs/reference.md; its "Realistic Read Mix
Proposals"): what an entity is (`type`, fixed for its life), its `status`, a vote's `proposalKey`, a
chunk's `nextBlockId` and a node's numeric `allocatable_gpu`. They take the first of a shape's user
attribute slots (its counts do not change) beside the 500 generic names; values are skewed, a few hot
and a long tail, so the mixes' queries hit real rows at every scale."""
from __future__ import annotations

import bisect
import hashlib
import json

# (value, weight): the first values are the hot ones
TYPES = (("sensor", 30), ("chunk", 22), ("vote", 20), ("workload", 12), ("node", 8), ("proposal", 4),
         ("document", 3), ("profile", 1))
STATUS = {
    "sensor": (("active", 90), ("stale", 10)),
    "chunk": (("complete", 97), ("pending", 3)),
    "vote": (("cast", 95), ("revoked", 5)),
    "workload": (("completed", 45), ("running", 30), ("pending", 20), ("failed", 5)),
    "node": (("active", 70), ("offline", 20), ("draining", 10)),
    "proposal": (("closed", 60), ("active", 30), ("pending", 10)),
    "document": (("published", 80), ("draft", 20)),
    "profile": (("active", 95), ("suspended", 5)),
}
GPUS = ((0, 50), (1, 20), (2, 12), (4, 10), (8, 8))
PROPOSALS = 4096            # proposalKey values: proposal-0000 (hottest) .. proposal-4095: (u16 ** 2) >> 20
APP_BYTES = 6               # value-stream bytes a version spends on these: status, proposal, gpu (2 each)
STRING_KEYS = ("type", "status", "proposalKey", "nextBlockId")
NUMERIC_KEYS = ("allocatable_gpu",)


def _picker(weighted):
    """A 16-bit draw -> a value, in proportion to the weights."""
    values = [v for v, _ in weighted]
    total = sum(w for _, w in weighted)
    cum, acc = [], 0
    for _, w in weighted:
        acc += w
        cum.append(acc * 65536 // total)
    return lambda u16: values[bisect.bisect_right(cum, u16)]


_type_of = _picker(TYPES)
_status_of = {t: _picker(s) for t, s in STATUS.items()}
_gpus_of = _picker(GPUS)


def entity_type(key: bytes) -> str:
    """From the key's last bytes: fixed for the entity's life, and unrelated to where its key sorts (the
    first bytes), so one type's rows are not clustered in the primary key's order."""
    return _type_of(key[-2] << 8 | key[-1])


def app_attributes(entity_id: int, key: bytes, app: bytes) -> tuple[list[tuple[str, str]], list[tuple[str, int]]]:
    """The version's application attributes, most important first: (strings, numerics). `app` is the
    version's APP_BYTES of its value stream."""
    t = entity_type(key)
    strings = [("type", t), ("status", _status_of[t](app[0] << 8 | app[1]))]
    numerics = []
    if t == "vote":             # quadratic skew: proposal-0000 is the hottest, a long tail behind it
        u = app[2] << 8 | app[3]
        strings.append(("proposalKey", f"proposal-{(u * u) >> 20:04d}"))
    elif t == "chunk":          # chunks chain by entity id
        strings.append(("nextBlockId", f"chunk-{entity_id + 1}"))
    elif t == "node":
        numerics.append(("allocatable_gpu", _gpus_of(app[4] << 8 | app[5])))
    return strings, numerics


def digest() -> str:
    """Names the vocabulary in a state's identity: any change to it makes another state."""
    spec = [TYPES, STATUS, GPUS, PROPOSALS, APP_BYTES, STRING_KEYS, NUMERIC_KEYS]
    return hashlib.sha256(json.dumps(spec).encode()).hexdigest()[:12]
