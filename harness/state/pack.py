"""A state kept packed where its full copy does not fit beside it: each file of its data compressed (zstd, level 1,
every core) into data.zst/ in place of data/, and unpacked into each cell that clones it.

Why: on a disk without reflinks a cell's clone is a full copy. At 5x SQLite's state is ~52 GiB: the state and its
copy do not fit this machine's disk, so a knee's steps each rebuilt their state (~18 min a step). The copy-on-write
store (cow_store) fits them, but a cell's first write to each shared page is a copy-on-write there, and its
checkpoints and fsyncs measured slower than ext4's (make store-bias, 12-07). Unpacked, a cell's data is a full copy
on the disk's own filesystem, as a clone on ext4 is: no bias to read its figures through. The state stays, packed,
for the next cell; a cell unpacks 10 GiB in 20 s where a full copy takes 16 (12-07). SQLite's 1x state packed to
0.51 of its bytes (docs/states.md): too little for its 5x on this disk, enough where a state is between about 1/2
and 2/3 of the free disk."""
from __future__ import annotations

import json
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from harness.platform.pagecache import evict
from harness.state.store import DATA, PACKED, PACKED_RECORD, is_packed, require_free, tree_bytes
from harness.state.tree import copy_tree
SUFFIX = ".zst"
LEVEL = 1                       # the fastest: packing is on a step's path once, unpacking on every step's


@dataclass(frozen=True)
class Packed:
    data_bytes: int
    packed_bytes: int
    pack_s: float

    def says(self) -> str:
        return (f"packed {self.data_bytes / 2**30:.2f} GiB into {self.packed_bytes / 2**30:.2f} GiB "
                f"({self.data_bytes / max(1, self.packed_bytes):.2f}x) in {self.pack_s:.0f} s")


def record(state_dir: Path) -> Packed | None:
    f = state_dir / PACKED_RECORD
    return Packed(**json.loads(f.read_text())) if f.is_file() and is_packed(state_dir) else None


def data_of(src: Path) -> Path | None:
    """A state's packed data, given the data directory a clone was asked for (state/data): None where it is there."""
    return src.parent / PACKED if not src.exists() and is_packed(src.parent) else None


def _zstd(args: list[str], what: str) -> None:
    r = subprocess.run(["zstd", "-q", "-f", *args], capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"{what}: zstd exited {r.returncode}: {r.stderr.strip()[-300:]}")


def pack(state_dir: Path) -> Packed:
    """state_dir/data packed into state_dir/data.zst, then removed. Needs room for the packed files beside the
    data (at most its size: a file zstd cannot shrink is stored, not grown beyond a frame's header)."""
    src, part = state_dir / DATA, state_dir / (PACKED + ".partial")
    shutil.rmtree(part, ignore_errors=True)
    data_bytes = tree_bytes(src)
    t0 = time.perf_counter()
    try:
        def squeeze(p: Path, into: Path) -> Path:
            _zstd([f"-{LEVEL}", "-T0", str(p), "-o", str(into / (p.name + SUFFIX))], f"packing {p}")
            return into / (p.name + SUFFIX)
        copy_tree(src, part, squeeze)
        evict(part, write_back=True)
    except BaseException:
        shutil.rmtree(part, ignore_errors=True)
        raise
    done = Packed(data_bytes, tree_bytes(part), round(time.perf_counter() - t0, 3))
    (state_dir / PACKED_RECORD).write_text(json.dumps(done.__dict__))
    part.rename(state_dir / PACKED)
    shutil.rmtree(src)
    return done


def unpack(packed: Path, dst: Path) -> int:
    """A packed state's files into dst (empty), each as it was; the caller writes them back and evicts them.
    Returns the bytes unpacked."""
    data_bytes = record(packed.parent).data_bytes
    require_free(dst, data_bytes, f"unpacking the state {packed.parent.name}")

    def open_up(p: Path, into: Path) -> Path:
        _zstd(["-d", str(p), "-o", str(into / p.name.removesuffix(SUFFIX))], f"unpacking {p}")
        return into / p.name.removesuffix(SUFFIX)
    copy_tree(packed, dst, open_up)
    return data_bytes
