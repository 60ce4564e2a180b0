"""Engines are discovered from engines/*/engine.toml: a bad manifest is one line naming the file and the
field; each capability flag changes what the harness does; the docker runtime's compose file comes from
the manifest; the generic DDL renders the workload's schema as faithfully as the reference's own text."""
import sqlite3
from pathlib import Path

import pytest

from harness import registry
from harness.engine_api import StorageStats, observed_storage
from harness.errors import ConfigError
from harness.runtime.compose import PASSWORD_REF, compose_file, images_needed
from harness.scenario.memory import CLIENT_LIMIT_BYTES
from harness.scenario.plan import resolve_plan
from harness.workload.schema import VARIANTS, generic_ddl
from tests.unit.test_scenarios import GOOD, write

MINIMAL = """
description = "a test engine"
adapter = "adapter:E"
settings = "settings:S"
baseline = "baseline:L"
[durability]
says = { "*" = "at commit" }
survives = { "*" = "power_cut" }
[capabilities]
server = false
wal = true
readers_in_process_only = false
[types]
bytes = "BLOB"
int64 = "INTEGER"
text = "TEXT"
"""


def manifest_error(tmp_path: Path, text: str, folder: str = "toy") -> str:
    d = tmp_path / folder
    d.mkdir()
    (d / "engine.toml").write_text(text)
    with pytest.raises(ConfigError) as e:
        registry.load_manifest(d)
    msg = str(e.value)
    assert "\n" not in msg and str(d) in msg
    return msg


def test_a_minimal_manifest_loads(tmp_path):
    d = tmp_path / "toy"
    d.mkdir()
    (d / "engine.toml").write_text(MINIMAL)
    m = registry.load_manifest(d)
    assert m.name == "toy" and m.capabilities.wal and m.dockerfile("runner") == registry.SHARED_RUNNER_DOCKERFILE


@pytest.mark.parametrize("change,field,allowed", [
    (("text = \"TEXT\"\n", ""), "types", "one SQL type for each of bytes, text, int64"),
    (("adapter = \"adapter:E\"", "adapter = \"adapter.E\""), "adapter", "'module:Name'"),
    (("wal = true", "wal = true\nmvcc = true"), "capabilities", "unknown field 'mvcc'; allowed: server, wal, checkpoint_modes, readers_in_process_only"),
    (("server = false", "server = true"), "(top level)", "[images.server] must name the server's image"),
    (("description", "descripton"), "description", "required field is missing"),
])
def test_manifest_errors_name_the_file_the_field_and_what_is_allowed(tmp_path, change, field, allowed):
    msg = manifest_error(tmp_path, MINIMAL.replace(*change))
    assert f"engine.toml: {field}" in msg and allowed in msg, msg


def test_a_folder_name_that_cannot_be_a_key_is_refused(tmp_path):
    assert "lowercase letters" in manifest_error(tmp_path, MINIMAL, folder="My-DB")


def test_readers_as_processes_need_the_adapters_reader_factory(tmp_path):
    d = tmp_path / "toy"
    d.mkdir()
    (d / "engine.toml").write_text(MINIMAL)
    m = registry.load_manifest(d)

    class NoFactory:
        pass

    class WithFactory:
        def reader_factory(self):
            return None
    with pytest.raises(ConfigError, match=r"toy/engine.toml: capabilities.readers_in_process_only: false, but "
                                          r"adapter:E has no reader_factory\(\)"):
        registry.check_capability_methods(m, NoFactory)
    registry.check_capability_methods(m, WithFactory)
    threads = m.model_copy(update={"capabilities": m.capabilities.model_copy(update={"readers_in_process_only": True})})
    registry.check_capability_methods(threads, NoFactory)
    drops = threads.model_copy(update={"capabilities": threads.capabilities.model_copy(
        update={"drop_index_frees_space": True})})
    with pytest.raises(ConfigError, match=r"capabilities.drop_index_frees_space: true, but adapter:E has no "
                                          r"drop_indexes\(\) to derive a state with fewer indexes"):
        registry.check_capability_methods(drops, NoFactory)
    for name in registry.names():        # every engine's adapter agrees with its manifest
        registry.engine_class(name)


def test_an_adapter_without_a_contract_method_is_refused_naming_what_it_lacks(tmp_path):
    from harness.engine_api import REQUIRED_METHODS, EngineBase
    d = tmp_path / "toy"
    d.mkdir()
    (d / "engine.toml").write_text(MINIMAL)
    m = registry.load_manifest(d)
    whole = type("Whole", (EngineBase,), {n: (lambda self, *a: None) for n in REQUIRED_METHODS})
    registry.check_required_methods(m, whole)
    no_settle = type("NoSettle", (EngineBase,), {n: (lambda self, *a: None) for n in REQUIRED_METHODS if n != "settle"})
    with pytest.raises(ConfigError, match=r"toy/engine.toml: adapter: adapter:E lacks settle; an adapter defines open, "):
        registry.check_required_methods(m, no_settle)


def test_a_missing_dockerfile_is_named_when_images_are_built(tmp_path):
    d = tmp_path / "toy"
    d.mkdir()
    (d / "engine.toml").write_text(MINIMAL + '[images.runner]\ndockerfile = "Dockerfile"\n')
    with pytest.raises(ConfigError, match=r"toy/engine.toml: images.runner.dockerfile: .* does not exist"):
        registry.image_builds(registry.load_manifest(d))
    assert registry.image_builds(registry.manifest("postgres")) == [
        ("postgres", "runner", "docker/runner.Dockerfile", None),
        ("postgres-server", "server", "engines/postgres/Dockerfile", None)]


@pytest.mark.parametrize("variant", [v for v in VARIANTS if (registry.ENGINES_DIR / "sqlite" / f"ddl-{v}.sql").exists()])
def test_generic_ddl_builds_the_same_schema_as_the_reference_ddl(tmp_path, variant):
    """The schema lives in harness/workload/schema.py; sqlite keeps the reference's DDL text. Rendered
    in SQLite's types, the generic DDL makes the same tables, columns, keys, defaults and indexes."""
    def shape(ddl: str) -> dict:
        c = sqlite3.connect(":memory:")
        c.executescript(ddl)
        out = {}
        for (t,) in c.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"):
            idx = {i[1]: c.execute(f"PRAGMA index_xinfo('{i[1]}')").fetchall()
                   for i in c.execute(f"PRAGMA index_list('{t}')") if not i[1].startswith("sqlite_autoindex")}
            pk = [r for r in c.execute(f"PRAGMA index_list('{t}')") if r[3] == "pk"]
            out[t] = (c.execute(f"PRAGMA table_xinfo('{t}')").fetchall(), idx,
                      c.execute(f"PRAGMA index_xinfo('{pk[0][1]}')").fetchall() if pk else None)
        return out
    reference = (registry.ENGINES_DIR / "sqlite" / f"ddl-{variant}.sql").read_text()
    generic = generic_ddl(variant, registry.manifest("sqlite").types)
    assert shape(generic) == shape(reference)
    assert len(shape(generic)) == 3


# ---- each capability flag changes what the harness does ----------------------------------------------

def test_server_gives_the_limit_to_a_server_container_and_the_runner_a_client_limit(tmp_path):
    embedded = resolve_plan("reorg", "sqlite", mem="512m", results_root=tmp_path)
    server = resolve_plan("reorg", "postgres", mem="512m", results_root=tmp_path)
    assert not embedded.capabilities.server and embedded.memory.runner_limit_bytes == 512 << 20
    assert not embedded.memory.runner_is_client
    assert server.capabilities.server and server.memory.runner_limit_bytes == CLIENT_LIMIT_BYTES
    assert server.memory.runner_is_client and server.memory.data_limit_bytes == 512 << 20
    # at MEM equal to the client's own limit the server still gets MEM alone (it once shared it with its client)
    assert resolve_plan("reorg", "postgres", mem="1g", results_root=tmp_path).memory.runner_is_client
    one = compose_file(embedded, "sha256:x")
    assert list(one["services"]) == ["runner"] and one["services"]["runner"]["network_mode"] == "none"
    assert one["services"]["runner"]["mem_limit"] == str(512 << 20) and "networks" not in one
    two = compose_file(server, "sha256:x")
    runner, srv = two["services"]["runner"], two["services"]["server"]
    assert srv["mem_limit"] == str(512 << 20) and runner["mem_limit"] == str(CLIENT_LIMIT_BYTES)
    assert two["networks"]["private"] == {"internal": True}
    # the per-run secret reaches both containers only through compose's interpolation, never a file
    assert runner["environment"]["ARKBENCH_SERVER_PASSWORD"] == PASSWORD_REF == srv["environment"]["ARKBENCH_SERVER_PASSWORD"]
    assert images_needed(server) == [f"arkbench/postgres:{server_image_version()}",
                                     f"arkbench/postgres-server:{server_image_version()}"]


def server_image_version() -> str:
    from harness.provenance import harness_version
    return harness_version()


@pytest.mark.parametrize("engine", registry.names())
def test_every_compose_container_is_locked_down(tmp_path, engine):
    plan = resolve_plan("reorg", engine, mem="512m", results_root=tmp_path)
    for name, svc in compose_file(plan, "sha256:x")["services"].items():
        assert svc["cap_drop"] == ["ALL"] and "no-new-privileges:true" in svc["security_opt"], name
        assert not svc.get("privileged") and svc.get("network_mode") != "host", name
        assert svc["mem_limit"] == svc["memswap_limit"], "no swap"
        assert all(v.split(":")[0] in (plan.run_dir, plan.data_dir) for v in svc["volumes"]), "only the run's folders"


def test_a_setting_can_change_capabilities_libsql_with_a_server_url(tmp_path):
    """libsql with `url` is a server's client: server true (MEM is refused, the docker runtime cannot start
    that server) and wal false (its WAL is not visible: thresholds on it refused, figures null)."""
    url = ["engines.libsql.url=http://127.0.0.1:8080"]
    embedded = resolve_plan("reorg", "libsql", results_root=tmp_path)
    remote = resolve_plan("reorg", "libsql", overrides=url, mem="512m", results_root=tmp_path)
    assert (embedded.capabilities.server, embedded.capabilities.wal) == (False, True)
    assert (remote.capabilities.server, remote.capabilities.wal) == (True, False)
    assert remote.memory.runner_limit_bytes == CLIENT_LIMIT_BYTES
    with pytest.raises(ConfigError, match="does not start"):
        images_needed(remote)
    p = write(tmp_path, GOOD.replace('["p99(commit_ms) < 500"]', '["max(wal_bytes) < 100MB"]'))
    resolve_plan(str(p), "libsql", results_root=tmp_path)                   # embedded: judged
    with pytest.raises(ConfigError, match="capabilities.wal is false"):
        resolve_plan(str(p), "libsql", overrides=url, results_root=tmp_path)


def test_without_wal_the_wal_figures_are_unknown_not_zero():
    class Engine:
        def storage(self):
            return StorageStats(db_bytes=100, wal_bytes=0, checkpoints=0)
    with_wal, without = registry.capabilities("libsql"), registry.capabilities("libsql", {"url": "http://x"})
    assert observed_storage(Engine(), with_wal) == StorageStats(100, 0, 0)
    assert observed_storage(Engine(), without) == StorageStats(100, None, None)


def test_every_state_setting_is_a_setting_of_its_engine(engine_name):
    fields = registry.settings_model(engine_name).model_fields
    assert set(registry.manifest(engine_name).state_settings) <= set(fields), engine_name


def test_state_of_names_another_engine_that_builds_its_own_states(tmp_path, monkeypatch):
    for name, extra in (("toy", 'state_of = "other"\n'), ("other", "")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "engine.toml").write_text(extra + MINIMAL)
    monkeypatch.setattr(registry, "ENGINES_DIR", tmp_path)
    assert registry.manifests.__wrapped__()["toy"].state_of == "other"
    (tmp_path / "toy" / "engine.toml").write_text('state_of = "nowhere"\n' + MINIMAL)
    with pytest.raises(ConfigError, match=r"engines/toy/engine.toml: state_of: 'nowhere'; allowed: .*other"):
        registry.manifests.__wrapped__()
