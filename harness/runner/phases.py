"""Where a block's time goes: the engine's own phases of each apply_block (EngineBase.block_phases: its
statements, its COMMIT, the checkpoint that ran inside the commit), the rest of the service time, and
the CPU the engine's processes spent on the block, so a cell reads as CPU-bound or I/O-bound."""
from __future__ import annotations

import os
import resource
from array import array
from pathlib import Path

from harness.results.phases import ENGINE_PHASES, PHASES
from harness.runner.metrics import percentile_rank

CLOCK_TICK_S = 1 / os.sysconf("SC_CLK_TCK")


class CpuProbe:
    """The CPU seconds (user, system) of the processes that hold the engine: this runner for an embedded
    engine (every thread: the engine's own workers included), or every process of a server engine's cgroup
    when the runner can see it (the local runtime). None where it cannot (a server in its own container)."""

    def __init__(self, server_cgroup: Path | None, server: bool) -> None:
        self.server, self.procs = server, (server_cgroup / "cgroup.procs") if server_cgroup else None

    @property
    def visible(self) -> bool:
        return not self.server or self.procs is not None

    def read(self) -> tuple[float, float] | None:
        if not self.server:
            r = resource.getrusage(resource.RUSAGE_SELF)
            return r.ru_utime, r.ru_stime
        if self.procs is None:
            return None
        user = sys_ = 0
        try:
            pids = self.procs.read_text().split()
        except OSError:
            return None
        for pid in pids:
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue          # gone since the listing: its last ticks are lost (a server's backends stay)
            user, sys_ = user + int(fields[11]), sys_ + int(fields[12])
        return user * CLOCK_TICK_S, sys_ * CLOCK_TICK_S


def cpu_delta_ms(before: tuple[float, float] | None, after: tuple[float, float] | None) -> tuple[float, float] | None:
    """(user, system) ms between two CpuProbe.read()s; None where either was not visible."""
    if before is None or after is None:
        return None
    return (after[0] - before[0]) * 1000, (after[1] - before[1]) * 1000


class PhaseLog:
    """Per measured block: each phase (ms) and the engine's CPU (ms; NaN where not visible)."""

    def __init__(self) -> None:
        self.ms = {p: array("d") for p in PHASES}
        self.cpu_user_ms, self.cpu_sys_ms = array("d"), array("d")
        self.timed: set[str] = set()       # the phases the engine timed at least once

    def add(self, service_ms: float, phases: dict[str, float] | None, cpu_ms: tuple[float, float] | None) -> None:
        phases = phases or {}
        self.timed.update(phases)
        known = 0.0
        for p in ENGINE_PHASES:
            v = float(phases.get(p, 0.0))
            self.ms[p].append(v)
            known += v
        self.ms["other"].append(service_ms - known)
        user, sys_ = cpu_ms if cpu_ms else (float("nan"), float("nan"))
        self.cpu_user_ms.append(user)
        self.cpu_sys_ms.append(sys_)

    CSV_COLUMNS = tuple(f"phase_{p}_ms" for p in PHASES) + ("cpu_user_ms", "cpu_sys_ms")

    def csv_fields(self, i: int) -> str:
        vals = [self.ms[p][i] for p in PHASES] + [self.cpu_user_ms[i], self.cpu_sys_ms[i]]
        return ",".join("" if v != v else f"{v:.3f}" for v in vals)


def summarise(log: PhaseLog, service_ms: list[float]) -> dict | None:
    """Each phase's p50/p99/mean and share of the summed service time; the engine's CPU against the blocks'
    wall time; the biggest phase. None before any measured block."""
    n = len(service_ms)
    if not n:
        return None
    total = sum(service_ms) or 1e-9
    phases = {}
    for p in PHASES:
        vals = sorted(log.ms[p])
        phases[p] = {"p50_ms": round(_pct(vals, 50), 3), "p99_ms": round(_pct(vals, 99), 3),
                     "mean_ms": round(sum(vals) / n, 3), "share": round(sum(vals) / total, 4)}
    out = {"blocks": n, "service_mean_ms": round(total / n, 3), "phases": phases,
           "timed": [p for p in ENGINE_PHASES if p in log.timed],
           "biggest": max(PHASES, key=lambda p: phases[p]["share"])}
    user = [v for v in log.cpu_user_ms if v == v]
    if len(user) == n:
        sys_ = list(log.cpu_sys_ms)
        out["cpu"] = {"user_mean_ms": round(sum(user) / n, 3), "sys_mean_ms": round(sum(sys_) / n, 3),
                      "share": round((sum(user) + sum(sys_)) / total, 4)}
    return out


def _pct(sorted_vals, pct: float) -> float:
    return sorted_vals[percentile_rank(pct, len(sorted_vals)) - 1] if sorted_vals else 0.0
