"""reproduce.json (v2): a published verdict's answers measured again in a later sitting (harness/walks/reproduce/),
each level agreed, disagreed or disturbed, each figure beside the published one (raw: v1 also divided a time by the
sittings' speed, a scaling the record refuted), each answer's capacity measured on itself."""
from __future__ import annotations

from typing import Literal, Optional

from harness.results.base import Model
from harness.results.headroom import Capacity, ReferenceRun
from harness.results.walks import CellRecord

REPRODUCE_VERSION = 2
Label = Literal["passed with headroom", "passes today only", "passes", "fails", "error", "disturbed"]


class Figure(Model):
    """One figure of a target, published and reproduced: a deciding threshold's value, or its headroom screen's."""
    name: str                                   # "p99_5x: p99(commit_ms) < 500", "headroom screen, p99_5x: ..."
    published: Optional[float] = None
    reproduced: Optional[float] = None
    timed: bool = True                          # a time, or a share of one: normalised by the sittings' speed
    raw: Optional[float] = None                 # reproduced / published
    normalised: Optional[float] = None          # raw / (this sitting's reference / the published sitting's)
    moved: bool = False                         # normalised (raw where untimed) outside the spread between sittings


class Target(Model):
    """One configuration measured again at one level: the level's answer, or its alternative closest to passing."""
    mem: str                                    # where it runs
    level: str                                  # the level it speaks for (an implied answer runs at its source)
    role: Literal["answer", "alternative", "control"]
    engine: str
    tag: str = ""                               # the published cells' tag: "", an option, "leaf-<design>"
    headroom_from: Optional[str] = None         # a pass implied from this level: only its headroom measured here
    says: str                                   # "sqlite with a block log in front", "sqlite at its own settings"
    published: Label
    reproduced: Optional[Label] = None
    figures: list[Figure] = []
    changed_on: Optional[str] = None            # the figure whose pass or headroom changed the label
    capacity: Optional[Capacity] = None         # v2: this sitting's, measured on the target itself
    published_capacity: Optional[Capacity] = None   # v2: the walk's
    published_cells: list[str] = []
    cells: list[CellRecord] = []


class LevelAgreement(Model):
    mem: str
    answer: str                                 # the published answer's decision
    outcome: Literal["agreed", "disagreed", "disturbed", "unmeasured"]
    says: str                                   # one line: what changed and on which figure, or what disturbed it
    moved: list[str] = []                       # figures past the spread, whatever the label
    alternative_moved: list[str] = []           # v2: an alternative whose label changed: said, never a disagreement


class ReproduceFile(Model):
    version: Literal[1, 2] = REPRODUCE_VERSION
    kind: Literal["reproduce"] = "reproduce"
    published: str                              # the published folder's name
    run_id: Optional[str] = None                # its results folder's: a resumed sitting keeps its sitting folder
    published_commit: Optional[str] = None
    commit: Optional[str] = None                # this sitting's
    differs: list[str] = []                     # the code, the decision file or the host, where they differ
    date: str                                   # this sitting's (UTC)
    published_date: Optional[str] = None
    machine: dict = {}
    reference: list[ReferenceRun] = []          # this sitting's reference cells
    published_reference: list[ReferenceRun] = []
    speed: Optional[float] = None               # this sitting's reference figure / the published sitting's
    spread: float                               # how far a normalised figure may move before it is "moved"
    spread_basis: str
    targets: list[Target] = []
    levels: list[LevelAgreement] = []
    walk_s: Optional[float] = None
    updated_utc: Optional[str] = None
