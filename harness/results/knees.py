"""knee.json's typed model (harness/walks/knee.py): a knee search along one axis, its steps and its answer."""
from __future__ import annotations

from typing import Literal, Optional

from harness.results.models import Model

KNEE_VERSION = 1


class KneeStep(Model):
    """One step: a cell at one value of the axis, with the figures the curve and the answer read."""
    value: float                           # the axis's own unit: rows per block, bytes of MEM, scale
    confirming: bool                       # the knee's confirmation (the scenario's every-row check)
    repeat: int
    status: str                            # the cell's: passed | failed | oom | error | build_failed
    verdict: Literal["pass", "fail", "error"]   # error: neither (run once more; twice ends the search)
    p99_ms: Optional[float] = None
    service_p50_ms: Optional[float] = None
    rows_per_s: Optional[float] = None
    offered_rows_per_s: Optional[float] = None
    rows_per_block: Optional[int] = None
    db_bytes: Optional[int] = None
    phases: Optional[str] = None           # where its blocks' time went (results/phases.describe)
    biggest_phase: Optional[str] = None
    early_abort: bool = False
    failed_on: list[str] = []
    load: Optional[float] = None           # its tightest upper line's measured value over the limit (>1: failed)
    continued_rows: Optional[int] = None   # rows earlier steps wrote into its starting state; None: a fresh one
    cell: str


class KneeFile(Model):
    version: Literal[1] = KNEE_VERSION
    kind: Literal["knee"] = "knee"
    axis: Literal["rows", "mem", "scale"]
    unit: str
    scenario: str
    profile: str
    engine: str
    mem: Optional[str] = None              # the MEM of a rows or scale search; a mem search's floor
    scale: float
    criteria: list[str]
    floor: float                           # the easiest and hardest values the search could try (axis unit)
    ceiling: float
    start: float
    resolution: float
    block_interval_ms: Optional[float] = None
    command: Optional[str] = None          # the make command that asked for it (a published figure names it)
    started_utc: str
    steps: list[KneeStep] = []
    knee: Optional[float] = None           # None: not (yet) found; see converged and inconclusive_at
    converged: bool = False
    complete: bool = False
    inconclusive_at: Optional[float] = None
    sentence: Optional[str] = None
    finished_utc: Optional[str] = None
    wall_s: Optional[float] = None
