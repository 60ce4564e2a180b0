"""The lines `harness run` prints about a finished run, read from its result.json (to stderr: stdout's last
line is the result's path)."""
from __future__ import annotations

import sys
from pathlib import Path

from harness import registry
from harness.results.design import block_log_line
from harness.results.phases import PHASE_LABELS, describe


def readers_text(plan: dict) -> str:
    """How many readers asked, and whether the machine's cores chose it (readers.threads: auto)."""
    r = plan.get("readers", {})
    return f"{r.get('threads', 0)} readers" + (" (auto: one per core here)" if r.get("threads_auto") else "")


def _print_block_split(r) -> None:
    """Where a block's time went: the engine's phases, or a block log's acknowledgement, apply and lag."""
    m = r.metrics
    if m.block_log is not None:
        print(f"  block log: {block_log_line(m.block_log)}", file=sys.stderr)
    elif (phases := phase_line(m.block_phases)) and not r.crash:
        print(f"  block phases: {phases}", file=sys.stderr)


def bounds_text(bounds, count: int, lead: str = "") -> str:
    """'[lo, hi]' (a percentile's one-sided 95% bounds), a side the count cannot bound said as such; '' without any."""
    if not bounds:
        return ""
    lo, hi = bounds
    missing = ("from either side" if lo is None and hi is None else "from above" if hi is None
               else "from below" if lo is None else "")
    return (f"{lead}[{'-' if lo is None else f'{lo:g}'}, {'-' if hi is None else f'{hi:g}'}]"
            + (f" ({count} values cannot bound it {missing})" if missing else ""))


def _print_thresholds(r, fmt) -> None:
    """PASS/FAIL on the measured value; a percentile's bounds and, where they straddle the line, so said."""
    for t in r.thresholds:
        judged = f"; {t.judged} on its bounds" if t.judged == "undecided" else ""
        print(f"  {'PASS' if t.passed else 'FAIL'} {t.expr}  (measured {fmt(t.value)}"
              f"{bounds_text(t.bounds, _count_of(r, t.expr), ', one-sided 95% bounds ')}{judged}"
              f"{'; ' + t.error if t.error else ''})", file=sys.stderr)


def _count_of(r, expr: str) -> int:
    """How many values a threshold's percentile was taken over: reads for read_ms, blocks else."""
    m = r.metrics
    return m.read_latency_ms.count if "read_ms" in expr else m.commit_latency_ms.count


def print_summary(path: Path) -> None:
    """A run's result as `make run` prints it: latency, reads by kind, counters, memory, thresholds."""
    from harness.results import load_result
    r = load_result(path)
    m, c = r.metrics, r.metrics.commit_latency_ms
    fmt = lambda v: "-" if v is None else f"{v:g}"  # noqa: E731
    print(f"{r.engine} {r.scenario}/{r.profile}: status {r.status}{' (' + r.error + ')' if r.error else ''}",
          file=sys.stderr)
    if r.crash:
        _print_crash(r)
    elif c.count or not m.reads_by_kind:
        print(f"  commit ms p50 {fmt(c.p50)} p99 {fmt(c.p99)}{bounds_text(c.p99_bounds, c.count, ', one-sided 95% bounds ')}, max {fmt(c.max)} (n={c.count}), "
              f"rows/s {fmt(m.rows_per_s)} of {fmt(m.offered_rows_per_s)} offered, integrity {r.integrity.ok}",
              file=sys.stderr)
    if m.reads_by_kind:
        rl = m.read_latency_ms
        print(f"  reads {fmt(m.reads_per_s)}/s by {readers_text(r.plan)}, ms p50 {fmt(rl.p50)} p95 {fmt(rl.p95)} p99 {fmt(rl.p99)} "
              f"max {fmt(rl.max)} (n={rl.count}), empty {m.reads_empty}, late {m.reads_late or 0}, errors {m.read_errors}, "
              f"integrity {r.integrity.ok}", file=sys.stderr)
        checked = any(k.checked is not None for k in m.reads_by_kind.values())
        print(f"  {'query':<22}{'count':>7}{'qps':>9}{'p50':>9}{'p95':>9}{'p99':>9}{'max':>9}{'rows':>8}{'empty':>7}"
              + (f"{'checked':>9}{'wrong':>7}" if checked else ""), file=sys.stderr)
        for name, k in m.reads_by_kind.items():
            print(f"  {name:<22}{k.count:>7}{fmt(k.qps):>9}{fmt(k.p50):>9}{fmt(k.p95):>9}{fmt(k.p99):>9}"
                  f"{fmt(k.max):>9}{fmt(k.mean_rows):>8}{k.empty:>7}"
                  + (f"{fmt(k.checked):>9}{fmt(k.wrong):>7}" if checked else ""), file=sys.stderr)
    _print_block_split(r)
    if r.engine_version:
        print(f"  engine {r.engine_version}", file=sys.stderr)
    mem = r.memory
    if mem.data_limit_bytes:
        # the sized settings as the engine reports them, beside the limit they were taken from
        keys = list(mem.sized_settings) or list(registry.manifest(r.engine).memory.sized)     # stock: the same ones
        read_back = ", ".join(f"{k} {r.engine_settings[k]}" for k in keys if k in r.engine_settings)
        print(f"  memory {mem.data_limit_bytes >> 20} MiB ({mem.enforcement}), policy {mem.policy}"
              f"{': ' + read_back if read_back else ''}", file=sys.stderr)
    if r.plan.get("durability"):
        print(f"  durability {r.plan['durability']}", file=sys.stderr)
    if m.engine_counters:
        ec = m.engine_counters
        ratio = f" (page cache hit ratio {ec.page_cache_hit_ratio:g})" if ec.page_cache_hit_ratio is not None else ""
        print(f"  engine counters over the measured phase: {', '.join(f'{k} {v}' for k, v in ec.measured.items())}"
              f"{ratio}; at its end: {', '.join(f'{k} {v}' for k, v in ec.at_end.items()) or '-'}", file=sys.stderr)
    if m.io is not None:
        print(f"  I/O over the measured phase: {m.io.summary()}", file=sys.stderr)
    h = m.harness
    # a server engine's runner is its client, outside MEM (plans before runner_is_client: the limits differ)
    client = (r.plan.get("memory") or {}).get("runner_is_client",
                                              r.memory.runner_limit_bytes_seen != r.memory.data_limit_bytes_seen)
    if h.inside_limit_bytes is not None and r.memory.data_limit_bytes_seen and not client:
        split = (f" (engine heap {h.engine_heap_bytes_end >> 20} MiB, harness {h.harness_bytes_end >> 20} MiB)"
                 if h.engine_heap_bytes_end is not None and h.harness_bytes_end is not None else "")
        print(f"  runner inside the {r.memory.data_limit_bytes_seen >> 20} MiB limit: {h.inside_limit_bytes >> 20} MiB RSS at "
              f"the measured phase's start, {(h.inside_limit_bytes_end or 0) >> 20} MiB at its end{split}", file=sys.stderr)
    _print_thresholds(r, fmt)
    for w in r.warnings:
        print(f"  warning: {w}", file=sys.stderr)


def phase_line(split) -> str | None:
    """Where a measured block's time went (result v9 metrics.block_phases), with each phase's p50/p99."""
    if split is None:
        return None
    ph = split.phases
    spread = ", ".join(f"{PHASE_LABELS[p]} p50 {ph[p].p50_ms:,.1f} p99 {ph[p].p99_ms:,.1f}"
                       for p in ph if ph[p].share >= 0.01)
    return f"{describe(split)} [ms: {spread}; biggest: {PHASE_LABELS[split.biggest]}]"


def kills_table(x) -> tuple[list[str], list[list]]:
    """A crash run's kills as (headers, rows): the summary prints it, the report shows it."""
    fmt = lambda v: "-" if v is None else f"{v:g}"    # noqa: E731
    replays = any(k.replayed_blocks is not None for k in x.kills)      # under a block log
    headers = ["kill", "aimed at", "landed in", "in flight", "acked", "found", "lost", "WAL MiB", "open s",
               "recovery s", "first commit s"] + (["unsynced KiB dropped"] if x.mode == "power_cut" else []) \
        + (["log blocks replayed", "replay s"] if replays else [])
    rows = [[i, k.aimed_at, k.landed_in, fmt(k.block_in_flight), k.last_acked_block,
             "CORRUPT" if k.corrupt else fmt(k.recovered_block), k.lost_acked_blocks,
             f"{k.wal_bytes / 2**20:.1f}" if k.wal_bytes is not None else "-", fmt(k.open_s), fmt(k.recovery_s),
             fmt(k.first_commit_s)] + ([fmt(round(k.dropped_bytes / 1024, 1)) if k.dropped_bytes is not None else "-"]
                                       if x.mode == "power_cut" else [])
            + ([fmt(k.replayed_blocks), fmt(k.replay_s)] if replays else []) for i, k in enumerate(x.kills, 1)]
    return headers, rows


def crash_lines(r) -> list[str]:
    """A crash run's kills, a line each, and its totals."""
    x, fmt = r.crash, (lambda v: "-" if v is None else f"{v:g}")
    s = r.metrics.service_time_ms
    headers, rows = kills_table(x)
    widths = [max(len(str(v)) for v in col) for col in zip(headers, *rows)]
    lines = [f"{x.acknowledged_blocks} blocks acknowledged (commit ms p50 {fmt(s.p50)} p99 {fmt(s.p99)}), "
             f"{len(x.kills)} SIGKILLs ({x.mode}), landed: " + ", ".join(f"{k} {n}" for k, n in sorted(x.landed.items()))]
    lines += ["  ".join(f"{v!s:>{w}}" for v, w in zip(row, widths)) for row in [headers, *rows]]
    rs = x.recovery_s
    lines.append(f"acknowledged blocks lost {x.lost_acked_blocks} ("
                 f"{'a failure: the settings promise none' if x.promised else 'allowed: the settings do not promise them'}), "
                 f"never-sent blocks found {x.unacked_blocks}, corrupt restarts {x.corrupt_restarts}; "
                 f"recovery s p50 {fmt(rs.p50)} max {fmt(rs.max)}; final check {x.final_ok}")
    return lines


def _print_crash(r) -> None:
    for line in crash_lines(r):
        print(f"  {line}", file=sys.stderr)
