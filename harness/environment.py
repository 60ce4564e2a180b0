"""What every result carries about where it was measured (pyperf-style metadata, collected automatically)."""
from __future__ import annotations

import mmap
import os
import platform
import random
import statistics
import sys
import time
from pathlib import Path

from harness.platform import cgroup, pagecache
from harness.provenance import code_digest, git_commit, harness_version

NODE_ENV = "ARKBENCH_NODE"          # the machine's hostname, given to a container by its runtime or orchestrator


UTC_FORMAT = "%Y-%m-%dT%H:%M:%SZ"     # every *_utc field's


def utc_now() -> str:
    return time.strftime(UTC_FORMAT, time.gmtime())


def utc_seconds_between(start: str, end: str) -> float:
    """Seconds from one *_utc stamp to another."""
    from datetime import datetime
    return (datetime.strptime(end, UTC_FORMAT) - datetime.strptime(start, UTC_FORMAT)).total_seconds()


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def ram_bytes() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def filesystem(path: Path) -> dict:
    """The mount holding `path`: longest mount-point prefix in /proc/mounts."""
    path = path.resolve()
    best = {"mount": "/", "fstype": "unknown", "device": "unknown"}
    try:
        for line in Path("/proc/mounts").read_text().splitlines():
            dev, mnt, fstype = line.split()[:3]
            if (str(path) + "/").startswith(mnt.rstrip("/") + "/") and len(mnt) >= len(best["mount"]):
                best = {"mount": mnt, "fstype": fstype, "device": dev}
    except OSError:
        pass
    return best


def bench_environment() -> dict:
    """What a bench file (bench-overhead, bench-reads, bench-build) records of the machine it ran on; each
    run's result.json holds the full environment."""
    return {"started_utc": utc_now(), "git_commit": git_commit(), "cpu_model": cpu_model(),
            "cpus_usable": len(os.sched_getaffinity(0)), "ram_bytes": ram_bytes()}


def fsync_floor(data_dir: Path, samples: int = 200, budget_s: float = 2.0) -> dict:
    """p50/p99 of a 4 KiB append + fsync in the data directory: the floor under any durable commit."""
    data_dir.mkdir(parents=True, exist_ok=True)
    probe = data_dir / ".fsync-probe"
    block = os.urandom(4096)
    lat_us: list[float] = []
    fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        deadline = time.perf_counter() + budget_s
        while len(lat_us) < samples and time.perf_counter() < deadline:
            t = time.perf_counter()
            os.write(fd, block)
            os.fsync(fd)
            lat_us.append((time.perf_counter() - t) * 1e6)
    finally:
        os.close(fd)
        probe.unlink(missing_ok=True)
    return {**_us_percentiles(lat_us), "max_us": round(max(lat_us), 1)}


DISK_PROBE_BYTES = 32 << 20       # per pattern: long enough to pass the device's cache, short enough for every run


def disk_write_bandwidth(data_dir: Path, probe_bytes: int = DISK_PROBE_BYTES) -> dict:
    """fio-style, in the data directory: MiB/s of 1 MiB sequential writes and of 4 KiB writes at random
    offsets, each synced once at its end, so the figure is the device's (and the file system's), not the
    page cache's. With the fsync floor it explains an I/O-bound ratio that differs from another machine's."""
    data_dir.mkdir(parents=True, exist_ok=True)
    probe = data_dir / ".disk-probe"
    rng = random.Random(0)
    out = {"probe_bytes": probe_bytes}
    fd = os.open(probe, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        for name, size in (("sequential", 1 << 20), ("random", 4096)):
            block = os.urandom(size)
            offsets = [i * size for i in range(probe_bytes // size)]
            if name == "random":
                rng.shuffle(offsets)
            t = time.perf_counter()
            for off in offsets:
                os.pwrite(fd, block, off)
            os.fsync(fd)
            out[f"{name}_write_mib_per_s"] = round(probe_bytes / 2**20 / (time.perf_counter() - t), 1)
    finally:
        os.close(fd)
        probe.unlink(missing_ok=True)
    return out


def _us_percentiles(lat_us: list[float]) -> dict:
    lat_us = sorted(lat_us)
    q = statistics.quantiles(lat_us, n=100, method="inclusive") if len(lat_us) > 1 else lat_us * 99
    return {"samples": len(lat_us), "p50_us": round(q[49], 1), "p99_us": round(q[98], 1)}


def disk_random_read(data_dir: Path, samples: int = 2000, budget_s: float = 1.5) -> dict:
    """p50/p99 of one 4 KiB read at a random offset of the data directory's largest file, O_DIRECT, one at a
    time: what a cache miss costs an engine that reads synchronously (SQLite), so 1 / p50 bounds its reads
    from the device per second. The data's own file, not a fresh probe, which the host may still cache.
    O_DIRECT leaves the page cache as it was (residency is measured after this)."""
    sized = [(p.stat().st_size, p) for p in pagecache.files(data_dir)] if data_dir.is_dir() else []
    size, target = max(sized, default=(0, None))
    if size < 64 << 20:
        return {"error": "no file of 64 MiB or more in the data directory (no starting database)"}
    buf = mmap.mmap(-1, 4096)            # page-aligned, as O_DIRECT asks
    try:
        fd = os.open(target, os.O_RDONLY | os.O_DIRECT)
    except OSError as e:                 # a file system without O_DIRECT (tmpfs)
        return {"error": f"O_DIRECT: {e.strerror}", "file_bytes": size}
    rng, pages, lat_us = random.Random(0), size // 4096, []
    try:
        deadline = time.perf_counter() + budget_s
        while len(lat_us) < samples and time.perf_counter() < deadline:
            off = rng.randrange(pages) * 4096
            t = time.perf_counter()
            os.preadv(fd, [buf], off)
            lat_us.append((time.perf_counter() - t) * 1e6)
    finally:
        os.close(fd)
    return {**_us_percentiles(lat_us), "file_bytes": size, "reads_per_s": round(len(lat_us) / (sum(lat_us) / 1e6))}


def boot_id() -> str | None:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip() or None
    except OSError:
        return None


def capture(data_dir: Path, runtime: str, engine: str | None = None) -> dict:
    mem_dir = cgroup.own_memory_dir()
    return {
        "harness_version": harness_version(),
        "git_commit": git_commit(),
        # the files that measured this run, where they ran (an image's own copy in a container)
        "code_digest": code_digest(engine) if engine else None,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "kernel": platform.release(),
        "hostname": platform.node(),
        # the machine's boot (a container shares its kernel's): a sitting's identity, as a host can change between
        # sittings on the same day, with the same CPU model and kernel
        "boot_id": boot_id(),
        # the machine's own name: a container's hostname is its id (the runtime or orchestrator passes it)
        "node": os.environ.get(NODE_ENV) or platform.node(),
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)),
        "ram_bytes": ram_bytes(),
        "cgroup_version": cgroup.version(),
        "runner_limit_bytes_seen": cgroup.limit_bytes(mem_dir),
        # set by the runtime that applied the limit (cgroup-v1, cgroup-v2, docker); "none" otherwise
        "memory_enforcement": os.environ.get("ARKBENCH_MEM_ENFORCEMENT", "none"),
        "runtime": runtime,
        "image_id": os.environ.get("ARKBENCH_IMAGE_ID") or None,     # docker runtime: the engine's image
        "data_dir": str(data_dir),
        "filesystem": filesystem(data_dir),
        "fsync_floor": fsync_floor(data_dir),
        "disk_write": disk_write_bandwidth(data_dir),
        "disk_random_read": disk_random_read(data_dir),
        "started_utc": utc_now(),
    }
