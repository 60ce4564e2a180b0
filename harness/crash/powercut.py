"""A simulated power cut, LazyFS-style: a FUSE pass-through file system over the data (its files live in
<data_dir>.disk) that remembers, per file, what each write since the file's last fsync overwrote. A cut
puts every such byte back and truncates each file to its size at its last fsync, so what survives is what
the engine had synced, as after a power loss. Device-mapper targets (dm-log-writes, dm-flakey) would drop
writes below the file system, but this kernel has no device-mapper.

What it does not model: directory entries (a create, rename or unlink is durable at once) and torn or
reordered writes within a sync interval (every unsynced write is lost, none half-done). Served by this
file system run as a process of its own (powercut_fs.py: `python -m harness.crash.powercut_fs DISK MOUNT
REPORT`), outside MEM; REPORT.arm arms the cut, unmounting carries it out and writes REPORT (JSON)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
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
        self.proc = subprocess.Popen([sys.executable, "-m", "harness.crash.powercut_fs", str(self.disk), str(self.mount),
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

