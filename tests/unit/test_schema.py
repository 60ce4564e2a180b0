"""The scenario files' JSON Schema (harness/scenario/schema.py): current with the models, named at the top of
every scenario file for editors, accepting every file the loader accepts, and refusing a broken one with the
field named, as an editor would show it."""
import json

import jsonschema
import pytest
import yaml

from harness.errors import ConfigError
from harness.scenario.load import OTHER_FILES, SCENARIO_DIR, load_scenario
from harness.scenario.schema import SCHEMA_FILE, SCHEMA_LINE, scenario_schema, schema_text

SCENARIOS = sorted(f for f in SCENARIO_DIR.glob("*.yaml") if f.stem not in OTHER_FILES)


@pytest.fixture(scope="module")
def validator():
    schema = json.loads(SCHEMA_FILE.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_the_schema_file_is_the_models_schema():
    assert SCHEMA_FILE.read_text() == schema_text(), "scenarios/schema.json is stale: run make schema"
    assert set(scenario_schema()["properties"]) >= {"workload", "load", "phases", "thresholds", "profiles"}


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_every_scenario_file_names_the_schema_and_meets_it(path, validator):
    assert path.read_text().splitlines()[0] == SCHEMA_LINE, f"{path.name}: first line should be {SCHEMA_LINE!r}"
    load_scenario(path)                                   # the loader accepts it ...
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(yaml.safe_load(path.read_text()))]
    assert not errors, f"... and so must the schema: {errors}"


def _errors(validator, doc) -> list[tuple[list, str]]:
    return [(list(e.absolute_path), e.message) for e in validator.iter_errors(doc)]


@pytest.mark.parametrize("where, value, path, says", [
    (["workload", "rows_per_blok"], 5, ["workload"], "rows_per_blok"),                  # a typo'd field
    (["phases", "measure_s"], "long", ["phases", "measure_s"], "'long'"),                # a wrong type
    (["profiles", "quick", "phases", "measure_s"], "long", ["profiles", "quick", "phases", "measure_s"], "'long'"),
    (["profiles", "quick", "workload", "shape"], "triangle", ["profiles", "quick", "workload", "shape"], "triangle"),
    (["memory", "policy"], "huge", ["memory", "policy"], "huge"),                         # not one of the choices
])
def test_a_broken_file_fails_with_the_field_named(tmp_path, validator, where, value, path, says):
    doc = yaml.safe_load((SCENARIO_DIR / "p99_5x.yaml").read_text())
    node = doc
    for key in where[:-1]:
        node = node.setdefault(key, {})
    node[where[-1]] = value
    errors = _errors(validator, doc)
    assert any(p == path and says in msg for p, msg in errors), errors
    broken = tmp_path / "broken.yaml"                     # and the loader refuses it too, naming the same field
    broken.write_text(yaml.safe_dump(doc))
    with pytest.raises(ConfigError, match=".".join(str(k) for k in where[:2])):
        load_scenario(broken)


def test_a_profile_may_override_any_subset_but_the_file_must_have_its_workload(validator):
    doc = yaml.safe_load((SCENARIO_DIR / "p99_5x.yaml").read_text())
    doc["profiles"]["tiny"] = {"workload": {"rows_per_block": 10}, "phases": {"measure_s": 5}}
    assert not _errors(validator, doc)
    del doc["workload"]
    assert any("workload" in msg for _, msg in _errors(validator, doc))
