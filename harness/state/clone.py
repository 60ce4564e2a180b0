"""A state's files into a cell's data directory, cold: copy-on-write where the filesystem shares extents
(cp --reflink=always), else a full copy, its large files by direct I/O; written back, then dropped from the page
cache. A memory cgroup is charged for the page cache its processes fault in, but pages already cached when the
cell starts (by the copy, made outside the limit) would be read for free: a limited engine would start warm."""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from harness.platform.pagecache import evict
from harness.state import pack
from harness.state.store import DATA, TAKEN, require_free, tree_bytes
from harness.state.tree import copy_tree

CLONE_RECORD = "state.json"      # in the run directory: the state and its clone, as the result's load holds them


@dataclass(frozen=True)
class Clone:
    method: str               # "reflink", "copy", "unpack" (a packed state: pack.py), "move", "link"
    bytes: int
    clone_s: float
    evict_s: float
    files: int

    def as_dict(self) -> dict:
        return asdict(self)


def _reflink(src: Path, dst: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["cp", "-a", "--reflink=always", f"{src}/.", str(dst)], capture_output=True, text=True)


_SHARED: dict[tuple[int, int], bool] = {}     # (src device, dst device) -> whether a reflink crosses them


def reflinks(src: Path, dst: Path) -> bool:
    """Whether a file made in src can be reflinked into dst, tried."""
    with tempfile.NamedTemporaryFile(dir=src, prefix=".reflink-probe-") as f:
        f.write(b"\0" * 4096)
        f.flush()
        twin = dst / f"{Path(f.name).name}-twin"
        try:
            return subprocess.run(["cp", "--reflink=always", f.name, str(twin)], capture_output=True).returncode == 0
        finally:
            twin.unlink(missing_ok=True)


def shares_extents(src: Path, dst: Path) -> bool:
    """Whether a clone from src (the states' root) into dst (a cell's data directory, or where it will be made)
    shares the state's extents (make store): then a clone costs the blocks its cell writes, not the state's.
    Probed once per pair of filesystems; False where either cannot be written."""
    dst = next((p for p in [dst, *dst.parents] if p.exists()), Path("."))
    try:
        key = (os.stat(src).st_dev, os.stat(dst).st_dev)
        if key not in _SHARED:
            _SHARED[key] = reflinks(src, dst)
        return _SHARED[key]
    except OSError:
        return False


DIRECT_MIN_BYTES = 64 << 20     # a file this large is copied around the page cache (a 5x state is one 51 GB file)


def _copy(src: Path, dst: Path) -> None:
    """A full copy, owner, mode and times kept as cp -a keeps them; a large file by direct I/O (dd iflag/oflag=direct,
    64 MiB blocks). Through the page cache cp -a copied a 10 GiB file at 0.42-0.44 GB/s here (12-07), its pages then
    written back and dropped; around it, 1.0-1.1 GB/s and nothing to drop."""
    copy_tree(src, dst, _copy_file)


def _copy_file(p: Path, into: Path) -> Path:
    to = into / p.name
    if p.stat().st_size >= DIRECT_MIN_BYTES:
        d = subprocess.run(["dd", f"if={p}", f"of={to}", "bs=64M", "iflag=direct", "oflag=direct", "status=none"],
                           capture_output=True, text=True)
        if not d.returncode:
            return to
    shutil.copy2(p, to)         # small, or a filesystem without direct I/O (EINVAL): through the cache
    return to


def _empty(d: Path) -> None:
    for p in d.iterdir():
        shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()


def clone(src: Path, dst: Path, owner_uid: int | None = None) -> Clone:
    """Everything under src into dst (created; must be empty), cold. owner_uid: hand the copy to that
    user (a container's non-root user)."""
    dst.mkdir(parents=True, exist_ok=True)
    if any(dst.iterdir()):
        raise RuntimeError(f"{dst}: a clone goes into an empty directory")
    t0 = time.perf_counter()
    if (packed := pack.data_of(src)) is not None:       # kept packed (pack.py): a full copy, unpacked
        size, method = pack.unpack(packed, dst), "unpack"
        src = packed
    else:
        size, method = tree_bytes(src), "reflink"
    if method == "reflink" and _reflink(src, dst).returncode:      # no shared extents here (ext4): a full copy
        _empty(dst)
        require_free(dst, size, f"cloning the state {src.parent.name}")
        method = "copy"
        _copy(src, dst)
    if owner_uid is not None:
        subprocess.run(["chown", "-R", f"{owner_uid}:{owner_uid}", str(dst)], check=True)
    t1 = time.perf_counter()
    files = evict(dst, write_back=True)
    evict(src, write_back=False)        # the source's pages too: not the clone's, but RAM all the same
    t2 = time.perf_counter()
    return Clone(method, size, round(t1 - t0, 3), round(t2 - t1, 3), files)


def link(src: Path, dst: Path) -> tuple[Clone, dict] | None:
    """A reads-alone cell's files as hard links to the state's (no byte copied: a read-only cell at 1x would
    otherwise copy its ~15 GiB for each step of a read ceiling), cold; with the files' fingerprint, which the cell
    checks after it (harness/cell.py). Only for an engine whose reads leave its files as they were
    (capabilities.reads_keep_files) and a cell that writes nothing; never handed to another user (chown would
    change the state's own files). None where dst is on another filesystem (no hard link reaches it): clone."""
    dst.mkdir(parents=True, exist_ok=True)
    if not src.exists() or os.stat(src).st_dev != os.stat(dst).st_dev:       # packed (pack.py), or elsewhere
        return None
    if any(dst.iterdir()):
        raise RuntimeError(f"{dst}: a clone goes into an empty directory")
    t0 = time.perf_counter()
    r = subprocess.run(["cp", "-al", f"{src}/.", str(dst)], capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"linking {src} into {dst} failed: {r.stderr.strip()}")
    t1 = time.perf_counter()
    files = evict(dst, write_back=False)
    return Clone("link", tree_bytes(dst), round(t1 - t0, 3), round(time.perf_counter() - t1, 3), files), \
        fingerprint(src)


def fingerprint(root: Path) -> dict:
    """Each file's size and modification time (ns): a write to a linked file changes both or the latter."""
    return {str(p.relative_to(root)): [p.stat().st_size, p.stat().st_mtime_ns] for p in sorted(root.rglob("*"))
            if p.is_file()}


def take(state_dir: Path, dst: Path, owner_uid: int | None = None) -> tuple[Path, Clone]:
    """A state no later cell clones, its data moved into dst instead of copied (a matrix's DROP_STATES=1
    would delete it after this cell anyway): the directory is renamed <id>.taken first, so it is no state
    any more, then its data renamed into dst, cold. Returns the taken directory (its model is read there
    until the cell ends; release() removes it) and the record. On another filesystem: a copy, as clone()."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    if os.stat(state_dir).st_dev != os.stat(dst.parent).st_dev or pack.is_packed(state_dir):
        return state_dir, clone(state_dir / DATA, dst, owner_uid)        # a packed state stays for the next
    if dst.exists():
        dst.rmdir()                     # a clone's target: empty, or this raises
    taken = state_dir.with_name(state_dir.name + TAKEN)
    t0 = time.perf_counter()
    state_dir.rename(taken)
    (taken / DATA).rename(dst)
    if owner_uid is not None:
        subprocess.run(["chown", "-R", f"{owner_uid}:{owner_uid}", str(dst)], check=True)
    t1 = time.perf_counter()
    files = evict(dst, write_back=True)     # built or aged just before: its pages may still be cached
    return taken, Clone("move", tree_bytes(dst), round(t1 - t0, 3), round(time.perf_counter() - t1, 3), files)


def release(taken: Path) -> None:
    """A taken state's remains (its model, its manifest), once its cell is done."""
    if taken.name.endswith(TAKEN):
        shutil.rmtree(taken, ignore_errors=True)
