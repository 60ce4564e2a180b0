"""A block's phases as result.json names them (metrics.block_phases, written by harness/runner/phases.py),
and the one line that says where a block's time went."""
from __future__ import annotations

# The phases an adapter may time (ms, its last block): missing ones are recorded as 0, and the service
# time they do not cover is `other` (the harness's call overhead, or a phase the engine cannot tell apart).
ENGINE_PHASES = ("statements", "commit", "checkpoint")
PHASES = (*ENGINE_PHASES, "other")
PHASE_LABELS = {"statements": "statements", "commit": "commit", "checkpoint": "checkpoint in commit",
                "other": "other"}


def describe(split) -> str | None:
    """A result's metrics.block_phases (BlockPhaseFigures) in one line: "mean block 1,012 ms = statements
    610, checkpoint in commit 322, commit 80; engine CPU 74% of the block (user 70%, sys 4%)", phases largest
    first, those under 1% left out."""
    if split is None:
        return None
    ph = split.phases
    parts = [f"{PHASE_LABELS[p]} {ph[p].mean_ms:,.0f}" for p in sorted(ph, key=lambda p: -ph[p].share)
             if ph[p].share >= 0.01]
    line = f"mean block {split.service_mean_ms:,.0f} ms = {', '.join(parts)}"
    if split.cpu:
        mean = split.service_mean_ms or 1e-9
        line += (f"; engine CPU {split.cpu.share:.0%} of the block (user {split.cpu.user_mean_ms / mean:.0%}, "
                 f"sys {split.cpu.sys_mean_ms / mean:.0%})")
    return line
