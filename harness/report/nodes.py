"""Which node each cell ran on, and whether the nodes are alike enough for their cells to share one table.
A placed walk's cells run on several machines: a faster disk or another CPU there is no engine's merit.
Nodes are unlike when their CPU model or count, their RAM, their data disk's filesystem, or their probes
(the fsync floor's p50, sequential write bandwidth) differ by more than the probes' own noise."""
from __future__ import annotations

from harness.errors import ConfigError

PROBE_RATIO = 2.0         # a probe within 2x of another node's is noise on a busy machine, not another disk


def identity(env: dict) -> dict:
    fs = env.get("filesystem") or {}
    return {"node": env.get("node") or env.get("hostname"), "cpu_model": env.get("cpu_model"),
            "cpus": env.get("cpus_usable", env.get("cpu_count")), "ram_gib": round((env.get("ram_bytes") or 0) / 2**30),
            "filesystem": fs.get("fstype"), "fsync_p50_us": (env.get("fsync_floor") or {}).get("p50_us"),
            "write_mib_s": (env.get("disk_write") or {}).get("sequential_write_mib_per_s")}


def differences(a: dict, b: dict) -> list[str]:
    out = [f"{k} {a[k]} vs {b[k]}" for k in ("cpu_model", "cpus", "ram_gib", "filesystem") if a[k] != b[k]]
    for k in ("fsync_p50_us", "write_mib_s"):
        x, y = a[k], b[k]
        if x and y and max(x, y) / min(x, y) > PROBE_RATIO:
            out.append(f"{k} {x:g} vs {y:g}")
    return out


def by_node(cells) -> dict[str, dict]:
    """Each node's identity, from the first cell that ran there (a runner killed before it looked around,
    an OOM at start-up say, says nothing of its node)."""
    out: dict[str, dict] = {}
    for c in cells:
        ident = identity(c.result.environment)
        if ident["node"] and ident["cpu_model"]:
            out.setdefault(ident["node"], ident)
    return out


def check(cells, mixed_nodes: bool) -> str | None:
    """None on one node; a caveat when several; raises ConfigError for unlike nodes unless mixed_nodes."""
    nodes = by_node(cells)
    if len(nodes) < 2:
        return None
    (first, ref), *rest = nodes.items()
    unlike = {n: d for n, i in rest if (d := differences(ref, i))}
    if not unlike:
        return f"the cells ran on {len(nodes)} alike nodes ({', '.join(nodes)}): same CPU, RAM and filesystem, " \
               f"probes within {PROBE_RATIO:g}x"
    said = "; ".join(f"{n} differs from {first}: {', '.join(d)}" for n, d in unlike.items())
    if not mixed_nodes:
        raise ConfigError(f"report: the cells ran on unlike nodes ({said}); their figures do not compare in one "
                          "table. Report each node's cells apart, or give --mixed-nodes (MIXED_NODES=1) to put them "
                          "side by side anyway; the report then says so")
    return f"cells from unlike nodes are compared side by side (--mixed-nodes): {said}"
