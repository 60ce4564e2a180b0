"""The power-cut layer's file system (powercut.py says what it models): a FUSE pass-through over the disk
folder that remembers, per file, what each write since the file's last fsync overwrote, and on an armed
unmount puts those bytes back. Run as its own process, outside MEM, only where powercut.unavailable() is None:
`python -m harness.crash.powercut_fs DISK MOUNT REPORT`."""
from __future__ import annotations

import errno
import fcntl
import json
import os
import sys
import threading
import time
from pathlib import Path

from mfusepy import FUSE, FuseOSError, Operations, fuse_get_context

STAT_FIELDS = ("st_atime_ns", "st_ctime_ns", "st_mtime_ns", "st_gid", "st_mode", "st_nlink", "st_size", "st_uid",
               "st_ino", "st_blocks")
STATVFS_FIELDS = ("f_bavail", "f_bfree", "f_blocks", "f_bsize", "f_favail", "f_ffree", "f_files", "f_flag",
                  "f_frsize", "f_namemax")


class Undo:
    """One file's writes since its last fsync: its size then, and the bytes each write overwrote."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.chunks: list[tuple[int, bytes]] = []
        self.bytes = 0

    def record(self, fd: int, offset: int, length: int) -> None:
        end = min(offset + length, self.size)    # bytes past the synced size vanish with the truncation
        if end > offset:
            old = os.pread(fd, end - offset, offset)
            self.chunks.append((offset, old))
        self.bytes += length


def _flags(fd: int) -> int:
    return fcntl.fcntl(fd, fcntl.F_GETFL)


class LazyDisk(Operations):
    """Every operation passed to the disk folder; writes and truncations remember what they overwrite until
    the file's next fsync (undo, by path on the disk). Attributes are not named like an operation: FUSE takes
    any attribute of that name (`lock`, say) for its handler."""
    use_ns = True

    def __init__(self, disk: str) -> None:
        self.disk, self._mutex, self.undo = disk, threading.Lock(), {}

    def real(self, path: str) -> str:
        return os.path.join(self.disk, path.lstrip("/"))

    def _remember(self, p: str, fd: int, offset: int, length: int) -> None:
        u = self.undo.get(p)
        if u is None:
            u = self.undo[p] = Undo(os.fstat(fd).st_size)
        u.record(fd, offset, length)

    @staticmethod
    def _owned(p: str) -> None:        # a file made for the engine's user is that user's
        uid, gid, _ = fuse_get_context()
        os.lchown(p, uid, gid)

    def access(self, path, amode):
        if not os.access(self.real(path), amode):
            raise FuseOSError(errno.EACCES)

    def getattr(self, path, fh=None):
        st = os.fstat(fh) if fh is not None else os.lstat(self.real(path))
        return {k: getattr(st, k) for k in STAT_FIELDS}

    def readdir(self, path, fh):
        return [".", "..", *os.listdir(self.real(path))]

    def readlink(self, path):
        return os.readlink(self.real(path))

    def chmod(self, path, mode):
        os.chmod(self.real(path), mode)

    def chown(self, path, uid, gid):
        os.lchown(self.real(path), uid, gid)

    def mkdir(self, path, mode):
        os.mkdir(self.real(path), mode)
        self._owned(self.real(path))

    def rmdir(self, path):
        os.rmdir(self.real(path))

    def unlink(self, path):
        with self._mutex:
            os.unlink(self.real(path))
            self.undo.pop(self.real(path), None)

    def rename(self, old, new):
        with self._mutex:
            os.rename(self.real(old), self.real(new))
            if self.real(old) in self.undo:
                self.undo[self.real(new)] = self.undo.pop(self.real(old))

    def symlink(self, target, source):
        os.symlink(source, self.real(target))

    def link(self, target, source):
        os.link(self.real(source), self.real(target))

    def utimens(self, path, times=None):
        os.utime(self.real(path), ns=times)

    def statfs(self, path):
        sv = os.statvfs(self.real(path))
        return {k: getattr(sv, k) for k in STATVFS_FIELDS}

    def open(self, path, flags):
        # read-write underneath, whatever was asked: a write first reads what it overwrites
        if flags & os.O_ACCMODE == os.O_WRONLY:
            flags = flags & ~os.O_ACCMODE | os.O_RDWR
        return os.open(self.real(path), flags & ~(os.O_DIRECT | os.O_APPEND))

    def create(self, path, mode, fi=None):
        fd = os.open(self.real(path), os.O_RDWR | os.O_CREAT, mode)
        self._owned(self.real(path))
        return fd

    def read(self, path, size, offset, fh):
        return os.pread(fh, size, offset)

    def write(self, path, data, offset, fh):
        with self._mutex:
            if not _flags(fh) & (os.O_SYNC | os.O_DSYNC):     # else synced as it is written
                self._remember(self.real(path), fh, offset, len(data))
            return os.pwrite(fh, data, offset)

    def truncate(self, path, length, fh=None):
        with self._mutex:
            fd = fh if fh is not None else os.open(self.real(path), os.O_RDWR)
            try:
                self._remember(self.real(path), fd, length, max(0, os.fstat(fd).st_size - length))
                os.ftruncate(fd, length)
            finally:
                if fh is None:
                    os.close(fd)

    def fallocate(self, path, mode, offset, size, fh):
        with self._mutex:
            self._remember(self.real(path), fh, offset, size)
            os.posix_fallocate(fh, offset, size)

    def fsync(self, path, datasync, fh):
        with self._mutex:
            (os.fdatasync if datasync else os.fsync)(fh)
            self.undo.pop(self.real(path), None)

    def flush(self, path, fh):
        return 0

    def release(self, path, fh):
        os.close(fh)


def _roll_back(undo: dict[str, Undo]) -> dict:
    """Every unsynced byte put back and each file cut to its synced size; what was dropped."""
    dropped = {"bytes": 0, "files": 0}
    for p, u in undo.items():
        try:
            fd = os.open(p, os.O_RDWR)
        except FileNotFoundError:
            continue
        try:
            for offset, old in reversed(u.chunks):
                os.pwrite(fd, old, offset)
            os.ftruncate(fd, u.size)
            os.fsync(fd)
        finally:
            os.close(fd)
        dropped["bytes"] += u.bytes
        dropped["files"] += 1
    return dropped


def serve(disk: str, mount: str, report: str) -> None:
    """Serve until unmounted; then, if REPORT.arm exists, cut; REPORT says what was dropped."""
    t0 = time.monotonic()
    ops = LazyDisk(disk)
    FUSE(ops, mount, foreground=True, allow_other=True, default_permissions=True, use_ino=True)
    cut = os.path.exists(f"{report}.arm")
    dropped = _roll_back(ops.undo) if cut else {"bytes": 0, "files": 0}
    Path(report).write_text(json.dumps({**dropped, "served_s": round(time.monotonic() - t0, 3), "cut": cut}))


if __name__ == "__main__":
    serve(*sys.argv[1:4])
