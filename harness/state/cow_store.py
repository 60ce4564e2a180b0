"""`make store [SIZE=75g]` and `make store-clean`: a copy-on-write store for the states and the cells' data, on a
disk whose filesystem cannot share extents (this machine's ext4). XFS (reflink=1) in a sparse image file, through a
loop device with direct I/O, so the pages are cached once, by XFS, and not again by ext4 beneath it.

Why: a knee's step clones its state, and on ext4 a clone is a full copy. At 5x (SQLite's 51 GB) the state and its
copy do not fit this disk. On the store a clone shares the state's extents (clone.py: cp --reflink=always), so it
costs the blocks its cell writes and takes a second.

It is another filesystem on another device. A figure made on it says so (the result's environment.filesystem:
xfs on /dev/loopN). Compare it with one made on ext4 only through the bias measured between them, never assumed.
An image left by an earlier store (after a reboot) is attached again, its states kept."""
from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path

from harness.environment import filesystem
from harness.errors import ConfigError
from harness.state.clone import reflinks
from harness.state.store import require_free

IMAGE = Path("build/store.img")
MOUNT = Path("store")
PARTS = ("states", "data")        # what the make variables point at: STATES=store/states DATA=store/data


@dataclass(frozen=True)
class Store:
    mount: Path
    image: Path
    device: str
    size_bytes: int
    used_bytes: int
    made_now: bool

    def says(self) -> str:
        made = " (made now)" if self.made_now else ""
        return (f"{self.mount}: xfs (reflink) on {self.device}, backed by {self.image}, "
                f"{self.size_bytes / 2**30:.1f} GiB, {self.used_bytes / 2**30:.1f} GiB used{made}; give its states and "
                f"data to a walk: STATES={self.mount}/states DATA={self.mount}/data")


def _mounted(mount: Path) -> tuple[str, str] | None:
    """(device, fstype) of what is mounted at mount itself, else None."""
    fs = filesystem(mount)
    return (fs["device"], fs["fstype"]) if fs["mount"] == str(mount.resolve()) else None


def _run(cmd: list[str], what: str) -> str:
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        raise ConfigError(f"{what}: `{' '.join(cmd)}` failed: {(r.stderr or r.stdout).strip()}")
    return r.stdout.strip()


def _require_tools() -> None:
    if os.geteuid() != 0:
        raise ConfigError("the store mounts a loop device: run as root")
    for tool, package in (("mkfs.xfs", "xfsprogs"), ("losetup", "mount"), ("mount", "mount")):
        if shutil.which(tool) is None:
            raise ConfigError(f"the store needs {tool}: apt-get install {package} (make install does)")


def status(mount: Path = MOUNT, image: Path = IMAGE) -> Store | None:
    got = _mounted(mount)
    if got is None:
        return None
    st = os.statvfs(mount)
    return Store(mount, image, got[0], st.f_blocks * st.f_frsize, (st.f_blocks - st.f_bfree) * st.f_frsize, False)


def make(size_bytes: int, mount: Path = MOUNT, image: Path = IMAGE) -> Store:
    """The store mounted at mount (made first where no image is), its parts made, reflinks checked."""
    got = _mounted(mount)
    if got is not None:
        if got[1] != "xfs":
            raise ConfigError(f"{mount}: {got[1]} on {got[0]} is mounted there, not a store")
        return status(mount, image)
    _require_tools()
    made = not image.exists()
    if made:
        # sparse, but it fills as states are written: the disk beneath must hold all of it
        require_free(image.parent if image.parent.exists() else Path("."), size_bytes, f"the store's image {image}",
                     "give SIZE= smaller, or free the disk (`make states-clean`)")
        image.parent.mkdir(parents=True, exist_ok=True)
        with open(image, "wb") as f:
            f.truncate(size_bytes)
    # an image still attached (a mount that failed) is mounted from its device: two devices on one file would
    # each cache their own view of it
    device = next(iter(_attached(image)), None) or \
        _run(["losetup", "--find", "--show", "--direct-io=on", str(image)], f"attaching {image}")
    try:
        if made:
            _run(["mkfs.xfs", "-q", "-m", "reflink=1", device], f"making XFS on {device}")
        mount.mkdir(parents=True, exist_ok=True)
        _run(["mount", device, str(mount)], f"mounting {device} at {mount}")
    except ConfigError:
        subprocess.run(["losetup", "-d", device], capture_output=True)
        if made:                    # no filesystem in it yet: nothing to keep
            image.unlink(missing_ok=True)
        raise
    for part in PARTS:
        (mount / part).mkdir(exist_ok=True)
    if not reflinks(mount / PARTS[0], mount / PARTS[1]):
        raise ConfigError(f"{mount}: XFS on {device} made no reflinked copy: a clone there would be a full copy")
    return replace(status(mount, image), made_now=made)


def remove(mount: Path = MOUNT, image: Path = IMAGE) -> list[str]:
    """Unmounted, detached and its image deleted, with every state and cell in it. Returns what was done."""
    done = []
    got = _mounted(mount)
    if got is not None:
        _require_tools()
        _run(["umount", str(mount)], f"unmounting {mount}")
        _run(["losetup", "-d", got[0]], f"detaching {got[0]}")
        done.append(f"unmounted {mount} ({got[0]})")
    for dev in _attached(image):           # attached but not mounted (a failed make)
        _run(["losetup", "-d", dev], f"detaching {dev}")
        done.append(f"detached {dev}")
    if image.exists():
        done.append(f"deleted {image} ({image.stat().st_blocks * 512 / 2**30:.1f} GiB written)")
        image.unlink()
    if mount.is_dir() and not any(mount.iterdir()):
        mount.rmdir()
    return done


def _attached(image: Path) -> list[str]:
    if not image.exists() or shutil.which("losetup") is None:
        return []
    out = subprocess.run(["losetup", "-j", str(image.resolve())], capture_output=True, text=True).stdout
    return [line.split(":")[0] for line in out.splitlines() if line.strip()]
