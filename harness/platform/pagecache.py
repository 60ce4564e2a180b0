"""Which bytes of a file sit in the page cache: mincore(2) over a read-only shared mapping, which faults
nothing in. A page cache is the machine's, so any process that can open the files can ask, whatever
cgroup charged them."""
from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import os
import pickle
import subprocess
import sys
from pathlib import Path

MINCORE_SPAN_BYTES = 1 << 30        # mapped and asked a GiB at a time
PAGE = mmap.PAGESIZE
# mincore sets bit 0 of a page's byte when it is resident; the other bits are reserved
_LOW_BIT = bytes(b & 1 for b in range(256))

_libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_ubyte)]
_MAP_FAILED = ctypes.c_void_p(-1).value


def files(root: Path) -> list[Path]:
    return sorted(p for p in Path(root).rglob("*") if p.is_file() and not p.is_symlink())


def evict(root: Path, write_back: bool) -> int:
    """Drop every file's pages under root from the page cache (written back first when asked: dirty pages
    cannot be dropped). Returns the files done."""
    under = files(root)
    for p in under:
        fd = os.open(p, os.O_RDONLY)
        try:
            if write_back:
                os.fdatasync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
    return len(under)


def resident_map(path: Path) -> bytes:
    """One byte per OS page of the file: 1 resident, 0 not."""
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        out = bytearray()
        for off in range(0, size, MINCORE_SPAN_BYTES):
            length = min(MINCORE_SPAN_BYTES, size - off)
            addr = _libc.mmap(None, length, mmap.PROT_READ, mmap.MAP_SHARED, fd, off)
            if addr == _MAP_FAILED:
                raise OSError(ctypes.get_errno(), f"mmap {path}")
            try:
                vec = (ctypes.c_ubyte * ((length + PAGE - 1) // PAGE))()
                if _libc.mincore(addr, length, vec):
                    raise OSError(ctypes.get_errno(), f"mincore {path}")
                out += bytes(vec).translate(_LOW_BIT)
            finally:
                _libc.munmap(addr, length)
        return bytes(out)
    finally:
        os.close(fd)


def resident_file_bytes(path: Path) -> int:
    return min(os.stat(path).st_size, resident_map(path).count(1) * PAGE)


def resident_bytes(root: Path) -> int:
    return sum(resident_file_bytes(p) for p in files(root))


def snapshot(root: Path) -> dict[Path, bytes]:
    """Every file's resident map (a file that vanished meanwhile is left out)."""
    out = {}
    for p in files(root):
        try:
            out[p] = resident_map(p)
        except FileNotFoundError:
            continue
    return out


def snapshot_apart(root: Path, exclude: tuple[str, ...] = ()) -> dict[Path, bytes]:
    """snapshot() in a process of its own: mincore needs each file open, and a process that closes any
    descriptor of a SQLite file drops its own POSIX locks on it, SQLite's included (the runner's engine would
    lose its locks on the -shm, and another process could then truncate it under its mapping)."""
    out = subprocess.run([sys.executable, "-m", "harness.platform.pagecache", str(root), *exclude],
                         check=True, capture_output=True)
    return pickle.loads(out.stdout)


def main(argv: list[str]) -> int:
    exclude = tuple(argv[2:])
    maps = {p: m for p, m in snapshot(Path(argv[1])).items() if not p.name.endswith(exclude)}
    sys.stdout.buffer.write(pickle.dumps(maps))
    return 0


def snapshot_figures(maps: dict[Path, bytes]) -> dict:
    """Resident and total bytes of a snapshot (the last page of a file counted whole)."""
    sizes = {p: len(m) * PAGE for p, m in maps.items()}
    resident = sum(m.count(1) * PAGE for m in maps.values())
    total = sum(sizes.values())
    return {"resident_bytes": resident, "file_bytes": total,
            "resident_share": round(resident / total, 4) if total else None}


if __name__ == "__main__":
    sys.exit(main(sys.argv))
