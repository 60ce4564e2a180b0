"""Which node each cell ran on, and whether the nodes are alike enough for their cells to share one table.
A placed walk's cells run on several machines: a faster disk or another CPU there is no engine's merit.
Nodes are unlike when their CPU model or count, their RAM, their data disk's filesystem, or their probes
(the fsync floor's p50, sequential write bandwidth) differ by more than the probes' own noise. One node can
also change under a long walk: its disk's probes, cell by cell against its first cell's, say when it slowed."""
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


# A node's disk over a walk: each cell's probes (taken as it starts) against its first cell's on that node.
DRIFT_PROBES = (("fsync_floor", "p99_us", "fsync p99"), ("disk_random_read", "p50_us", "random 4 KiB read p50"))


def drift(cells) -> str | None:
    """A caveat where a node's disk probe moved past PROBE_RATIO of its first cell's during the run (the machine
    slowed, or something else ran): the cells after it measured a slower disk, not a slower engine."""
    out, per_node = [], {}
    for c in sorted(cells, key=lambda c: c.result.environment.get("started_utc") or ""):
        per_node.setdefault(identity(c.result.environment)["node"], []).append(c)
    for node, mine in per_node.items():
        if node is None:            # a runner that died before looking around says nothing of its disk
            continue
        for probe, field, name in DRIFT_PROBES:
            seen = [(c, v) for c in mine if (v := (c.result.environment.get(probe) or {}).get(field))]
            if len(seen) < 2:
                continue
            first, base = seen[0]
            worst, most = max(seen[1:], key=lambda cv: _spread(cv[1], base))
            if _spread(most, base) > PROBE_RATIO:
                out.append(f"{name} {base:,.0f} µs at its first cell ({first.scenario}/{first.run_dir.name}), "
                           f"{most:,.0f} µs at {worst.scenario}/{worst.run_dir.name}")
    if not out:
        return None
    return (f"the disk moved through this run by more than {PROBE_RATIO:g}x (probed as each cell started): "
            f"{'; '.join(out)}. Cells run on the slower disk are slower for it, not for their engine or design; "
            "the environment table has every cell's probes")


def _spread(a: float, b: float) -> float:
    """How many times apart two probes are, either way (a disk that got faster moved as much as one that slowed)."""
    return max(a / b, b / a)
