"""The Data Center's entities (docs/reference.md, "Data Center Benchmark"): the reference's tables (statuses,
vm types, cores, RAM, events and their weights), deterministic ids and keys, each entity's fixed attributes
drawn from its id alone, its rows in any version, and where the model keeps each exact count. Nothing here
holds state: the model (dc.py) keeps a few integers an entity and rebuilds its rows from these."""
from __future__ import annotations

import bisect
import hashlib
from dataclasses import dataclass

from harness.workload.block import MAX_BLOCK
from harness.workload.entity import layout_rows, owner_address

NODES_PER_DC = 100_000
WORKLOADS_PER_NODE = 5
PAYLOAD_BYTES = 10 * 1024        # a node's config blob, a workload's job spec
EVENT_PAYLOAD_BYTES = 256        # the reference gives events no payload size; arkiv stores one per entity
LONG_LIVED_BTL = 1 << 40         # nodes and workloads never expire (expected.LONG_LIVED_BTL)
OWNER_BASE = 10_000              # DC d's entities are owned by address OWNER_BASE + d (mendoza's are 1..1000)

# The reference's attribute tables. Where it gives a share (70% of nodes available, 25% GPU, 15% of
# workloads pending) the weights hold it; the rest of each split is ours, stated here.
REGIONS = ("eu-west", "us-east", "asia-pac")
WORKLOAD_REGIONS = ("eu-west", "us-east", "any")
NODE_STATUS = (("available", 70), ("busy", 20), ("offline", 10))
VM_TYPES = (("cpu", 60), ("gpu", 25), ("gpu_large", 15))
CPU_COUNTS = (4, 8, 16, 32)
RAM_GB = (16, 32, 64, 128)
AVAIL_HOURS = (1, 4, 8, 24, 168)
WORKLOAD_STATUS = (("pending", 15), ("running", 35), ("completed", 45), ("failed", 5))
REQ_CPU = (1, 2, 4, 8)
REQ_RAM = (4, 8, 16, 32)
MAX_HOURS = (1, 2, 4, 8, 24)
# the write stream's event kinds, by weight
EVENTS = (("node_status", 30), ("submit", 25), ("assign", 20), ("complete", 20), ("fail", 5))
# share of a block's row budget the DC events take, per write mix (the rest is mendoza's)
WRITE_MIXES = {"mendoza_only": 0.0, "dc_light": 0.3, "dc_heavy": 0.7, "dc_only": 1.0}

NODE_STATUSES = tuple(s for s, _ in NODE_STATUS)
VM_NAMES = tuple(v for v, _ in VM_TYPES)
WORKLOAD_STATUSES = tuple(s for s, _ in WORKLOAD_STATUS)
PENDING, RUNNING, COMPLETED, FAILED = range(4)


def weighted(pairs) -> tuple[list[int], int]:
    cum, acc = [], 0
    for _, w in pairs:
        acc += w
        cum.append(acc)
    return cum, acc


def _pick(pairs, u: int) -> int:
    """The index of pairs chosen by a uniform integer u (any size), in proportion to the weights."""
    cum, total = weighted(pairs)
    return bisect.bisect_right(cum, u % total)


def node_id(dc: int, n: int) -> str:
    return f"node_{dc:02d}_{n:06d}"


def workload_id(dc: int, w: int) -> str:
    return f"wl_{dc:02d}_{w:06d}"


def dc_name(dc: int) -> str:
    return f"dc_{dc:02d}"


def dc_key(seed: int, sid: str) -> bytes:
    """An entity's key from its deterministic id (mendoza's keys hash an integer: no collision)."""
    return hashlib.blake2b(f"{seed}:{sid}".encode(), digest_size=32).digest()


def _draws(seed: int, sid: str) -> bytes:
    return hashlib.blake2b(f"{seed}:{sid}:attrs".encode(), digest_size=16).digest()


@dataclass(frozen=True)
class NodeAttrs:
    region: str
    vm: int            # index into VM_TYPES
    cpu: int           # index into CPU_COUNTS
    ram: int           # index into RAM_GB
    price_cents: int
    avail_hours: int
    seed_status: int   # index into NODE_STATUS, at the seed


def node_attrs(seed: int, dc: int, n: int) -> NodeAttrs:
    """A node's fixed attributes (and its status at the seed): from its id alone."""
    h = _draws(seed, node_id(dc, n))
    return NodeAttrs(REGIONS[h[0] % 3], _pick(VM_TYPES, h[1] << 8 | h[2]), h[3] % 4, h[4] % 4,
                     50 + (h[5] << 8 | h[6]) % 451, AVAIL_HOURS[h[7] % 5], _pick(NODE_STATUS, h[8] << 8 | h[9]))


@dataclass(frozen=True)
class WorkloadAttrs:
    region: str
    vm: int
    req_cpu: int
    req_ram: int
    max_hours: int
    seed_status: int   # index into WORKLOAD_STATUS, at the seed


def workload_attrs(seed: int, dc: int, w: int) -> WorkloadAttrs:
    h = _draws(seed, workload_id(dc, w))
    return WorkloadAttrs(WORKLOAD_REGIONS[h[0] % 3], _pick(VM_TYPES, h[1] << 8 | h[2]), REQ_CPU[h[3] % 4],
                         REQ_RAM[h[4] % 4], MAX_HOURS[h[5] % 5], _pick(WORKLOAD_STATUS, h[6] << 8 | h[7]))


def _payload(seed: int, sid: str, nonce: int, nbytes: int) -> bytes:
    return hashlib.shake_128(b"%d:%s:%d" % (seed, sid.encode(), nonce)).digest(nbytes)


def _system(seed: int, sid: str, dc: int, created_at: int, expiration: int, sequence: int):
    owner = owner_address(OWNER_BASE + dc)
    key = dc_key(seed, sid)
    return key, [("$owner", owner), ("$creator", owner), ("$key", "0x" + key.hex())], \
        [("$expiration", expiration), ("$createdAtBlock", created_at), ("$sequence", sequence)]


def node_rows(seed: int, dc: int, n: int, status: int, nonce: int, from_block: int, created_at: int,
              variant: str, to_block: int = MAX_BLOCK) -> dict[str, list[tuple]]:
    a, sid = node_attrs(seed, dc, n), node_id(dc, n)
    key, sys_s, sys_n = _system(seed, sid, dc, created_at, created_at + LONG_LIVED_BTL, dc * 10**8 + n)
    strings = sys_s + [("type", "node"), ("node_id", sid), ("dc_id", dc_name(dc)), ("region", a.region),
                       ("status", NODE_STATUSES[status]), ("vm_type", VM_NAMES[a.vm])]
    numerics = sys_n + [("cpu_count", CPU_COUNTS[a.cpu]), ("ram_gb", RAM_GB[a.ram]), ("price_hour", a.price_cents),
                        ("avail_hours", a.avail_hours)]
    return layout_rows(key, from_block, to_block, strings, numerics, _payload(seed, sid, nonce, PAYLOAD_BYTES),
                       "application/json", variant)


def workload_rows(seed: int, dc: int, w: int, nodes_per_dc: int, status: int, assigned: bool, nonce: int,
                  from_block: int, created_at: int, variant: str, to_block: int = MAX_BLOCK) -> dict[str, list[tuple]]:
    a, sid = workload_attrs(seed, dc, w), workload_id(dc, w)
    key, sys_s, sys_n = _system(seed, sid, dc, created_at, created_at + LONG_LIVED_BTL, dc * 10**8 + 50_000_000 + w)
    strings = sys_s + [("type", "workload"), ("workload_id", sid), ("dc_id", dc_name(dc)),
                       ("status", WORKLOAD_STATUSES[status]),
                       ("assigned_node", node_id(dc, w % nodes_per_dc + 1) if assigned else ""),
                       ("region", a.region), ("vm_type", VM_NAMES[a.vm])]
    numerics = sys_n + [("req_cpu", a.req_cpu), ("req_ram", a.req_ram), ("max_hours", a.max_hours)]
    return layout_rows(key, from_block, to_block, strings, numerics, _payload(seed, sid, nonce, PAYLOAD_BYTES),
                       "application/json", variant)


def event_id(seq: int) -> str:
    return f"ev_{seq:010d}"


def event_rows(seed: int, seq: int, dc: int, on_node: bool, subject: int, event: str, old: str, new: str,
               block: int, expiration: int, variant: str, to_block: int = MAX_BLOCK) -> dict[str, list[tuple]]:
    sid = event_id(seq)
    key, sys_s, sys_n = _system(seed, sid, dc, block, expiration, seq)
    strings = sys_s + [("type", "node_event" if on_node else "workload_event"), ("dc_id", dc_name(dc)),
                       ("node_id" if on_node else "workload_id",
                        node_id(dc, subject) if on_node else workload_id(dc, subject)),
                       ("event_type", event), ("old_status", old), ("new_status", new)]
    numerics = sys_n + [("block", block)]
    return layout_rows(key, block, to_block, strings, numerics, _payload(seed, sid, 0, EVENT_PAYLOAD_BYTES),
                       "application/json", variant)


def seed_entity_rows(seed: int, nodes_per_dc: int, variant: str, kind: str, dc: int, number: int, created: int,
                     from_block: int, nonce: int, to_block: int = MAX_BLOCK) -> dict[str, list[tuple]]:
    """One version of a seed entity from its id alone (its status is its seed status: a history pass keeps it):
    what DcModel.load_seed leaves, without the model (a state build's workers)."""
    if kind == "node":
        return node_rows(seed, dc, number, node_attrs(seed, dc, number).seed_status, nonce, from_block, created,
                         variant, to_block)
    return workload_rows(seed, dc, number, nodes_per_dc, workload_attrs(seed, dc, number).seed_status, True, nonce,
                         from_block, created, variant, to_block)


def node_count_index(dc: int, status: int, vm: int, cpu: int, ram: int) -> int:
    """Where the count of DC dc's nodes of that status, vm type, cpu and ram (indexes) is kept."""
    return ((((dc - 1) * 3 + status) * 3 + vm) * 4 + cpu) * 4 + ram


def workload_count_index(dc: int, status: int) -> int:
    return (dc - 1) * 4 + status


def nodes_matching(counts, dc: int, status: int, vm: int, min_cpu: int = 0, min_ram_gb: int = 0) -> int:
    """From node counts (node_count_index's layout): DC dc's nodes of that status and vm type with at least
    that many cores and GB."""
    return sum(counts[node_count_index(dc, status, vm, ci, ri)] for ci in range(4) if CPU_COUNTS[ci] >= min_cpu
               for ri in range(4) if RAM_GB[ri] >= min_ram_gb)


@dataclass(frozen=True)
class DcSpec:
    data_centres: int
    fraction: float = 1.0                       # of a DC's 100K nodes and 500K workloads
    write_share: float = 0.7                    # of a block's row budget (WRITE_MIXES)
    event_btl_blocks: tuple[int, int] = (150, 9000)
    history_versions: int | None = None         # the seed's own revision passes; None: the load's (WorkloadSpec)

    @property
    def nodes_per_dc(self) -> int:
        return max(1, round(NODES_PER_DC * self.fraction))

    @property
    def entities(self) -> int:
        return self.data_centres * self.nodes_per_dc * (1 + WORKLOADS_PER_NODE)
