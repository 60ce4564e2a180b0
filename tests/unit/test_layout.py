"""engines/ folders, compose.yaml's services and the engine registry name the same engines."""
import yaml

from harness import registry
from tests.conftest import ROOT


def test_engines_compose_and_registry_agree():
    folders = {p.name for p in (ROOT / "engines").iterdir() if (p / "adapter.py").exists()}
    services = yaml.safe_load((ROOT / "compose.yaml").read_text())["services"]
    assert folders == set(registry.ENGINE_NAMES)
    assert set(registry.ENGINE_NAMES) <= set(services)
    for name in registry.ENGINE_NAMES:
        assert (ROOT / "engines" / name / "Dockerfile").exists(), name
        assert services[name]["image"].startswith(f"arkbench/{name}:"), name
        assert services[name]["mem_limit"] == services[name]["memswap_limit"], "no swap"
        if not registry.capabilities(name).server:
            assert services[name]["network_mode"] == "none", f"{name} is embedded: no network"
    for name, svc in services.items():   # the rest serve an engine, or are opt-in profiles
        assert name in registry.ENGINE_NAMES or "profiles" in svc or name.split("-")[0] in registry.ENGINE_NAMES, name
        assert not svc.get("privileged") and svc.get("network_mode") != "host", name
