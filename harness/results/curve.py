"""curve.json (harness/walks/curve.py): a configuration's figures against the database's size at one data-to-memory
ratio, and each figure's 10x projection, a type of its own (projected is always true): never a measured point."""
from __future__ import annotations

from typing import Literal, Optional

from harness.results.base import Model
from harness.results.headroom import Host

CURVE_VERSION = 1


class CurvePoint(Model):
    scale: float
    mem: str
    size_gib: float                     # the starting state's data, GiB
    status: str
    service_p50_ms: Optional[float] = None
    ack_p99_ms: Optional[float] = None
    queryable_p99_ms: Optional[float] = None
    rows_per_s: Optional[float] = None
    busy: Optional[float] = None          # behind a block log: the applier's busy share
    harness_share: Optional[float] = None  # the harness's own bytes inside MEM (an embedded engine's process), of MEM
    cell: str                           # <scenario>/<dir>
    sitting: str
    host: Optional[Host] = None
    boot_id: Optional[str] = None       # the machine's boot: a sitting's identity (report/success/curve_sittings.py)


class CurveProjection(Model):
    figure: str
    projected: Literal[True] = True     # a fit's prediction, never a measurement
    scale: float
    size_gib: float
    value: float
    lo: float
    hi: float
    model: str
    says: str


class CurveFile(Model):
    version: Literal[1] = CURVE_VERSION
    kind: Literal["curve"] = "curve"
    scenario: str
    engine: str
    profile: Optional[str]
    ratio: float                        # data bytes per byte of MEM, at every point
    # MEM = scale x this instead (the verdict's smallest level at 1x): one budget for the reference and a design
    # whose layout is smaller, so both are measured at the reference data's ratio, not each at its own
    mem_1x: Optional[str] = None
    overrides: list[str] = []
    # every point's criteria where a rows override scaled the scenario's absolute rate of rows (walks/curve.py)
    criteria: list[str] = []
    command: str
    points: list[CurvePoint] = []
    projections: list[CurveProjection] = []
    complete: bool = False
    wall_s: Optional[float] = None
    updated_utc: str
