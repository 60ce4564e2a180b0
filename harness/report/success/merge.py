"""A success question's walk is measured a point or a mix a sitting (a 2x knee or two read searches are an hour
each), so its table grows over sittings: a later sitting's rows published into the folder that holds the earlier
ones join them. Each row keeps what made it (its command, its MEM), a row measured again is the new one, and
rows of another configuration are refused: one table is one engine and one set of settings."""
from __future__ import annotations

import shlex
from pathlib import Path
from typing import Callable

from harness.errors import ConfigError
from harness.results.headroom import Host


def settings_of(walk: dict) -> list[str]:
    """The settings beside the scenario's a walk ran with. A file from before the walks kept them (reads.json
    version 1) has them only in its command: its POLICY=, DURABILITY= and SET= words."""
    if "overrides" in walk:
        return list(walk["overrides"])
    words = shlex.split(walk.get("command") or "")
    policy = [f"{field}={w.partition('=')[2]}" for name, field in (("POLICY", "memory.policy"),
                                                                     ("DURABILITY", "durability"))
              for w in words if w.startswith(f"{name}=")]        # as the Makefile's POLICY_SET orders them
    return policy + [s for w in words if w.startswith("SET=") for s in w[4:].split()]


def merged(old: dict | None, new: dict, where: Path, same: tuple[str, ...], key: Callable[[dict], tuple],
           stamp: tuple[str, ...] = ("command",)) -> dict:
    """`new`'s rows over `old`'s (None: nothing published yet), sorted by `key`, which also says which rows are
    the same measurement. Each row gets the walk's `stamp` fields where it has none of its own. `same` names
    the walk's fields both must share ("overrides": compared as settings_of says)."""
    def rows_of(walk: dict) -> list[dict]:
        return [{**row, **{f: row.get(f) or walk.get(f) for f in stamp}} for row in walk["rows"]]
    rows = rows_of(new)
    out = {**new, "overrides": settings_of(new)}
    if old is None:
        return {**out, "rows": sorted(rows, key=key)}
    for field in same:
        was, now = (settings_of(old), out["overrides"]) if field == "overrides" else (old.get(field), new.get(field))
        if was != now:
            raise ConfigError(f"{where}: holds the {new.get('kind', 'walk')} of {field} {was!r}, this run's is "
                              f"{now!r}: one table's rows share {', '.join(same)}; publish it AS= another folder")
    ran = {key(row) for row in rows}
    kept = [row for row in rows_of(old) if key(row) not in ran]
    return {**out, "rows": sorted(kept + rows, key=key),
            "started_utc": min(old["started_utc"], new["started_utc"]),
            "finished_utc": max(old.get("finished_utc") or "", new.get("finished_utc") or "")}


def commands_said(rows: list[dict], entry: Callable[[dict], str]) -> list[str]:
    """A README's command lines: each command that made rows of the table, with what it made (entry(row))."""
    made: dict[str, list[str]] = {}
    for row in rows:
        made.setdefault(row.get("command") or "?", []).append(entry(row))
    return [f"- Command: `{cmd}` ({'; '.join(what)})" for cmd, what in made.items()]


def cpu_of(row: dict) -> str:
    return (row.get("host") or {}).get("cpu_model") or "unknown CPU"


def hosts_says(rows: list[dict]) -> str | None:
    """The machines a table's rows ran on: one per sitting (sitting_of), with its first row's disk figures (two
    sittings of one CPU model and kernel can differ in their disk); one machine said once."""
    first = {sitting_of(row): Host(**row["host"]).says() for row in reversed(rows) if row.get("host")}
    return "; ".join(dict.fromkeys(reversed(first.values()))) or None


def sitting_of(row: dict) -> str:
    """A row's sitting: its machine's boot where the row kept it, else the walk that made it (its command). Two
    walks on one day can be two sittings on two hosts: rows of walks that kept no boot are never taken for one."""
    return row.get("boot_id") or f"{row.get('sitting')}: {row.get('command')}"


def store_says(row: dict) -> str:
    """' on the store' for a figure a cell made on the copy-on-write store (make store): it is read through the
    store's bias (make store-bias), never as the disk's own, and never joins the disk's figures in one line."""
    return " on the store" if Host(**(row.get("host") or {})).on_store() else ""


def host_short(row: dict) -> str:
    """The CPU and its fsync p50: two sittings of one day and one CPU model can differ in their disk."""
    fsync = (row.get("host") or {}).get("fsync_p50_us")
    return cpu_of(row) + (f", fsync p50 {fsync:,.0f} µs" if fsync else "")
