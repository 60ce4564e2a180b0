"""The cache of starting states: one directory per build inputs under STATES (default states/):

    states/<id>/data/          the engine's files after the load (what a cell clones)
    states/<id>/model.bin      the compact expected-state model after the load (harness/workload/expected.py)
    states/<id>/manifest.json  the build inputs, row counts and digest, bytes, build time and rate, method

The id hashes every input that changes the files or the rows: the engine and its build (pinned Python
distributions, Debian package versions), the engine settings its manifest lists as state_settings (such
as page_size), the settings only a build runs with, the DDL text, the schema variant, the shape and its
parameters, seed, entity count, the load's block layout, and the source of the code that makes the rows
and writes them (the row generator, the build, the engine's bulk path). A state whose
inputs changed has another id, so it is built anew, never reused. A build writes to <id>.partial and
renames it when complete: a directory named by its id is a finished state."""
from __future__ import annotations

import contextlib
import fcntl
import functools
import dataclasses
import hashlib
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Mapping, Optional

from pydantic import BaseModel, ConfigDict

from harness import environment, registry
from harness.errors import ConfigError
from harness.workload import vocabulary
from harness.workload.shapes import SHAPES

STATE_FORMAT = 2          # bump when the generator or the build changes what a state holds
STATES_ENV = "STATES"
DEFAULT_ROOT = Path("states")
MANIFEST = "manifest.json"
MODEL = "model.bin"
DATA = "data"
PACKED = "data.zst"       # in place of DATA, a state kept packed (pack.py)
PACKED_RECORD = "packed.json"     # beside it: the data's bytes unpacked, and the packing
TAKEN = ".taken"          # a state a cell took (clone.take): its data moved into the cell, its model read there


class StateInputs(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    format: int = STATE_FORMAT
    vocabulary: str = vocabulary.digest()   # the application attributes' values (workload/vocabulary.py)
    engine: str
    engine_build: dict[str, str]          # distribution or Debian package -> installed version
    layout_settings: dict[str, object]    # the engine's state_settings, as the scenario sets them
    build_settings: dict[str, object]     # what only the build runs with (its memory settings aside)
    ddl_sha256: str                       # the schema's text, indexes included
    code_sha256: str                      # the row generator's and the bulk path's source (code_digest)
    variant: str
    indexes: Optional[list[str]] = None   # workload.indexes: the secondary indexes built (None: all)
    shape: str
    shape_params: dict[str, object]       # the shape's attribute counts, payload sizes, lifetimes
    seed: int
    long_lived_fraction: Optional[float]
    entities: int
    batch_rows: int
    expiry_spread_blocks: int
    history_versions: int = 0             # the load's revision passes (load.history_versions)
    dc: Optional[dict[str, object]] = None   # the Data Center seed: data_centres, fraction (workload.dc)
    aged: Optional[dict[str, object]] = None  # an aged state's base id, blocks, workload and write path (aged.py)

    @property
    def id(self) -> str:
        digest = hashlib.sha256(json.dumps(self.model_dump(mode="json"), sort_keys=True).encode()).hexdigest()
        dc = f"-dc{self.dc['data_centres']}x{self.dc['fraction']:g}" if self.dc else ""
        aged = f"-aged{self.aged['blocks']}" if self.aged else ""
        hist = f"-h{self.history_versions}" if self.history_versions else ""
        return f"{self.engine}-{self.variant}-{self.shape}-s{self.seed}-e{self.entities}{hist}{dc}{aged}-{digest[:10]}"


class StateManifest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str
    inputs: StateInputs
    method: str                           # "bulk", "aged", "derived" (derive.py), "continued" (continued.py)
    derived_from: Optional[str] = None    # a derived state's source state, a continued state's origin
    continued: Optional[list[dict]] = None   # a continued state's cells: rows per block, blocks, the last block
    engine_version: str
    model_digest: dict[str, str]          # table -> "count:sum" (digest.py), as a row-by-row load leaves it
    logical_bytes: int
    row_counts: dict[str, int]
    rows: int
    data_bytes: int                       # every file under data/
    db_bytes: int                         # the engine's own account (storage().db_bytes)
    model_bytes: int
    model_bytes_per_entity: float
    build_s: float
    phases_s: dict[str, float]            # model, rows (insert + generate_wait), finish and its steps (build._phases_s)
    rows_per_s: float
    build_only_settings: dict[str, object]   # what the build ran with that the runs do not
    built_utc: str


def log(msg: str) -> None:
    print(f"[state] {msg}", file=sys.stderr, flush=True)


def close_quietly(engine, **kwargs) -> None:
    """Close the engine before its files go (a server is stopped first), whatever failed."""
    try:
        engine.close(**kwargs)
    except Exception:
        pass


def checked_counts(engine, model, what: str) -> dict[str, int]:
    """The engine's row counts, which must be the model's: a state never holds what its model does not."""
    counts = engine.row_counts()
    expected = {t: d.count for t, d in model.digest.tables.items()}
    if counts != expected:
        raise RuntimeError(f"the {what} state holds {counts} rows, the model {expected}")
    return counts


def files_bytes(d: Path) -> int:
    """The files directly in a state's directory: its models."""
    return sum(p.stat().st_size for p in d.iterdir() if p.is_file())


def root_dir(explicit: str | Path | None = None) -> Path:
    return Path(explicit or os.environ.get(STATES_ENV) or DEFAULT_ROOT).resolve()


@functools.cache
def _deb_version(package: str) -> str:
    r = subprocess.run(["dpkg-query", "-W", "-f=${Version}", package], capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else "not installed"


def _distribution(requirement: str) -> str:
    return re.match(r"[A-Za-z0-9_.-]+", requirement).group()        # 'psycopg[binary]>=3.2,<4' -> 'psycopg'


def _installed(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def engine_build(engine: str, settings: dict) -> dict[str, str]:
    """The versions installed here of what the engine's files depend on: a requirement such as
    duckdb>=1.2,<3 names a range, and another DuckDB in it may write another file format."""
    m = registry.manifest(engine)
    out = {_distribution(req): _installed(_distribution(req)) for req in m.requirements}
    lib = settings.get("library")
    if isinstance(lib, str) and lib in m.side_requirements:       # installed apart, pinned exactly
        out[f"side:{lib}"] = m.side_requirements[lib]
    out.update({f"deb:{p}": _deb_version(p) for p in m.debian_packages})
    return out


# The code that decides a state's bytes: the rows (workload/), their order and chunks (rows.py), the build's
# steps (build.py), and the engine's bulk-path methods wherever the adapter's class finds them.
ROW_CODE = ("harness/workload", "harness/state/rows.py", "harness/state/build.py")
BULK_METHODS = ("build_settings", "prepare_bulk", "bulk_begin", "bulk_insert", "bulk_finish", "settle",
                "use_schema", "create_schema")
_REPO = Path(__file__).resolve().parents[2]


@functools.cache
def code_digest(engine: str, methods: tuple[str, ...] = BULK_METHODS) -> str:
    cls = registry.engine_class(engine)
    files = {Path(inspect.getsourcefile(getattr(cls, m))).resolve() for m in methods if hasattr(cls, m)}
    for rel in ROW_CODE:
        p = _REPO / rel
        files |= set(p.glob("*.py")) if p.is_dir() else {p}
    h = hashlib.sha256()
    for f in sorted(files):
        h.update(str(f.relative_to(_REPO)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def build_only_settings(engine: str, settings: dict) -> dict:
    """What the engine's build opens with in place of a run's settings (the keys its build sets, from these
    settings or from the defaults: a run that already asks synchronous=OFF builds the same file as one that
    does not), without its memory settings: those follow the machine (DuckDB's share of the memory free)
    and change no byte of the files."""
    memory_keys = set(registry.manifest(engine).memory.sized)
    cls = registry.engine_class(engine)
    built = cls.build_settings(settings)
    defaults = registry.settings_model(engine)().model_dump(mode="json")
    keys = {k for k, v in built.items() if settings.get(k) != v}
    keys |= {k for k, v in cls.build_settings(defaults).items() if defaults.get(k) != v}
    return {k: built[k] for k in sorted(keys) if k in built and k not in memory_keys}


def shared_settings(engine: str, settings: Mapping[str, object]) -> dict:
    """settings as `engine` takes them: those of its own keys given, its defaults for the rest (a state built
    by the engine another's manifest names in state_of; an engine's own settings come back unchanged)."""
    defaults = registry.settings_model(engine)().model_dump(mode="json")
    return {**defaults, **{k: v for k, v in settings.items() if k in defaults}}


def owner(engine: str) -> str:
    """The engine whose states `engine` opens (its manifest's state_of: libSQL opens SQLite's), else itself."""
    return registry.manifest(engine).state_of or engine


def inputs_for(plan) -> StateInputs:
    src = owner(plan.engine)     # the engine whose bulk path builds it
    m = registry.manifest(src)
    settings = shared_settings(src, plan.engine_settings)
    missing = [s for s in m.state_settings if s not in settings]
    if missing:
        raise ConfigError(f"engines/{src}/engine.toml: state_settings: {missing[0]!r} is not one of "
                          f"{src}'s settings ({', '.join(settings)})")
    w = plan.workload
    return StateInputs(engine=src, engine_build=engine_build(src, settings),
                       layout_settings={s: settings[s] for s in m.state_settings},
                       build_settings=build_only_settings(src, shared_settings(src, plan.unsized_engine_settings())),
                       ddl_sha256=hashlib.sha256(registry.ddl(src, w.variant, w.indexes).encode()).hexdigest(),
                       code_sha256=code_digest(src),
                       variant=w.variant, indexes=w.indexes, shape=w.shape, shape_params=dataclasses.asdict(SHAPES[w.shape]),
                       seed=w.seed, long_lived_fraction=w.long_lived_fraction,
                       entities=plan.load_entities, batch_rows=plan.load.batch_rows,
                       expiry_spread_blocks=plan.load.expiry_spread_blocks,
                       history_versions=plan.load.history_versions, dc=_dc_inputs(w.dc))


def _dc_inputs(dc) -> Optional[dict[str, object]]:
    """The DC seed as a state's inputs name it; its own history passes only where set (an id stays the same)."""
    if not dc:
        return None
    own = {} if dc.history_versions is None else {"history_versions": dc.history_versions}
    return {"data_centres": dc.data_centres, "fraction": dc.fraction, **own}


def write_failure(root: Path, inputs: StateInputs, why: str, oom: bool) -> None:
    """A build that failed, recorded beside the states (the next build of the same inputs retries)."""
    (root / f"{inputs.id}.failed.json").write_text(json.dumps(
        {"id": inputs.id, "inputs": inputs.model_dump(mode="json"), "error": why, "oom": oom,
         "failed_utc": environment.utc_now()}, indent=2))


@contextlib.contextmanager
def lock(root: Path, state_id: str):
    """One builder per state: a second process asking for it waits, then finds it built."""
    root.mkdir(parents=True, exist_ok=True)
    # read-only: flock needs no write access, so another user (a container's) can wait on a lock root made
    fd = os.open(root / f".{state_id}.lock", os.O_RDONLY | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def find(root: Path, inputs: StateInputs) -> tuple[Path, StateManifest] | None:
    d = root / inputs.id
    try:
        man = StateManifest.model_validate_json((d / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    if man.inputs != inputs:
        raise ConfigError(f"{d / MANIFEST}: its inputs differ from the id's; remove the directory")
    return d, man


def copy_models(src_dir: Path, dst_dir: Path) -> None:
    """A state's models (mendoza's and the DC's) beside another's data: every file but the manifest (and a packed
    state's record)."""
    for f in src_dir.iterdir():
        if f.is_file() and f.name not in (MANIFEST, PACKED_RECORD):
            shutil.copy2(f, dst_dir / f.name)


def tree_bytes(path: Path) -> int:
    """Bytes allocated on disk (st_blocks), as df counts them."""
    total = 0
    for p in [path, *path.rglob("*")] if path.is_dir() else [path]:
        try:
            total += p.lstat().st_blocks * 512
        except OSError:
            pass
    return total


def is_packed(state_dir: Path) -> bool:
    """The state is kept packed (pack.py): its packed files in place of its data."""
    return (state_dir / PACKED).is_dir() and not (state_dir / DATA).exists()


def listing(root: Path) -> list[dict]:
    out = []
    for d in sorted(root.glob("*")) if root.is_dir() else []:
        if not d.is_dir():
            continue
        man = None
        try:
            man = StateManifest.model_validate_json((d / MANIFEST).read_text())
        except (OSError, ValueError):
            pass
        out.append({"id": d.name, "path": str(d), "bytes": tree_bytes(d), "packed": is_packed(d),
                    "complete": man is not None and not d.name.endswith((".partial", TAKEN)),
                    "rows": man.rows if man else None, "build_s": man.build_s if man else None,
                    "built_utc": man.built_utc if man else None})
    return out


def remove(root: Path, ids: list[str]) -> list[str]:
    """Remove the named states (all when ids is empty); returns what was removed."""
    gone = []
    for entry in listing(root):
        if not ids or entry["id"] in ids:
            shutil.rmtree(entry["path"], ignore_errors=True)
            gone.append(entry["id"])
    unknown = [i for i in ids if i not in gone]
    if unknown:
        raise ConfigError(f"no state {unknown[0]!r} under {root}")
    return gone


def free_bytes(path: Path) -> int:
    p = path
    while not p.exists():
        p = p.parent
    st = os.statvfs(p)
    return st.f_bavail * st.f_frsize


class NoRoom(ConfigError):
    """The disk cannot hold what was about to be written: refused before the first byte. Before a walk, bad
    input; inside a cell (its state's build or clone), that cell's build_failed (cell.start_state)."""


MARGIN_BYTES = 1 << 30       # what a write leaves free on the disk beyond its own need


def require_free(path: Path, needed: int, what: str,
                 hint: str = "`make states-clean` lists and removes cached states") -> None:
    """Refuse before starting what would fill the disk (with a 1 GiB margin)."""
    free = free_bytes(path)
    if needed + MARGIN_BYTES > free:
        raise NoRoom(f"{what} needs about {needed / 2**30:.1f} GiB at {path} (plus a 1 GiB margin) and "
                     f"{free / 2**30:.1f} GiB are free; {hint}")
