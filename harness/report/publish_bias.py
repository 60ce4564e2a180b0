"""A finished `make store-bias` made readable without the code (`make publish RUN=results/store-bias-...
AS=<question folder>/store-bias`): bias.json, bias.md, each arm's cells' result.json gzipped under cells/<arm>/, and
a README naming the command, the sitting, each arm's host and how the store moved the figures a knee is read by.

Why published: the store (XFS on a loop device) fits a state and its clones where ext4 cannot, but its writes take
another path; whether a figure made there can be read at all is this ratio's to say, measured in the same sitting,
never assumed (12-07: commit p99 3.3x the disk's, so no knee is made there). A figure made on the store anyway is
printed with its sitting's bias beside it (store_note), never as the disk's own."""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from harness.errors import ConfigError
from harness.report.publish import scrubber, write_cells
from harness.results.headroom import Host

BIAS_FILE = "bias.json"             # walks/store_bias writes it
ARMS = ("disk", "store")
READ_BY = ("commit p99", "service p50")     # what a knee's lines are judged on (p99) and its curve is drawn by


def publish_bias(run: Path, dest_root: Path, name: str | None) -> Path:
    path = run / BIAS_FILE
    if not path.is_file():
        raise ConfigError(f"{path}: missing: run the same `make store-bias` to its end first")
    scrub = scrubber(run)
    bias = json.loads(scrub(path.read_text()))
    dest = dest_root / (name or f"{(bias.get('started_utc') or '')[:10]}-store-bias-{bias['engine']}")
    dest.mkdir(parents=True, exist_ok=True)
    (dest / BIAS_FILE).write_text(json.dumps(bias, indent=2) + "\n")
    table = scrub((run / "bias.md").read_text()) if (run / "bias.md").is_file() else ""
    (dest / "bias.md").write_text(table)
    runs = {}
    for arm in ARMS:
        found = sorted((run / arm).glob("*/*/result.json"))
        write_cells(run / arm, dest, [SimpleNamespace(scenario=f.parent.parent.name, dir=f.parent.name)
                                      for f in found], scrub, under=f"cells/{arm}")
        runs[arm] = [f"{f.parent.name} {run_says(json.loads(f.read_text()))}" for f in found]
    (dest / "README.md").write_text(readme(bias, table, runs))
    return dest


def figures(bias: dict) -> dict[str, dict]:
    """The compared figures of its one cell by name (compare's rows: medians a and b, ratio b/a, verdict)."""
    return {f["figure"]: f for c in bias["comparison"][:1] for f in c["figures"]}


def bias_says(bias: dict) -> str:
    """The store against the disk in a few words: 'commit p99 store/disk 1.04x (no significant difference), ...'."""
    got = figures(bias)
    return ", ".join(f"{n} store/disk {got[n]['ratio']:.2f}x ({got[n]['verdict']})" for n in READ_BY
                     if got.get(n, {}).get("ratio") is not None) or "no figure compared"


def readme(bias: dict, table: str, runs: dict[str, list[str]]) -> str:
    """table: bias.md (the comparison as `make compare` renders it); runs: each arm's runs, as they ended."""
    hosts = bias.get("hosts") or {}
    scale = f"{bias['scale']:g}x" if bias.get("scale") else "the profile's scale"
    lines = [f"# The store's bias: {bias['engine']}, {bias['scenario']} at {scale}, MEM {bias.get('mem') or 'none'}",
             "", "One cell run alternately on the disk's own filesystem (a full copy of its state) and on the "
             "copy-on-write store (`make store`: XFS on a loop device, a reflinked clone), "
             f"{bias['repeats']} runs a side, then compared as `make compare` compares (medians, store/disk, Welch's "
             "t-test). A figure made on the store is read through these ratios, never as the disk's own.", "",
             f"- Command: `{bias.get('command') or '?'}`",
             f"- Measured {bias.get('started_utc') or '?'} to {bias.get('finished_utc') or '?'}"
             + (f", boot {bias['boot_id'][:8]}" if bias.get("boot_id") else ""),
             *[f"- The {arm}'s arm ran on: {Host(**hosts[arm]).says()}" for arm in ARMS if hosts.get(arm)],
             *[f"- The {arm}'s runs: {'; '.join(said) or 'none'}" for arm, said in runs.items()],
             f"- **In a line:** {bias_says(bias)}", "", "A: the disk; B: the store.", "", table.strip(), "",
             "Each run's result.json is under cells/disk/ and cells/store/."]
    return "\n".join(lines) + "\n"


def run_says(result: dict) -> str:
    """A run as it ended: its status and the lines it missed."""
    missed = [f"{t['expr']} (measured {t['value']:,.0f})" for t in result.get("thresholds") or []
              if not t.get("passed") and t.get("value") is not None]
    return result.get("status", "?") + (f" on {', '.join(missed)}" if missed else "")


def published_biases(d: Path) -> list[dict]:
    """The store's biases published in a question's folder (store-bias*/bias.json), each with its folder's name."""
    return [json.loads(f.read_text()) | {"published_as": f.parent.name}
            for f in sorted(d.glob(f"store-bias*/{BIAS_FILE}"))]


def store_note(row: dict, biases: list[dict], link_to: str = "") -> str:
    """For a figure a cell made on the store: the bias of its own sitting (its machine's boot) beside it, linked; a
    bias of another sitting is not this figure's (a host moves it), so none is said in its place."""
    if not Host(**(row.get("host") or {})).on_store():
        return ""
    mine = next((b for b in biases if row.get("boot_id") and b.get("boot_id") == row["boot_id"]), None)
    if mine is None:
        return " (the store's bias was not measured in its sitting: not to be read as the disk's figure)"
    link = f"{link_to}{mine['published_as']}/README.md"
    return f" (the store's bias in its sitting: {bias_says(mine)}; [store bias]({link}))"
