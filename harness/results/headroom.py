"""verdict.json's headroom: the sitting's reference cells, and how much more than the offered load a candidate that
passed carries, measured on itself (v9: its capacity; harness/walks/verdict/headroom.py). Files before v9 hold the
multiple m a screen was asked at instead: they still load, and say what they said."""
from __future__ import annotations

from typing import Optional

from harness.results.base import Model


class ReferenceRun(Model):
    """One reference cell of the walk: where in the walk it ran and its figure (the sitting's speed)."""
    at: str                                     # "start", "before libsql", "before the leaf", "end"
    cell: str                                   # <scenario>/<dir>
    started_utc: Optional[str] = None
    service_p50_ms: Optional[float] = None
    status: Optional[str] = None
    runtime: Optional[str] = None               # v9: local | docker: a figure of one runtime says nothing of another's


class Host(Model):
    """What a capacity was measured on: it can change between sittings, so every capacity carries it."""
    cpu_model: Optional[str] = None
    disk_write_mib_per_s: Optional[float] = None     # sequential 1 MiB writes, synced (environment.disk_write)
    fsync_p50_us: Optional[float] = None
    runtime: Optional[str] = None
    kernel: Optional[str] = None
    filesystem: Optional[str] = None                # the data mount's: a cell on the store (make store) is not ext4's

    @classmethod
    def of(cls, env: dict) -> "Host":
        """From a run's environment (result.json)."""
        return cls(cpu_model=env.get("cpu_model"), kernel=env.get("kernel"), runtime=env.get("runtime"),
                   disk_write_mib_per_s=(env.get("disk_write") or {}).get("sequential_write_mib_per_s"),
                   fsync_p50_us=(env.get("fsync_floor") or {}).get("p50_us"),
                   filesystem=filesystem_says(env.get("filesystem")))

    def says(self) -> str:
        disk = f"disk {self.disk_write_mib_per_s:,.0f} MiB/s" if self.disk_write_mib_per_s else "disk -"
        fsync = f"fsync p50 {self.fsync_p50_us:,.0f} µs" if self.fsync_p50_us else "fsync -"
        fs = f", {self.filesystem}" if self.filesystem else ""
        return (f"{self.cpu_model or 'unknown CPU'}, {disk}, {fsync}, {self.runtime or '-'}, "
                f"kernel {self.kernel or '-'}{fs}")

    def on_store(self) -> bool:
        return bool(self.filesystem) and self.filesystem.endswith(ON_LOOP)


ON_LOOP = "on a loop device (make store)"


def filesystem_says(fs: dict | None) -> str | None:
    """A result's data mount in a few words. A loop device is the copy-on-write store (state/cow_store): its
    figures are read through `make store-bias`, never as the disk's own."""
    if not isinstance(fs, dict) or not fs.get("fstype"):
        return None
    return f"{fs['fstype']} {ON_LOOP}" if str(fs.get("device", "")).startswith("/dev/loop") else fs["fstype"]


class CapacityStep(Model):
    """One step of a capacity search: the candidate's first criterion with its blocks due `multiple` times as often,
    every line of the criterion applied (the applier's busy share line included)."""
    multiple: float
    passed: bool
    steady: bool = True                         # False: it fell behind in its warm-up; no figure of it is its own
    error: bool = False                         # it measured nothing (neither a pass nor a failure)
    why: Optional[str] = None                   # the line it crossed, or why it was not steady
    busy: Optional[float] = None                # a block log's applier busy share
    busy_at_horizon: Optional[float] = None     # v12: that share carried by the candidate's rise (walks/capacity.Growth)
    lag_p99_blocks: Optional[float] = None
    p99_ms: Optional[float] = None              # the commit (behind a log: the acknowledgement) p99
    queryable_p99_ms: Optional[float] = None    # when a reader can see a block, from its due time
    cell: Optional[str] = None                  # <scenario>/<dir>

    def judged_busy(self) -> float | None:
        """The share its line was judged on: carried to the horizon where it was."""
        return self.busy_at_horizon if self.busy_at_horizon is not None else self.busy

    def says(self) -> str:
        """'2.31x: passed (applier 80% busy, 84% carried)', '1.72x: failed: applier 93% busy (< 85%)'."""
        carried = f", {self.busy_at_horizon:.0%} carried" if self.busy_at_horizon is not None else ""
        return (f"{self.multiple:.2f}x: {'passed' if self.passed else 'failed'}" + (f": {self.why}" if self.why else
                "") + (f" (applier {self.busy:.0%} busy{carried})" if self.busy is not None and self.passed else ""))


class Capacity(Model):
    """The largest multiple of the offered load at which every line of the criterion held, in one sitting."""
    of: str = ""                                # what was measured: "sqlite", "sqlite/leaf-current_history_block_log"
    mem: Optional[str] = None
    multiple: Optional[float] = None            # the largest multiple that passed (None: not even the smallest tried)
    fails_at: Optional[float] = None            # the smallest multiple that failed (None: none failed)
    ceiling: float                              # the search's top: passing there is "at least" it
    resolution: float                           # fails_at / multiple at most 1 + this, when the search converged
    steps: list[CapacityStep] = []
    error: Optional[str] = None                 # a step measured nothing (an engine error): the search stopped there
    sitting: Optional[str] = None               # the date (UTC) it was measured
    code: Optional[str] = None                  # the commit
    host: Host = Host()

    @property
    def at_least(self) -> bool:
        return self.multiple is not None and self.fails_at is None

    def figure(self) -> str:
        """'1.92x', '≥ 2.50x', '< 0.50x'."""
        if self.multiple is None:
            low = min((s.multiple for s in self.steps), default=None)
            return f"< {low:.2f}x" if low is not None else "-"
        return f"{'≥ ' if self.at_least else ''}{self.multiple:.2f}x"

    def binding(self) -> str:
        """What stopped it: the first failing step's line ('applier 88% busy (< 85%) at 2.10x')."""
        failed = next((s for s in sorted(self.steps, key=lambda s: s.multiple) if not s.passed), None)
        return f"{failed.why} at {failed.multiple:.2f}x" if failed is not None and failed.why else ""


class Headroom(Model):
    """A candidate that passed, and what more it carries. v9: `capacity` measured on it in this sitting; its label
    the smallest capacity on record for it (this sitting's included), `passed` when that is at least the
    within-sitting band. Before v9: a screen at m (the slowest sitting on record over this one) and its outcome."""
    multiple: float                             # v9: the within-sitting band the capacity is held against; before: m
    basis: str
    passed: bool
    screen: str = ""                            # before v9: the screen's outcome
    screen_cells: list[str] = []
    latency_over: list[str] = []                # before v9: deciding latencies times m that cross their lines
    screen_p99_ms: Optional[float] = None
    screen_busy: Optional[float] = None
    reference_ms: Optional[float] = None        # this sitting's reference figure (for the record, no multiple of it)
    capacity: Optional[Capacity] = None         # v9: measured on the candidate in this sitting
    smallest: Optional[float] = None            # v9: the smallest capacity on record (this sitting's included)
    smallest_from: Optional[str] = None         # v9: the sitting it came from
    sittings: int = 1                           # v9: sittings on record for it (same runtime)
    close_call: Optional[str] = None            # v11: why its own cells were a close call (no capacity measured)

    def at_m(self) -> str:
        """Before v9, the screen's figures at m: '(at 1.52x: p99 12 ms, applier 71% busy)'."""
        parts = [*([f"p99 {self.screen_p99_ms:,.0f} ms"] if self.screen_p99_ms is not None else []),
                 *([f"applier {self.screen_busy:.0%} busy"] if self.screen_busy is not None else [])]
        return f" (at {self.multiple:.2f}x: {', '.join(parts)})" if parts else ""

    def says(self) -> str:
        if self.close_call is not None:
            return f"passes today only: a close call ({self.close_call}), which more load does not measure"
        if self.capacity is not None:
            return self._says_capacity()
        if self.passed:
            return f"passes with headroom at {self.multiple:.2f}x the load{self.at_m()}"
        why = "; ".join([*([f"its screen {self.screen}"] if self.screen != "passed" else []), *self.latency_over])
        return f"passes today only: not at {self.multiple:.2f}x the load ({why}){self.at_m()}"

    def _says_capacity(self) -> str:
        c = self.capacity
        low = (f"; smallest on record {self.smallest:.2f}x ({self.smallest_from})"
               if self.smallest is not None and self.sittings > 1 else "")
        stop = (f", {c.binding()}" if c.binding() else "") + (f"; stopped on {c.error}" if c.error else "")
        if self.passed:
            return f"holds with headroom: carries {c.figure()} the load (line {self.multiple:g}x{stop}){low}"
        return f"passes today only: carries {c.figure()} the load, under the {self.multiple:g}x line{stop}{low}"


def fragile(cell) -> bool:
    """A pass without headroom: a matrix or leaf cell whose headroom check failed."""
    h = getattr(cell, "headroom", None)
    return cell.outcome == "pass" and h is not None and not h.passed
