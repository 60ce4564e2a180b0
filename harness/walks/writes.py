"""`make writes ENGINE= POINTS="1:1284m 2:2568m 5:6420m 5:8g" [SCENARIO=p99_5x] [PROFILE=ratio] [DURATION=s]
[DROP_STATES=1] [SET=]`: the reference's "max writes" (its success table): at each scale and MEM, the most rows
per block at which every line of the scenario still holds, as rows/s. The chain's block time is fixed, so more
writes are bigger blocks: a knee along rows (walks/knee.py) per point, its bounds from its own steps (each from
the same starting state, stopped early where a line can no longer pass, the knee confirmed by a cell of its own
with every row checked), the line that bound it named (the p99, the applier's busy share, the lag). MEM is given
per point, as the question asks it (scale x the ratio walk's smallest level, or a literal 8g): a point is
"scale:MEM". Resumable: each knee is found, not run again; writes.json after each point."""
from __future__ import annotations

import sys
from pathlib import Path

from harness.environment import utc_now
from harness.errors import EXIT_RUN_FAILED, ConfigError
from harness.report.success.publish_writes import WRITES_FILE
from harness.results import load_knee, load_result, write_json
from harness.results.headroom import Host
from harness.results.knees import KneeFile
from harness.units import parse_size_bytes
from harness.walks.knee import KNEE_FILE, knee, knee_dir, knee_runs, search_opts, started_at
from harness.walks.sweep import CellOptions, sweep_dir_for

WRITES_VERSION = 1


def _log(msg: str) -> None:
    print(f"[writes] {msg}", file=sys.stderr, flush=True)


def parse_points(text: str) -> list[tuple[float, str]]:
    """POINTS="1:1284m 5:8g": each a scale (fraction of 1x) and the MEM the database gets there."""
    out = []
    for item in text.split():
        scale, sep, mem = item.partition(":")
        try:
            if not sep or float(scale) <= 0:
                raise ValueError
            parse_size_bytes(mem)
        except (ValueError, ConfigError):
            raise ConfigError(f"POINTS: {item!r}: each point is <scale>:<MEM>, a scale above 0 and a size, e.g. "
                              "1:1284m 5:8g") from None
        out.append((float(scale), mem))
    if not out:
        raise ConfigError('POINTS: none given; e.g. POINTS="1:1284m 2:2568m 5:6420m 5:8g"')
    return out


def writes(scenario: str, engine: str, opts: CellOptions, results_root: Path, points: list[tuple[float, str]],
           drop_states: bool = False, command: str | None = None, start_rows: float | None = None) -> int:
    """start_rows: the first point's knee starts there (default: the scenario's block); each later point's starts
    at the knee before it, where it is most likely to be found again (2x held 1,854 rows a block and 1x passed
    there in one sitting, 12-07): its neighbours next, so a point whose knee did not move takes three steps."""
    spec = {"scenario": scenario, "engine": engine, "points": points, "drop_states": drop_states,
            "opts": opts.asked()} | started_at(start_rows)
    root = sweep_dir_for(results_root, "writes", f"{Path(scenario).stem}-{engine}", spec)
    root.mkdir(parents=True, exist_ok=True)
    out = {"version": WRITES_VERSION, "kind": "writes", "scenario": Path(scenario).stem, "engine": engine,
           "profile": opts.profile, "overrides": list(opts.overrides), "command": command, "rows": [],
           "started_utc": utc_now(), "complete": False}
    start = start_rows
    for i, (scale, mem) in enumerate(points, 1):
        _log(f"point {i}/{len(points)}: scale {scale:g} at MEM {mem}" + (f", from {start:,.0f} rows a block" if start
                                                                         else ""))
        knee(scenario, engine, "rows", opts, results_root, mem=mem, scale=scale, drop_states=drop_states,
             start_rows=start)
        where = knee_dir(scenario, engine, "rows", search_opts(opts, drop_states), results_root, mem, scale, start)
        k = load_knee(where / KNEE_FILE)
        if k is None or not k.complete:
            _log(f"scale {scale:g} at {mem}: interrupted; run the same command again to resume")
            return EXIT_RUN_FAILED
        out["rows"].append(row_of(k, where))
        write_json(root / WRITES_FILE, out)
        start = k.knee or start     # the next point's knee starts at this one's: a resumed walk derives the same
    out["complete"], out["finished_utc"] = True, utc_now()
    write_json(root / WRITES_FILE, out)
    for r in out["rows"]:
        _log(r["sentence"])
    print(root / WRITES_FILE)
    return 0


def row_of(k: KneeFile, where: Path) -> dict:
    """One point of the table from its finished knee: the most rows per block that held, as rows/s over its runs
    (the slowest), its p99 (the worst), and what the nearest failing step above it missed."""
    runs, nearest = knee_runs(k) if k.knee is not None else ([], None)
    first = load_result(where / runs[0].cell / "result.json") if runs else None
    return {"scale": k.scale, "mem": k.mem, "knee_rows_per_block": k.knee,
            "block_interval_ms": k.block_interval_ms,
            "rows_per_s": min((s.rows_per_s or 0 for s in runs), default=None),
            "p99_ms": max((s.p99_ms or 0 for s in runs), default=None),
            "reached": nearest is not None, "bounded_at_rows_per_block": nearest.value if nearest else None,
            "bounded_by": nearest.failed_on if nearest else [], "floor_rows_per_block": k.floor,
            "steps": len(k.steps), "wall_s": k.wall_s, "converged": k.converged,
            "host": Host.of(first.environment).model_dump() if first else None,
            "sitting": (k.finished_utc or k.started_utc)[:10], "boot_id": first.environment.get("boot_id") if first
            else None, "knee": where.name, "sentence": k.sentence}
