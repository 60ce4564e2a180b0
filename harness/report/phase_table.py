"""Where each cell's blocks spent their service time (result v9 metrics.block_phases): a table per scenario."""
from __future__ import annotations

from harness.results.phases import PHASE_LABELS, PHASES


def phase_table(cells) -> tuple[list[str], list[list]] | None:
    rows = []
    for c in cells:
        split = c.result.metrics.block_phases
        if split is None:
            continue
        ph = split.phases
        rows.append([c.label, f"{split.service_mean_ms:,.0f}",
                     *(f"{ph[p].mean_ms:,.0f} ({ph[p].share:.0%}); p99 {ph[p].p99_ms:,.0f}"
                       if p in split.timed or p == "other" else "-" for p in PHASES),
                     f"{split.cpu.share:.0%} (sys {split.cpu.sys_mean_ms / (split.service_mean_ms or 1):.0%})"
                     if split.cpu else "not visible", PHASE_LABELS[split.biggest]])
    if not rows:
        return None
    return (["cell", "mean block ms", *(f"{PHASE_LABELS[p]} ms (share); p99" for p in PHASES),
             "engine CPU of the block", "biggest"], rows)
