"""The measured phase's I/O, for the verification checklist: device and cell counters at both of its ends
(taken beside the engine's counters, a few file reads), and the page-cache residency of the engine's files
at both ends (mincore: the sampler's first tick in the phase, and after its last block), per table and
index where the engine can map its pages (after the clock: the map reads the whole file)."""
from __future__ import annotations

import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from harness.engine_api import PageMap
from harness.platform import pagecache
from harness.platform.blockio import IoProbe, processes_delta
from harness.results import IoCounts, IoFigures, Residency

# harness files that share the data directory (the feed's block spool, a page map being written)
NOT_ENGINE_FILES = ("block-spool.bin", ".pagemap")


@dataclass
class IoWatch:
    probe: IoProbe
    data_dir: Path
    counters_start: dict | None = None
    counters_end: dict | None = None
    maps_start: dict[Path, bytes] | None = None
    maps_end: dict[Path, bytes] | None = None
    errors: list[str] = field(default_factory=list)

    @classmethod
    def for_plan(cls, plan, data_cgroup: Path | None) -> "IoWatch":
        """data_cgroup: the cgroup of the processes that hold the data, where the runner can see it."""
        data_dir = Path(plan.data_dir)
        return cls(IoProbe.for_data(data_dir, data_cgroup, runner_holds_data=not plan.capabilities.server), data_dir)

    def counters(self) -> dict:
        return self.probe.snapshot()

    def _maps(self) -> dict[Path, bytes] | None:
        if not self.data_dir.is_dir():      # not visible here (a server's data in its own container)
            return None
        try:
            return pagecache.snapshot_apart(self.data_dir, NOT_ENGINE_FILES)
        except (OSError, subprocess.CalledProcessError) as e:
            self.errors.append(f"residency: {e}")
            return None

    def take_start_residency(self) -> None:
        if self.maps_start is None:
            self.maps_start = self._maps() or {}

    def take_end_residency(self) -> None:
        self.maps_end = self._maps() or {}

    def figures(self, measured_s: float, logical_bytes_written: int | None,
                page_map: PageMap | None = None) -> IoFigures:
        device = attributed = None
        if self.counters_start and self.counters_end:
            device = _counts(f"device {self.probe.device}", self.counters_start["device"], self.counters_end["device"])
            own = processes_delta(self.counters_start["processes"], self.counters_end["processes"])
            attributed = IoCounts(source=self.probe.attributed_source, **own.since(None)) if own else None
        wa = read_iops = read_bps = None
        if device:
            if logical_bytes_written and device.write_bytes is not None:
                wa = round(device.write_bytes / logical_bytes_written, 3)
            if measured_s:
                read_iops = round(device.read_ops / measured_s, 2) if device.read_ops is not None else None
                read_bps = round(device.read_bytes / measured_s, 1)
        return IoFigures(device=device, attributed=attributed, logical_bytes_written=logical_bytes_written,
                         write_amplification=wa, read_iops=read_iops, read_bytes_per_s=read_bps,
                         residency=_residency(self.maps_start, self.maps_end),
                         index_residency=self._per_object(page_map) if page_map else None)

    def _per_object(self, pm: PageMap) -> dict[str, Residency]:
        """Each table's and index's pages of the main file, looked up in both residency maps. The owners
        are those at the phase's end: the pages a block allocated meanwhile count as not resident at its start."""
        start, end = (m.get(pm.path, b"") if m else b"" for m in (self.maps_start, self.maps_end))
        os_pages = max(1, pm.page_bytes // pagecache.PAGE)
        out = {}
        for name, pagenos in sorted(pm.pages.items()):
            counts = [0, 0]
            for pageno in pagenos:
                first = (pageno - 1) * os_pages
                for i, m in enumerate((start, end)):
                    if m[first:first + os_pages].count(1) == os_pages:
                        counts[i] += 1
            total = len(pagenos) * pm.page_bytes
            out[name] = Residency(file_bytes_start=total, resident_bytes_start=counts[0] * pm.page_bytes,
                                  file_bytes_end=total, resident_bytes_end=counts[1] * pm.page_bytes,
                                  share_start=round(counts[0] / len(pagenos), 4) if pagenos else None,
                                  share_end=round(counts[1] / len(pagenos), 4) if pagenos else None)
        return out


def start_page_map(engine, plan, state, log):
    """The page map where the scenario asks (io.index_residency) and the engine can draw one, started now on
    a thread of its own: it reads the whole file (33 s at 1x SQLite here), as the integrity check's scan
    does, and neither writes, so the two overlap on this machine's two cores. Returns its join."""
    box: dict = {}
    if not (plan.io.index_residency and state.measure_start_ns is not None):
        return lambda: None

    def draw() -> None:
        t0 = time.perf_counter()
        try:
            box["map"] = engine.page_map()
        except Exception as e:      # raised on the caller's thread, at the join
            box["error"] = e
        box["s"] = time.perf_counter() - t0

    thread = threading.Thread(target=draw, name="page-map", daemon=True)
    thread.start()

    def join() -> PageMap | None:
        thread.join()
        if "error" in box:
            raise box["error"]
        if box.get("map") is not None:
            log(f"mapped the database's pages to its tables and indexes in {box['s']:.1f} s, beside the "
                "integrity check (residency per index)")
        return box.get("map")
    return join


def io_figures(state, watch: IoWatch, log, page_map: PageMap | None) -> IoFigures:
    """The measured phase's I/O, residency per table and index where a page map was drawn."""
    for e in watch.errors:
        log(e)
    io = watch.figures(state.measured_s() if state.measure_start_ns else 0.0, state.logical_bytes_written, page_map)
    log(f"I/O over the measured phase: {io.summary()}")
    return io


def _counts(source: str | None, before, after) -> IoCounts | None:
    if before is None or after is None or source is None:
        return None
    return IoCounts(source=source, **after.since(before))


def _residency(start: dict | None, end: dict | None) -> Residency | None:
    if not start:
        return None
    s = pagecache.snapshot_figures(start)
    e = pagecache.snapshot_figures(end) if end else {}
    return Residency(file_bytes_start=s["file_bytes"], resident_bytes_start=s["resident_bytes"],
                     share_start=s["resident_share"], file_bytes_end=e.get("file_bytes"),
                     resident_bytes_end=e.get("resident_bytes"), share_end=e.get("resident_share"))
