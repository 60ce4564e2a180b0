"""A fault campaign's table (`make faults`): per engine and failure mode, the kills and where they landed, the
acknowledged blocks lost (must be 0), the restarts that replayed the block log, and the replay and recovery
times, from each crash run's result."""
from __future__ import annotations

from harness.results import RunResult


def campaign_row(r: RunResult, wall_s: float) -> dict:
    x = r.crash
    kills = x.kills if x else []
    replays = [k for k in kills if k.replayed_blocks]
    recovery = sorted(k.recovery_s for k in kills if k.recovery_s is not None)
    return {"engine": r.engine, "mode": x.mode if x else None, "status": r.status, "error": r.error,
            "kills": len(kills), "landed": dict(x.landed) if x else {},
            "acknowledged_blocks": x.acknowledged_blocks if x else 0,
            "lost_acked_blocks": x.lost_acked_blocks if x else None,
            "unacked_blocks": x.unacked_blocks if x else None, "corrupt_restarts": x.corrupt_restarts if x else None,
            "final_ok": x.final_ok if x else None, "replays": len(replays),
            "replayed_blocks_max": max((k.replayed_blocks for k in replays), default=0),
            "replay_s_max": max((k.replay_s or 0.0 for k in kills), default=None),
            "recovery_s_p50": recovery[len(recovery) // 2] if recovery else None,
            "recovery_s_max": recovery[-1] if recovery else None, "wall_s": round(wall_s, 1), "run_id": r.run_id}


def clean(row: dict) -> bool:
    """No acknowledged block lost, nothing unsent or corrupt, the last life whole, the run itself ran."""
    return (row["status"] in ("passed", "failed") and row["lost_acked_blocks"] == 0 and not row["unacked_blocks"]
            and not row["corrupt_restarts"] and row["final_ok"] is True)


def table(rows: list[dict]) -> str:
    head = ("| engine | failure | kills (landed in) | acknowledged | lost | replays (most blocks) | replay s max "
            "| recovery s p50 / max | wall min |\n|---|---|---|---:|---:|---|---:|---|---:|")
    lines = [head]
    for r in rows:
        landed = ", ".join(f"{k} {v}" for k, v in sorted(r["landed"].items()))
        lines.append(f"| {r['engine']} | {r['mode']} | {r['kills']} ({landed}) | {r['acknowledged_blocks']} | "
                     f"**{r['lost_acked_blocks']}** | {r['replays']} ({r['replayed_blocks_max']}) | "
                     f"{_f(r['replay_s_max'])} | {_f(r['recovery_s_p50'])} / {_f(r['recovery_s_max'])} | "
                     f"{r['wall_s'] / 60:.1f} |")
    return "\n".join(lines)


def _f(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}"
