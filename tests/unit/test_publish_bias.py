"""The store's bias published beside the figures made on the store, and read with them only in its own sitting."""
import json

STORE_FS = "xfs on a loop device (make store)"


def _bias(boot="boot-a"):
    figures = [{"figure": "commit p99", "unit": "ms", "a": 400.0, "b": 440.0, "n_a": 2, "n_b": 2, "ratio": 1.1,
                "verdict": "B slower (p=0.010)"},
               {"figure": "service p50", "unit": "ms", "a": 90.0, "b": 90.9, "n_a": 2, "n_b": 2, "ratio": 1.01,
                "verdict": "no significant difference"}]
    return {"scenario": "p99_5x", "engine": "sqlite", "mem": "1284m", "scale": None, "repeats": 2,
            "a": "disk: states", "b": "store: store/states", "command": "make store-bias ENGINE=sqlite MEM=1284m",
            "hosts": {"disk": {"cpu_model": "AMD EPYC", "filesystem": "ext4"},
                      "store": {"cpu_model": "AMD EPYC", "filesystem": STORE_FS}},
            "boot_id": boot, "started_utc": "2026-12-07T16:00:00Z", "finished_utc": "2026-12-07T16:50:00Z",
            "comparison": [{"cell": "p99_5x/sqlite-1284m", "a_runs": [], "b_runs": [], "figures": figures}]}


def test_a_published_bias_names_its_command_sitting_hosts_and_ratios_and_keeps_each_arms_results(tmp_path):
    from harness.report.publish_bias import publish_bias
    run = tmp_path / "run"
    for arm in ("disk", "store"):
        cell = run / arm / "p99_5x" / f"sqlite-1284m-r1"
        cell.mkdir(parents=True)
        missed = [{"expr": "p99(commit_ms) < 500", "passed": False, "value": 1828.9}] if arm == "store" else []
        (cell / "result.json").write_text(json.dumps({"plan": {}, "status": "failed" if missed else "passed",
                                                      "thresholds": missed}))
    (run / "bias.json").write_text(json.dumps(_bias()))
    (run / "bias.md").write_text("### p99_5x/sqlite-1284m\n\n| commit p99 | 400 ms | 440 ms | 1.100x | B slower |\n")
    dest = publish_bias(run, tmp_path / "pub", "store-bias")
    readme = (dest / "README.md").read_text()
    assert "- Command: `make store-bias ENGINE=sqlite MEM=1284m`" in readme
    assert "2026-12-07T16:00:00Z to 2026-12-07T16:50:00Z, boot boot-a" in readme
    assert f"The store's arm ran on: AMD EPYC, disk -, fsync -, -, kernel -, {STORE_FS}" in readme
    assert "**In a line:** commit p99 store/disk 1.10x (B slower (p=0.010)), service p50 store/disk 1.01x" in readme
    assert "| commit p99 | 400 ms | 440 ms | 1.100x | B slower |" in readme, "the comparison as make compare wrote it"
    assert "- The disk's runs: sqlite-1284m-r1 passed" in readme
    assert "- The store's runs: sqlite-1284m-r1 failed on p99(commit_ms) < 500 (measured 1,829)" in readme
    assert {p.parent.parent.parent.name for p in dest.glob("cells/*/p99_5x/*/result.json.gz")} == {"disk", "store"}


def test_a_point_on_the_store_is_read_with_its_own_sittings_bias_and_never_anothers(tmp_path):
    from harness.report.publish_bias import published_biases, store_note
    d = tmp_path / "max_writes-reference"
    (d / "store-bias").mkdir(parents=True)
    (d / "store-bias" / "bias.json").write_text(json.dumps(_bias("boot-a")))
    biases = published_biases(d)
    assert [b["published_as"] for b in biases] == ["store-bias"]
    on_store = {"boot_id": "boot-a", "host": {"filesystem": STORE_FS}}
    said = store_note(on_store, biases, "max_writes-reference/")
    assert "commit p99 store/disk 1.10x" in said and "(max_writes-reference/store-bias/README.md)" in said, said
    later = store_note({**on_store, "boot_id": "boot-b"}, biases)
    assert later.startswith(" (the store's bias was not measured in its sitting") and "1.10x" not in later
    assert store_note({"boot_id": "boot-a", "host": {"filesystem": "ext4"}}, biases) == "", "the disk's own figure"
