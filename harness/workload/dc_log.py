"""The DC model's answer log (harness/reads/dc_check.py reads it): a JSON header holding what every checked read
needs at the block the log starts (the counts, each node's status and version, each workload's status and
whether it is assigned, the seed its fixed attributes come from), then one line per block of what it changed:
nc/wc (node and workload counts: index, delta), nw (workloads per node: index, delta), ns (a node's new status:
index, status), ws (a workload's new status: dc, number, status; a submission is its first) and as (a workload
assigned: dc, number). Written by the block feed, outside the memory limit; flushed every block, since a
reader's answer may be checked against any block."""
from __future__ import annotations

import json
from pathlib import Path

DC_LOG_FORMAT = 2


class AnswerLog:
    def __init__(self, path: Path, header: dict) -> None:
        self._f = open(path, "w")
        self._f.write(json.dumps({"format": DC_LOG_FORMAT, **header}) + "\n")
        self._f.flush()
        self._changes: dict[str, list] = {}

    def change(self, what: str, values: tuple) -> None:
        self._changes.setdefault(what, []).append(values)

    def end_block(self, number: int) -> None:
        self._f.write(json.dumps({"b": number, **self._changes}) + "\n")
        self._f.flush()
        self._changes = {}

    def close(self) -> None:
        self._f.close()
