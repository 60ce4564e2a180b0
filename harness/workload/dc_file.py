"""A DC model in a compact file beside a state's model.bin (DC_MODEL_FILE): its arrays as raw machine values
after one JSON header (counts, events, the generator's RNG), so a cell restores a 621K-entity model in a
moment instead of replaying its load."""
from __future__ import annotations

import json
from array import array
from pathlib import Path

from harness.workload.dc import DcModel, IdSet
from harness.workload.dc_tables import PENDING, RUNNING

DC_MODEL_FORMAT = 1
DC_MODEL_FILE = "dc-model.bin"   # beside a state's model.bin


def save(model: DcModel, path: Path) -> None:
    blobs = {"node_status": model.node_status, "node_nonce": model.node_nonce, "node_from": model.node_from,
             "node_created": model.node_created,
             "node_prev_status": model.node_prev_status, "node_prev_from": model.node_prev_from,
             "node_workloads": model.node_workloads, "node_counts": model.node_counts, "wl_counts": model.wl_counts}
    for name in ("wl_status", "wl_assigned", "wl_nonce", "wl_from", "wl_created"):
        for d, a in enumerate(getattr(model, name)):
            blobs[f"{name}.{d}"] = a
    rng = model.rng.getstate()
    header = {"format": DC_MODEL_FORMAT, "spec": [model.spec.data_centres, model.spec.fraction],
              "next_event": model._next_event, "nonce": model._nonce, "expired_through": model._expired_through,
              "events": {str(k): v for k, v in model.events.items()},
              "rng": [rng[0], list(rng[1]), rng[2]],
              "arrays": {name: [a.typecode, len(a)] for name, a in blobs.items()}}
    with open(path, "wb") as f:
        f.write(json.dumps(header).encode() + b"\n")
        for a in blobs.values():
            a.tofile(f)

def restore(model: DcModel, path: Path) -> None:
    """The model as `save` left it (the spec, seed and variant are the caller's, checked)."""
    with open(path, "rb") as f:
        header = json.loads(f.readline())
        if header.get("format") != DC_MODEL_FORMAT:
            raise ValueError(f"{path}: DC model format {header.get('format')}, this harness reads {DC_MODEL_FORMAT}")
        if header["spec"] != [model.spec.data_centres, model.spec.fraction]:
            raise ValueError(f"{path}: a model of {header['spec']} (DCs, fraction), not "
                             f"{[model.spec.data_centres, model.spec.fraction]}")
        for name, (code, n) in header["arrays"].items():
            a = array(code)
            a.fromfile(f, n)
            base, _, d = name.partition(".")
            if d:
                getattr(model, base)[int(d)] = a
            else:
                setattr(model, name, a)
    model._next_event, model._nonce = header["next_event"], header["nonce"]
    model._expired_through = header["expired_through"]
    model.events = {int(k): tuple(v) for k, v in header["events"].items()}
    model.expiring = {}
    for seq, ev in model.events.items():
        model.expiring.setdefault(ev[-1], []).append(seq)
    version, internal, gauss = header["rng"]
    model.rng.setstate((version, tuple(internal), gauss))
    for d in range(model.spec.data_centres):
        model.pending[d], model.running[d] = IdSet(), IdSet()
        for j, s in enumerate(model.wl_status[d]):
            if s in (PENDING, RUNNING):
                (model.pending[d] if s == PENDING else model.running[d]).add(j + 1)
