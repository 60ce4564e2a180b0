import os
import shutil
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

import pytest

from harness import registry
from harness.feed.server import FeedServer
from harness.platform import cgroup
from harness.runner.feed_client import BlockFeed
from harness.workload.generator import WorkloadSpec

ROOT = Path(__file__).resolve().parents[1]


def mixed_spec(variant: str = "bitemporal", seed: int = 11, reorg: float = 0.2) -> WorkloadSpec:
    """Every operation, short BTLs so expiries happen within a few blocks, some reorg blocks."""
    return WorkloadSpec(shape="mendoza", seed=seed, variant=variant, rows_per_block=400,
                        op_weights=dict(create=0.4, update=0.25, delete=0.1, extend=0.15, change_owner=0.1),
                        reorg_fraction=reorg, ephemeral_btl_blocks=(2, 6), extend_blocks=(1, 4))


def open_tmp_dir(prefix: str) -> Path:
    """A folder every user can enter (pytest's tmp_path is not): a server engine's cluster, run as its
    own user, must live where it is built."""
    d = Path(tempfile.mkdtemp(prefix=prefix, dir="/var/tmp"))
    d.chmod(0o755)
    return d


@pytest.fixture
def open_tmp():
    d = open_tmp_dir("arkbench-test-")
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="session", autouse=True)
def states_root():
    """The suite's starting states (harness/state) in one folder of its own, shared by its runs."""
    root = open_tmp_dir("arkbench-states-")
    old = os.environ.get("STATES")
    os.environ["STATES"] = str(root)
    yield root
    shutil.rmtree(root, ignore_errors=True)
    if old is None:
        os.environ.pop("STATES", None)
    else:
        os.environ["STATES"] = old


@pytest.fixture(params=registry.names())
def engine_name(request):
    return request.param


def engine_setting_cases() -> list:
    """(engine, overrides) for every engine's defaults plus its manifest's contract_settings (turso's mvcc)."""
    cases = []
    for name, m in registry.manifests().items():
        cases.append(pytest.param(name, {}, id=name))
        cases += [pytest.param(name, over, id=f"{name}-{label}") for label, over in m.contract_settings.items()]
    return cases


def can_use_cgroups() -> str | None:
    """None when memory cgroups can be made here, else why not."""
    if os.geteuid() != 0:
        return "memory cgroups need root"
    if cgroup.version() is None:
        return "no memory cgroup controller mounted"
    return None


def harness_cmd() -> list[str]:
    exe = shutil.which("harness", path=str(Path(sys.executable).parent))
    return [exe] if exe else [sys.executable, "-m", "harness.cli"]


@contextmanager
def feed_pair(spec: WorkloadSpec, load=None, engine: str | None = None, root: Path | None = None):
    """A feed server (as the runtime starts it) and the runner's client, connected; both stopped after."""
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(root or tmp)
        with FeedServer(spec, load, engine, base / "run", base / "data"):
            feed = BlockFeed(base / "run", base / "data").start()
            try:
                yield feed
            finally:
                feed.stop()


def pytest_collection_modifyitems(config, items):
    """The slow tests first, the longest of them (`slow(seconds=N)`, from a run's --durations) before the
    rest, so the parallel workers of make test start on them rather than one worker ending on a three-minute
    test alone."""
    def key(item):
        slow = item.get_closest_marker("slow")
        return (slow is None, -(slow.kwargs.get("seconds", 0) if slow else 0))
    items.sort(key=key)
