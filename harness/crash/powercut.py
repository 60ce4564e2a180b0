"""A simulated power cut, LazyFS-style: a FUSE pass-through file system over the data (its files live in
<data_dir>.disk) that remembers, per file, what each write since the file's last fsync overwrote. A cut
puts every such byte back and truncates each file to its size at its last fsync, so what survives is what
the engine had synced, as after a power loss. Device-mapper targets (dm-log-writes, dm-flakey) would drop
writes below the file system, but this kernel has no device-mapper.

What it does not model: directory entries (a create, rename or unlink is durable at once) and torn or
reordered writes within a sync interval (every unsynced write is lost, none half-done). Served by this
module run as a process of its own (`python -m harness.crash.powercut DISK MOUNT REPORT`), outside MEM;
REPORT.arm arms the cut, unmounting carries it out and writes REPORT (JSON)."""
from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

MOUNT_TIMEOUT_S = 30.0


def unavailable() -> str | None:
    """None when a cut can be simulated here, else why not."""
    try:
        import mfusepy  # noqa: F401
    except (ImportError, OSError) as e:
        return f"the FUSE binding mfusepy does not load ({e})"
    if not os.path.exists("/dev/fuse"):
        return "no /dev/fuse"
    if not shutil.which("fusermount3"):
        return "no fusermount3 (Debian's fuse3)"
    if os.geteuid() != 0:
        return "mounting for the engine's own user (allow_other) needs root"
    return None


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


def _serve(disk: str, mount: str, report: str) -> None:
    from mfusepy import FUSE, FuseOSError, Operations, fuse_get_context

    lock = threading.Lock()
    undo: dict[str, Undo] = {}          # by path on the disk

    def real(path: str) -> str:
        return os.path.join(disk, path.lstrip("/"))

    def remember(p: str, fd: int, offset: int, length: int) -> None:
        u = undo.get(p)
        if u is None:
            u = undo[p] = Undo(os.fstat(fd).st_size)
        u.record(fd, offset, length)

    def owned(p: str) -> None:        # a file made for the engine's user is that user's
        uid, gid, _ = fuse_get_context()
        os.lchown(p, uid, gid)

    class Lazy(Operations):
        use_ns = True


        def access(self, path, amode):
            if not os.access(real(path), amode):
                raise FuseOSError(errno.EACCES)

        def getattr(self, path, fh=None):
            st = os.fstat(fh) if fh is not None else os.lstat(real(path))
            return {k: getattr(st, k) for k in ("st_atime_ns", "st_ctime_ns", "st_mtime_ns", "st_gid", "st_mode",
                                                 "st_nlink", "st_size", "st_uid", "st_ino", "st_blocks")}

        def readdir(self, path, fh):
            return [".", "..", *os.listdir(real(path))]

        def readlink(self, path):
            return os.readlink(real(path))

        def chmod(self, path, mode):
            os.chmod(real(path), mode)

        def chown(self, path, uid, gid):
            os.lchown(real(path), uid, gid)

        def mkdir(self, path, mode):
            os.mkdir(real(path), mode)
            owned(real(path))

        def rmdir(self, path):
            os.rmdir(real(path))

        def unlink(self, path):
            with lock:
                os.unlink(real(path))
                undo.pop(real(path), None)

        def rename(self, old, new):
            with lock:
                os.rename(real(old), real(new))
                if real(old) in undo:
                    undo[real(new)] = undo.pop(real(old))

        def symlink(self, target, source):
            os.symlink(source, real(target))

        def link(self, target, source):
            os.link(real(source), real(target))

        def utimens(self, path, times=None):
            os.utime(real(path), ns=times)

        def statfs(self, path):
            sv = os.statvfs(real(path))
            return {k: getattr(sv, k) for k in ("f_bavail", "f_bfree", "f_blocks", "f_bsize", "f_favail",
                                                 "f_ffree", "f_files", "f_flag", "f_frsize", "f_namemax")}

        def open(self, path, flags):
            # read-write underneath, whatever was asked: a write first reads what it overwrites
            if flags & os.O_ACCMODE == os.O_WRONLY:
                flags = flags & ~os.O_ACCMODE | os.O_RDWR
            return os.open(real(path), flags & ~(os.O_DIRECT | os.O_APPEND))

        def create(self, path, mode, fi=None):
            fd = os.open(real(path), os.O_RDWR | os.O_CREAT, mode)
            owned(real(path))
            return fd

        def read(self, path, size, offset, fh):
            return os.pread(fh, size, offset)

        def write(self, path, data, offset, fh):
            with lock:
                if not _flags(fh) & (os.O_SYNC | os.O_DSYNC):     # else synced as it is written
                    remember(real(path), fh, offset, len(data))
                return os.pwrite(fh, data, offset)

        def truncate(self, path, length, fh=None):
            with lock:
                fd = fh if fh is not None else os.open(real(path), os.O_RDWR)
                try:
                    remember(real(path), fd, length, max(0, os.fstat(fd).st_size - length))
                    os.ftruncate(fd, length)
                finally:
                    if fh is None:
                        os.close(fd)

        def fallocate(self, path, mode, offset, size, fh):
            with lock:
                remember(real(path), fh, offset, size)
                os.posix_fallocate(fh, offset, size)

        def fsync(self, path, datasync, fh):
            with lock:
                (os.fdatasync if datasync else os.fsync)(fh)
                undo.pop(real(path), None)

        def flush(self, path, fh):
            return 0

        def release(self, path, fh):
            os.close(fh)

    t0 = time.monotonic()
    FUSE(Lazy(), mount, foreground=True, allow_other=True, default_permissions=True, use_ino=True)
    cut = os.path.exists(f"{report}.arm")
    dropped = {"bytes": 0, "files": 0, "served_s": round(time.monotonic() - t0, 3), "cut": cut}
    if cut:
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
    Path(report).write_text(json.dumps(dropped))


def _flags(fd: int) -> int:
    import fcntl
    return fcntl.fcntl(fd, fcntl.F_GETFL)


class PowerCut:
    """The data directory served through the layer; cut() after the engine's processes are killed."""

    def __init__(self, data_dir: Path) -> None:
        self.mount, self.disk = Path(data_dir), Path(f"{data_dir}.disk")
        if not self.disk.exists():
            os.rename(self.mount, self.disk)
            self.mount.mkdir()
            shutil.copystat(self.disk, self.mount)
            st = self.disk.stat()
            os.chown(self.mount, st.st_uid, st.st_gid)
        self.proc: subprocess.Popen | None = None
        self.report = self.disk.parent / f".{self.disk.name}.cut.json"

    def up(self) -> None:
        self.report.unlink(missing_ok=True)
        self.proc = subprocess.Popen([sys.executable, "-m", "harness.crash.powercut", str(self.disk), str(self.mount),
                                      str(self.report)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + MOUNT_TIMEOUT_S
        while not os.path.ismount(self.mount):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the power-cut layer did not mount {self.mount}: "
                                   f"{(self.proc.stderr.read() or b'').decode()[-1000:]}")
            time.sleep(0.02)

    def down(self, cut: bool) -> dict:
        """Unmount (every process on it is dead by now); with cut, drop what was not synced first."""
        if self.proc is None:
            return {}
        arm = Path(f"{self.report}.arm")
        if cut:
            arm.touch()
        deadline = time.monotonic() + MOUNT_TIMEOUT_S
        while (u := subprocess.run(["fusermount3", "-u", str(self.mount)], capture_output=True, text=True)).returncode:
            if time.monotonic() > deadline:      # busy: a killed process has not let go of its files yet
                raise RuntimeError(f"could not unmount the power-cut layer at {self.mount}: {u.stderr.strip()}")
            time.sleep(0.05)
        self.proc.wait(timeout=120)
        self.proc = None
        arm.unlink(missing_ok=True)
        return json.loads(self.report.read_text()) if self.report.exists() else {}

    def remove(self) -> None:
        if self.proc is not None:
            subprocess.run(["fusermount3", "-uz", str(self.mount)], capture_output=True)
            self.proc.kill()
            self.proc.wait(timeout=30)
        shutil.rmtree(self.disk, ignore_errors=True)
        self.report.unlink(missing_ok=True)


if __name__ == "__main__":
    _serve(*sys.argv[1:4])
