"""What a state will take on disk before it is built: from the largest state of the same engine and schema
built near its size, else a guess that errs high."""
from __future__ import annotations

import json
from pathlib import Path

from harness.state import store
from harness.state.store import MANIFEST, StateInputs, StateManifest
from harness.workload import dc_tables
from harness.workload.generator import DC_ROWS_PER_ENTITY
from harness.workload.shapes import SHAPES

# Before a state of the engine and variant was built near the size asked: a guess that errs high (3 bytes
# on disk per logical byte, for the indexes and page slack); after, the bytes per entity of the largest one.
GUESS_BYTES_PER_LOGICAL = 3.0
NEAR_SHARE = 10          # a built state estimates another of at most this many times its entities


LEDGER = "sizes.json"    # beside the states: what each engine and variant's largest build took, kept after it goes


def _key(inputs: StateInputs) -> str:
    return f"{inputs.engine}/{inputs.variant}/{inputs.shape}"


def _versions(inputs: StateInputs) -> int:
    """The entity versions a state holds: its load's history passes leave ended ones beside the current (the
    simple schema keeps none)."""
    return inputs.entities * (1 + (inputs.history_versions if inputs.variant != "simple" else 0))


def _dc_key(inputs: StateInputs) -> str:
    return f"{inputs.engine}/{inputs.variant}/dc"


def remember(root: Path, man: StateManifest) -> None:
    """A bulk build's bytes per entity version in the ledger, where it is the largest of its kind yet: a state moved
    into its last cell (DROP_STATES=1) still sizes the next build (5x from 1x). Mendoza's entities per engine,
    variant and shape; a DC seed's versions per engine and variant, from a DC-only build (a DC beside mendoza
    would need mendoza's share taken out of its bytes: a probe builds the two apart, probe.py)."""
    inputs = man.inputs
    if inputs.aged:
        return
    if inputs.dc and not inputs.entities:
        _keep(root, _dc_key(inputs), dc_seed_versions(inputs), man)
    elif inputs.entities and not inputs.dc:
        _keep(root, _key(inputs), _versions(inputs), man)


def _keep(root: Path, key: str, versions: int, man: StateManifest) -> None:
    ledger = _ledger(root)
    was = ledger.get(key)
    if versions and (was is None or was["entities"] <= versions):
        ledger[key] = {"entities": versions, "data_bytes": man.data_bytes, "state": man.id, "built_utc": man.built_utc}
        (root / LEDGER).write_text(json.dumps(ledger, indent=2, sort_keys=True))


def _ledger(root: Path) -> dict:
    try:
        return json.loads((root / LEDGER).read_text())
    except (OSError, ValueError):
        return {}


def _built_per_entity(root: Path, inputs: StateInputs) -> float | None:
    """Bytes per entity of the largest build of the engine and variant near the size asked (on disk, or in the
    ledger), else None. A state far smaller than the one asked says little of it: a PostgreSQL cluster's fixed
    ~40 MB over a few hundred entities would make 1x look three times its size."""
    built = []
    for path in root.glob(f"*/{MANIFEST}"):
        try:
            man = StateManifest.model_validate_json(path.read_text())
        except (OSError, ValueError):
            continue
        if man.inputs.engine == inputs.engine and man.inputs.variant == inputs.variant and man.inputs.entities \
                and not man.inputs.dc:
            built.append((_versions(man.inputs), man.data_bytes / _versions(man.inputs)))
    was = _ledger(root).get(_key(inputs))
    if was:
        built.append((was["entities"], was["data_bytes"] / was["entities"]))
    near = [b for b in built if b[0] * NEAR_SHARE >= _versions(inputs)]
    return max(near)[1] if near else None


def _built_per_dc_version(root: Path, inputs: StateInputs) -> float | None:
    """Bytes per DC seed version of the largest DC-only build of the engine and variant near the size asked."""
    was = _ledger(root).get(_dc_key(inputs))
    near = was and was["entities"] * NEAR_SHARE >= dc_seed_versions(inputs)
    return was["data_bytes"] / was["entities"] if near else None


def is_guess(root: Path, inputs: StateInputs) -> bool:
    """estimate_bytes has no build near this size to go by, for mendoza's entities or the DC seed: the shape's
    guess, which errs high."""
    return mendoza_guessed(root, inputs) or dc_guessed(root, inputs)


def mendoza_guessed(root: Path, inputs: StateInputs) -> bool:
    return bool(inputs.entities) and _built_per_entity(root, inputs) is None


def dc_guessed(root: Path, inputs: StateInputs) -> bool:
    return bool(inputs.dc) and _built_per_dc_version(root, inputs) is None


def all_versions(inputs: StateInputs) -> int:
    """Every entity version a state holds: mendoza's and its DC seed's."""
    return _versions(inputs) + dc_seed_versions(inputs)


def estimate_bytes(root: Path, inputs: StateInputs) -> int:
    shape = SHAPES[inputs.shape]
    logical = (shape.payload_bytes_min + shape.payload_bytes_max) / 2 + 120 * shape.rows_per_entity
    per_entity = _built_per_entity(root, inputs) or GUESS_BYTES_PER_LOGICAL * logical
    per_dc_version = _built_per_dc_version(root, inputs) or \
        GUESS_BYTES_PER_LOGICAL * (dc_tables.PAYLOAD_BYTES + 120 * DC_ROWS_PER_ENTITY)
    return int(per_entity * _versions(inputs) + per_dc_version * dc_seed_versions(inputs))


def required_bytes(root: Path, inputs: StateInputs) -> int:
    """What a build must find free before it starts: its estimate, or with no build near this size to go by,
    only the logical bytes (the shape's guess errs high: 18.1 GiB for SQLite's 1x state of 10.2 GiB); a disk
    that fills after is the build's failure, its partial removed."""
    need = estimate_bytes(root, inputs)
    return int(need / GUESS_BYTES_PER_LOGICAL) if is_guess(root, inputs) else need


def dc_seed_entities(inputs: StateInputs) -> int:
    """The Data Center seed's nodes and workloads in a state (0 without one)."""
    if not inputs.dc:
        return 0
    return dc_tables.DcSpec(int(inputs.dc["data_centres"]), float(inputs.dc["fraction"])).entities


def dc_seed_versions(inputs: StateInputs) -> int:
    """The seed's entity versions: its history passes (its own, else the load's) leave ended ones beside each."""
    passes = (inputs.dc or {}).get("history_versions", inputs.history_versions)
    return dc_seed_entities(inputs) * (1 + (int(passes) if inputs.variant != "simple" else 0))


UNTHROTTLED_BLOCK_MS = 100       # an unthrottled block's time for the headroom's guess (none faster here)
# The feed's spool of warmup + measure, per offered row: 158-352 B at p99_5x on 2026-12-02 (SQLite 164, DuckDB's
# Arrow batches 352, a block log's records 314-327; reorg's small blocks 560, a few MB in all). Above p99_5x's
# highest, not far: at 5x for an hour the spool is ~8 GB of a disk the state's 52 GiB leaves ~25 GiB of
SPOOL_BYTES_PER_ROW = 400


def growth_bytes(plan, state_bytes: int) -> int:
    """About what a cell writes on the data mount beyond its starting state: the rows it offers over warm-up and
    the measured phase at the state's own bytes per row, and the feed's spool of them. It errs high (deletes and
    expiries give pages back); the WAL is left out, kept small by checkpoints."""
    inputs = store.inputs_for(plan)
    load_rows = (_versions(inputs) * store.SHAPES[inputs.shape].rows_per_entity
                 + dc_seed_entities(inputs) * DC_ROWS_PER_ENTITY)      # a DC state: its seed's rows
    if not load_rows:
        return 0
    interval_s = (plan.workload.block_interval_ms or UNTHROTTLED_BLOCK_MS) / 1000
    rows = (plan.phases.warmup_s + plan.phases.measure_s) / interval_s * plan.workload.rows_per_block
    return int(state_bytes * rows / load_rows + rows * SPOOL_BYTES_PER_ROW)


def clone_bytes(state_bytes: int, growth: int, shares: bool) -> int:
    """A clone's own bytes on disk: the state's, or where the clone shares its extents (make store) the pages its
    cell rewrites, each unshared once: about the cell's writes again (an estimate that errs high, as growth's)."""
    return min(state_bytes, growth) if shares else state_bytes


def clone_fits(plan, state_bytes: int, state_dir: Path) -> bool:
    """Whether this cell's clone and its writes fit on the disk as it is now. Where they do not, the cell moves
    its state in, and the next cell that needs the state builds it again (cell.start_state): decided when the
    cell starts, from the disk then, since what earlier cells left depends on how the walk went."""
    from harness.state.clone import shares_extents
    growth = growth_bytes(plan, state_bytes)
    shares = shares_extents(state_dir, Path(plan.data_dir))
    return clone_bytes(state_bytes, growth, shares) + growth + store.MARGIN_BYTES <= store.free_bytes(state_dir)


# A packed state's bytes over its data's (pack.py, zstd level 1), erring high: what the disk checks and a cell's
# choice to pack count before a state is packed. SQLite's aged 1x state packed to 0.51 of its bytes here, 12-07
# (docs/states.md, "A packed state"); its random payloads do not compress.
PACKED_SHARE = 0.55


def packed_bytes(state_bytes: int) -> int:
    return int(state_bytes * PACKED_SHARE)


def pack_fits(plan, state_bytes: int, state_dir: Path) -> bool:
    """Whether packing the state (pack.py) makes room for this cell's clone and its writes, where a clone beside it
    does not fit: the packed files are written beside the data, the data removed, then each cell unpacks a full
    copy. Decided as clone_fits is, when the cell starts, from the disk then."""
    growth, free, packed = growth_bytes(plan, state_bytes), store.free_bytes(state_dir), packed_bytes(state_bytes)
    return packed + store.MARGIN_BYTES <= free and \
        state_bytes + growth + store.MARGIN_BYTES <= free + state_bytes - packed
