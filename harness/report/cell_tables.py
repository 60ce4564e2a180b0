"""How a report names one cell: its memory and policy, its start, its durability, the harness's share of the
limit, its thresholds, its environment row and its reads by query kind."""
from __future__ import annotations

from harness.report.blocks import Block, _f
from harness.report.collect import CellData
from harness.units import format_bytes


def thresholds_text(c: CellData) -> str:
    return "; ".join(f"{'✔' if t.passed else '✘'} {t.expr} = {_f(t.value, 2)}" + (f" ({t.error})" if t.error else "")
                     + (f" ({t.note})" if t.note else "")
                     for t in c.result.thresholds)


def memory_given(c: CellData) -> str:
    """The limit, the policy, and the engine's own cache under it."""
    m = c.result.memory
    cache = f": cache {format_bytes(m.engine_cache_bytes)}" if m.engine_cache_bytes else ""
    return f"{c.mem_label} ({m.policy}{cache})" if m.data_limit_bytes else c.mem_label


def start_text(load: dict) -> str:
    """Cold (the clone evicted) or preloaded inside the limit, with what stayed resident."""
    if load.get("preload"):
        return (f"preloaded in {_f(load.get('preload_s'))} s, {format_bytes(load.get('resident_bytes_after_preload'))} "
                f"of {format_bytes(load.get('preload_bytes'))} resident")
    return "cold" if load.get("method") == "state" else "-"


def durability_text(plan: dict) -> str:
    """What a commit guarantees at the run's settings (engine.toml [durability]), its first clause: up to its
    first colon outside parentheses (a design's text holds its engine's, colon and all, in parentheses)."""
    text, depth = plan.get("durability") or "-", 0
    for i, ch in enumerate(text):
        depth += (ch == "(") - (ch == ")")
        if ch == ":" and depth == 0:
            return text[:i]
    return text


def harness_share(c: CellData) -> str:
    """The harness's own memory inside the limit, beside the limit (a server engine's runner is outside)."""
    h = c.result.metrics.harness
    if h.inside_limit_bytes is None:
        return "-"
    if c.result.memory.runner_limit_bytes_seen != c.result.memory.data_limit_bytes_seen:
        return "0 (client outside MEM)"
    out = f"{format_bytes(h.inside_limit_bytes)} → {format_bytes(h.inside_limit_bytes_end)} of {c.mem_label}"
    if h.engine_heap_bytes_end is not None and h.harness_bytes_end is not None:
        out += f" (engine {format_bytes(h.engine_heap_bytes_end)}, harness {format_bytes(h.harness_bytes_end)})"
    return out


def pct(v) -> str:
    return "-" if v is None else f"{v:.0%}"


def starting_database(load: dict) -> str:
    """How the cell's database was made: a cloned state (its build, the clone) or the organic load; then
    the ageing blocks."""
    if load.get("method") == "state":
        how = "moved in (no later cell cloned it)" if load.get("clone_method") == "move" else \
            f"cloned ({load.get('clone_method')})"
        out = (f"state built by {load.get('build_method')} load in {_f(load.get('build_s'), 0)} s, {how} "
               f"in {_f(load.get('clone_s'))} s, page cache evicted")
    elif load:
        out = f"organic load (row by row) in {_f(load.get('seconds'), 0)} s"
    else:
        return "-"
    if load.get("state_aged_blocks"):
        return out + f"; aged {load['state_aged_blocks']} blocks in the state (once, shared by the cells that clone it)"
    return out + (f"; aged {load['age_blocks']} blocks ({load.get('age_rows')} rows)" if load.get("age_blocks") else "")


def memory_text(m) -> str:
    """The limit, how it was enforced, the policy and the engine's cache under it; a server's client's own."""
    out = f"{format_bytes(m.data_limit_bytes_seen)} ({m.enforcement}), {m.policy}"
    if m.sized_settings:
        out += ": " + ", ".join(f"{k}={v}" for k, v in m.sized_settings.items())
    if m.runner_limit_bytes_seen != m.data_limit_bytes_seen:
        out += f"; client {format_bytes(m.runner_limit_bytes_seen)}"
    return out


def environment_table(cells: list[CellData]) -> Block:
    headers = ["cell", "node", "engine (driver)", "settings read back", "memory limit (enforced by)", "runtime / image", "CPU",
               "RAM", "fsync p50/p99 µs", "fsync p99 at its end µs", "outside CPU (cores)",
               "disk write MiB/s seq/random", "random 4 KiB read p50/p99 µs",
               "scale / entities", "starting database", "harness"]
    rows = []
    for c in cells:
        r, env = c.result, c.result.environment
        fs, disk, rd = env.get("fsync_floor") or {}, env.get("disk_write") or {}, env.get("disk_random_read") or {}
        seen = env.get("watch") or {}           # harness/cell.py: the machine watched while it ran
        limit = memory_text(r.memory)
        settings = ", ".join(f"{k}={v}" for k, v in r.engine_settings.items())
        version = "; ".join([r.engine_version or "-", *(f"{k} {v}" for k, v in r.engine_related_versions.items())])
        rows.append([f"{c.scenario}/{c.run_dir.name}", env.get("node") or env.get("hostname") or "-", version,
                     settings or "-", limit,
                     f"{r.runtime} {(r.image_id or '')[:19]}".strip(),
                     f"{env.get('cpu_model', '?')} × {env.get('cpus_usable', env.get('cpu_count', '?'))}",
                     format_bytes(env.get("ram_bytes")), f"{_f(fs.get('p50_us'))} / {_f(fs.get('p99_us'))}",
                     _f((seen.get("fsync_floor_end") or {}).get("p99_us")), _f(seen.get("outside_cpu_cores"), 2),
                     f"{_f(disk.get('sequential_write_mib_per_s'), 0)} / {_f(disk.get('random_write_mib_per_s'), 0)}",
                     f"{_f(rd.get('p50_us'))} / {_f(rd.get('p99_us'))}",
                     f"{r.scale:g} / {r.plan.get('load_entities', '-')}", starting_database(r.load or {}),
                     f"{env.get('harness_version')} {(env.get('git_commit') or '')[:12]}"])
    return Block("table", headers=headers, rows=rows)


def reads_by_kind_table(cells: list[CellData]) -> Block | None:
    """Per cell with readers, its mix's latency by query kind (from each query's intended start)."""
    rows = []
    for c in cells:
        m = c.result.metrics
        mix = c.result.plan.get("readers", {}).get("mix")
        for kind, k in (m.reads_by_kind or {}).items():
            rows.append([c.label, mix if isinstance(mix, str) else "custom", kind, k.count, _f(k.qps),
                         _f(k.p50, 3), _f(k.p95, 3), _f(k.p99, 3), _f(k.max, 3), _f(k.mean_rows, 2), k.empty,
                         "-" if k.checked is None else f"{k.checked - (k.wrong or 0)}/{k.checked}"])
    if not rows:
        return None
    return Block("table", headers=["cell", "mix", "query", "count", "QPS", "p50 ms", "p95 ms", "p99 ms", "max ms",
                                   "rows", "empty", "right / checked"], rows=rows)
