"""A continued state's bookkeeping (harness/state/continued.py): which one a step finds, what is dropped, and the
model's check against the digest its cell verified. The chain itself runs real cells: tests/cli/test_knee_continue.py."""
import json

from harness.state import continued, store
from harness.state.continued import _matches


def _state(root, name, rows=1000, lineage=None):
    d = root / name
    (d / store.DATA).mkdir(parents=True)
    man = {"id": name, "method": "continued", "rows": rows, "continued": lineage}
    (d / store.MANIFEST).write_text(json.dumps(man))
    return d


def test_a_regenerated_model_matches_only_the_digest_its_cell_verified():
    mine = {"payloads": "12:99", "string_attributes": "40:7"}
    assert _matches(mine, {"payloads": "12:99", "string_attributes": "40:7"})
    assert _matches(mine, {"payloads": "12:*", "string_attributes": "40:*"}), "a cell that counted rows"
    assert not _matches(mine, {"payloads": "13:*", "string_attributes": "40:*"}), "one row more"
    assert not _matches(mine, {"payloads": "12:98", "string_attributes": "40:7"}), "another row"
    assert not _matches(mine, {"payloads": "12:99"}), "a table missing"


def test_a_step_finds_its_origins_continued_state_never_one_taken_or_half_made_and_drop_spares_the_taken(
        tmp_path, monkeypatch):
    monkeypatch.setattr(store.StateManifest, "model_validate_json", classmethod(lambda cls, t: json.loads(t)))
    origin = "sqlite-bitemporal-mendoza-s3-e800-aged50-abc"
    assert continued.find(tmp_path, origin) is None
    taken = _state(tmp_path, f"{origin}-cont1-aaaa{store.TAKEN}")
    _state(tmp_path, f"{origin}-cont2-bbbb.partial")
    _state(tmp_path, "sqlite-bitemporal-mendoza-s3-e800-aged50-abd-cont1-cccc")     # another origin
    assert continued.find(tmp_path, origin) is None
    _state(tmp_path, f"{origin}-cont2-dddd")
    found = continued.find(tmp_path, origin)
    assert found and found[0].name == f"{origin}-cont2-dddd"
    assert continued.origin_of(found[0].name) == origin
    (tmp_path / f".{origin}-cont1-aaaa.lock").touch()       # store.lock's, left by a take
    (tmp_path / f".{origin}.lock").touch()
    gone = continued.drop(tmp_path, origin, but=taken)
    assert not (tmp_path / f".{origin}-cont1-aaaa.lock").exists() and (tmp_path / f".{origin}.lock").exists()
    assert sorted(gone) == [f"{origin}-cont2-bbbb.partial", f"{origin}-cont2-dddd"] and taken.is_dir()
    assert (tmp_path / "sqlite-bitemporal-mendoza-s3-e800-aged50-abd-cont1-cccc").is_dir()


def test_a_chains_rows_are_its_cells_row_budgets():
    man = store.StateManifest.model_construct(continued=[{"rows_per_block": 900, "blocks": 330},
                                                         {"rows_per_block": 985, "blocks": 46}])
    assert continued.rows_added(man) == 900 * 330 + 985 * 46
    assert continued.rows_added(store.StateManifest.model_construct(continued=None)) == 0
