"""A spool kept for the next cell. The blocks after a state are a pure function of the state's model, the
workload, the engine's prepared form and the code that makes them: cells that share all four (a walk's
options and memory limits over one state) would generate the same spool, 40 s at 1x here. The first keeps
its spool beside the state with the generator as it left it; a later one copies the file into its data
directory (written by the feed, so its pages are charged outside the limit, as a spool it generated) and
goes on generating from there. The cache goes with its state (dropped, or released once taken).
A cell whose readers check answers against the feed's log (dc_check) generates its own."""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import pickle
import shutil
import time
from pathlib import Path

from harness.feed.protocol import SPOOL_NAME, LoadArgs, Spooled

SPOOLS_DIR = "spools"
_MODEL, _RNG, _DONE = "model.bin", "key_rng.pickle", "spooled.json"
# A spool is kept only where it leaves the disk this many times its size free: never the cell's room.
KEEP_FREE_FACTOR = 8


def cache_dir(spec, load: LoadArgs | None, prep: tuple, want: int, key_every: int) -> Path | None:
    """Where this cell's spool is kept, or None where it cannot be shared (no state, a checked read log)."""
    engine = prep[0]
    if not engine or not load or not load.model_path or load.answer_log or want <= 0:
        return None
    model = Path(load.model_path)
    if not model.is_file():
        return None
    from harness.provenance import code_digest
    st = model.stat()
    ident = {"spec": dataclasses.asdict(spec), "model": [str(model.resolve()), st.st_size, st.st_mtime_ns],
             "age_blocks": load.age_blocks, "prep": list(prep), "blocks": want, "key_every": key_every,
             "code": code_digest(engine)}
    key = hashlib.sha256(json.dumps(ident, sort_keys=True, default=str).encode()).hexdigest()[:16]
    return model.parent / SPOOLS_DIR / key


def reuse(cache: Path | None, path: Path, stream) -> Spooled | None:
    """The kept spool copied to `path` and the stream moved past it; None where none is kept."""
    if cache is None or not (cache / _DONE).is_file():
        return None
    t0 = time.monotonic()
    meta = json.loads((cache / _DONE).read_text())
    _copy_synced(cache / SPOOL_NAME, path)
    stream.gen.restore(cache / _MODEL)
    stream.key_rng.setstate(pickle.loads((cache / _RNG).read_bytes()))
    stream.sent = meta["blocks"]
    return Spooled(path.name, meta["blocks"], meta["bytes"], round(time.monotonic() - t0, 3), reused=True)


def keep(cache: Path | None, path: Path, stream, sp: Spooled) -> None:
    """This cell's spool and the generator after it, for the next cell; best effort (a full disk keeps none)."""
    if cache is None or shutil.disk_usage(cache.parent.parent).free < KEEP_FREE_FACTOR * sp.bytes:
        return
    partial = cache.with_name(cache.name + ".partial")
    try:
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        stream.gen.save(partial / _MODEL)
        (partial / _RNG).write_bytes(pickle.dumps(stream.key_rng.getstate()))
        _copy_synced(path, partial / SPOOL_NAME)
        (partial / _DONE).write_text(json.dumps({"blocks": sp.blocks, "bytes": sp.bytes}))
        partial.rename(cache)           # whole or absent: a stop halfway leaves a .partial, never reused
    except OSError:
        shutil.rmtree(partial, ignore_errors=True)


def _copy_synced(src: Path, dst: Path) -> None:
    shutil.copyfile(src, dst)
    with open(dst, "rb+") as f:
        os.fdatasync(f.fileno())
