"""sweep.json's and verdict.json's typed models: the cells of a sweep or a verdict walk, and the verdict's
steps, matrix and answers per memory level."""
from __future__ import annotations

from typing import Literal, Optional

from pydantic import model_validator

from harness.results.answers import Alternative, MemAnswer, ReaderAnswer
from harness.results.headroom import Headroom, ReferenceRun
from harness.results.models import Model, Status, ThresholdResult

SWEEP_VERSION = 1
VERDICT_VERSION = 12


class CellRecord(Model):
    """One cell of a sweep or a verdict: what was asked, its state, and (once complete) its figures."""
    cell_id: str
    scenario: str
    engine: str
    mem: Optional[str]
    data_limit_bytes: Optional[int]

    @model_validator(mode="before")
    @classmethod
    def _old_name(cls, data):
        """sweep.json before result v5 named MEM mem_limit_bytes."""
        if isinstance(data, dict) and "mem_limit_bytes" in data:
            data = {**data, "data_limit_bytes": data["mem_limit_bytes"]}
            del data["mem_limit_bytes"]
        return data
    scale: float
    repeat: int = 1
    variant: Optional[str] = None        # what sets it apart from the engine's other cells: an option's name, or
                                         # its SET items (None: the engine's own settings); repeats share it
    runtime: str
    place: str = "local"                 # what placed it: this machine, or an orchestrator (harness/place/)
    node: Optional[str] = None           # the node it ran on, where an orchestrator chose it
    dir: str
    state: Literal["running", "complete", "partial"]
    started_utc: Optional[str] = None
    finished_utc: Optional[str] = None
    exit_code: Optional[int] = None
    status: Optional[Status] = None
    error: Optional[str] = None
    p50_ms: Optional[float] = None
    p99_ms: Optional[float] = None
    queryable_p99_ms: Optional[float] = None    # v9: when a reader can see a block, from its due time (p99)
    max_ms: Optional[float] = None
    blocks: Optional[int] = None
    rows_per_s: Optional[float] = None
    bloat_ratio: Optional[float] = None
    wal_bytes_max: Optional[float] = None
    checkpoints: Optional[int] = None
    integrity_ok: Optional[bool] = None
    thresholds: list[ThresholdResult] = []
    early_abort: Optional[dict] = None
    label: Optional[str] = None          # verdict v6: candidate | confirmation | screened over N blocks | control
    load_digest: Optional[dict[str, str]] = None
    code_digest: Optional[str] = None    # the measuring code's (harness/provenance.py), as the run recorded it
    load_row_counts: Optional[dict[str, int]] = None
    # set by the verdict
    criterion: Optional[str] = None
    measure_s: Optional[float] = None
    diagnosis: Optional[str] = None           # one line on why it did not pass (harness/walks/verdict/answer.py)


class SweepFile(Model):
    version: Literal[1] = SWEEP_VERSION
    kind: Literal["sweep", "verdict-cells", "matrix", "experiments"]
    dir: str
    spec: Optional[dict] = None
    updated_utc: str
    cells_total: int
    cells_complete: int
    status_counts: dict[str, int]
    starting_state: dict[str, dict]
    cells: list[CellRecord]


class ControlRun(Model):
    """The step before, again on the same cells, changed only by `set` (decision.yaml's control)."""
    engine: str
    set: dict
    why: str
    passed: bool
    outcome: Literal["passed", "failed", "error"]
    errors: list[str]
    cells: list[CellRecord]
    cells_unrun: int = 0
    options: list[str] = []        # the tune options the step passed with, carried into the control (like for like)


class VerdictStep(Model):
    engine: str
    decision: str
    passed: bool                                # at one MEM at least
    outcome: Literal["passed", "failed", "error", "mixed"]   # mixed: passed at some MEMs, not at others
    errors: list[str]
    cells: list[CellRecord]
    set: dict = {}                              # the step's own engine settings
    cells_unrun: int = 0                        # left unrun once a cell had failed the step (ALL_CELLS=1 runs them)
    control: Optional[ControlRun] = None
    version_note: Optional[str] = None          # whether it ran the same library as the step before


class LibraryVersion(Model):
    """One engine's library of the kind decision.yaml's compare_versions names, as it ran or is installed."""
    engine: str
    set: dict = {}
    library: str                                # engine_library
    driver: str
    version: Optional[str]                      # engine_related_versions[of]
    source: Literal["measured", "installed"]    # a cell's result.json, or harness.versions' probe


class Verdict(Model):
    engine: Optional[str]
    decision: str
    path: list[str]
    note: Optional[str] = None                  # what a control found, e.g. an upgrade alone also passes


class MatrixCell(Model):
    """One engine at one MEM in the walk: pass, fail, unstable (a close call's runs disagreed: never an
    answer, and nothing implied below it), implied (a failure at a larger MEM implies it; not run), error
    (no measurement: the answer there is inconclusive), or not run (the MEM had its answer)."""
    engine: str
    mem: str
    outcome: Literal["pass", "fail", "unstable", "implied", "error", "not run"]
    runs: list[str] = []                        # v5: each close call's runs, "p99_5x: passed 3 of 3"
    cells: list[str] = []                       # <scenario>/<dir> of the cells behind it
    diagnosis: Optional[str] = None
    tuned_with: Optional[str] = None            # a pass only with this matrix option (decision.yaml's tune)
    tried: list[str] = []                       # the options tried after a failure at the policy's settings
    trade_offs: list[str] = []                  # options that passed only by giving something up
    unscreened: list[str] = []                  # v10: trade-offs due a screen the walk's budget left out
    passed_options: list[str] = []              # v5: the options that passed here, trade-offs included (tried below)
    headroom: Optional[Headroom] = None         # v7: its pass at m times the load (None: not a pass, or no reference)


class LeafCell(Model):
    """v4: one design of the tree's last leaf at one MEM (harness/walks/verdict/leaf.py)."""
    engine: str
    design: str                                 # the matrix option
    says: str
    mem: str
    outcome: Literal["pass", "fail", "unstable", "implied", "error"]
    implied_from: Optional[str] = None          # v6: not run here; implied by its measured outcome at this MEM
    runs: list[str] = []                        # v5: its close calls' runs
    cells: list[str] = []
    diagnosis: Optional[str] = None
    ack_p99_ms: Optional[float] = None          # the first criterion's commit p99: under a block log, its acknowledgement
    lag_p99_blocks: Optional[float] = None      # a block log's apply lag p99
    lag_p99_ms: Optional[float] = None          # v7: how long the index trails the acknowledgement, p99
    queryable_p99_ms: Optional[float] = None    # v9: when a reader sees a block, p99 from its due time
    closeness: Optional[float] = None           # the largest measured / limit of its '<' thresholds (below 1: passed)
    split: Optional[str] = None                 # where its block went
    headroom: Optional[Headroom] = None         # v7
    headroom_here: bool = False                 # v7: its pass implied from below, its headroom measured at this MEM


class ImplicationControl(Model):
    """v6: one implied cell measured after all, to test the assumption that implied it (harness/walks/verdict/controls.py)."""
    direction: Literal["failure implies below", "pass implies above"]
    engine: str
    what: Optional[str] = None                  # the option or design; None: the engine's own settings
    mem: str
    implied_from: Optional[str] = None          # the MEM whose measured outcome implied this one
    expected: Literal["pass", "fail"]
    outcome: Optional[str] = None               # passed | failed | error | oom; None: no implied cell to measure
    agreed: Optional[bool] = None
    cells: list[CellRecord] = []
    note: Optional[str] = None


class Estimate(Model):
    """v6: what the walk expected before its first cell (harness/walks/verdict/estimate.py)."""
    cells: int
    minutes: float
    state_minutes: float
    by_label: dict[str, int] = {}
    basis: str                                  # where the costs and the expected outcomes come from
    # what it cannot foresee, each at its minutes here: a candidate expected to fail that passes (every criterion
    # in full, not one failure), and a close call (its runs again)
    unexpected_pass_minutes: Optional[float] = None
    close_call_minutes: Optional[float] = None
    path: list[str] = []                        # v7: the played walk's answer per level ("5137m: sqlite: block_log")

    def not_foreseen(self) -> str:
        """What it cannot foresee, and what each costs: '' where it has no minutes."""
        if self.unexpected_pass_minutes is None:
            return ""
        if self.close_call_minutes is None:         # a walk with a reference cell: headroom, not confirmations
            return (f"a candidate expected to fail that passes costs about {self.unexpected_pass_minutes:.0f} min more "
                    f"(every criterion in full and its capacity's steps); one that passes today only leaves its level "
                    f"open, and the next step or design runs there")
        return (f"a candidate expected to fail that passes costs about {self.unexpected_pass_minutes:.0f} min more "
                f"(every criterion in full; what runs below it changes too), a close call about "
                f"{self.close_call_minutes:.0f} more (its runs again)")


class VerdictFile(Model):
    version: Literal[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12] = VERDICT_VERSION
    kind: Literal["verdict"] = "verdict"
    decision_file: str
    profile: str
    mems: list[str]
    repeats: int
    dir: str
    criteria: list[dict]
    steps: list[VerdictStep]
    verdict: Optional[Verdict] = None
    caveats: list[str] = []
    updated_utc: Optional[str] = None
    versions_of: Optional[str] = None           # compare_versions.of: "sqlite"
    library_versions: list[LibraryVersion] = []
    version_notes: list[str] = []               # each pair of consecutive steps among them, run or not
    memory_basis: Optional[str] = None          # how MEMS was derived (a ratio profile), else none
    answers: list[MemAnswer] = []
    matrix: list[MatrixCell] = []
    leaf: list[LeafCell] = []                   # v4: the tree's last leaf, where no engine passed
    walk_s: Optional[float] = None              # from the command to its end (this sitting), the state sizing MEM included
    cells_implied: int = 0
    monotonicity: Optional[str] = None          # the assumption behind implied cells, as the report states it
    implication_controls: list[ImplicationControl] = []     # v6: one implied cell per direction, measured
    cells: list[CellRecord] = []                # v6: every cell the walk ran, in order, each with its label
    estimate: Optional[Estimate] = None         # v6: cells and minutes expected before the first cell
    durability: Optional[str] = None            # v7: every cell's (decision.yaml's durability, or DURABILITY=)
    reference: list[ReferenceRun] = []          # v7: the sitting's reference cells, in order
    readers: list[ReaderAnswer] = []            # v9: the stricter readers' answer per level (decision.yaml readers)
    alternative: Optional[Alternative] = None   # v9: the closest failure, and how far it is
    asked: dict = {}                            # v8: the walk's cell options (DURATION=, early abort, ...): a
                                                # reproduction runs its cells with them


MATRIX_VERSION = 5


class OptionRow(Model):
    """One option of a matrix run (or its baseline, or the best combination) beside the baseline."""
    option: str                          # "baseline", an option's name, or "best" (the combination)
    says: str
    overrides: list[str] = []
    trade_off: Optional[str] = None
    dir: Optional[str] = None            # the cell's folder in the matrix run
    status: Optional[str] = None
    p99_ms: Optional[float] = None       # commit latency from the intended start
    service_p50_ms: Optional[float] = None
    rows_per_s: Optional[float] = None   # committed inside the measured window
    p99_vs_baseline: Optional[float] = None   # this p99 / the baseline's
    service_p50_vs_baseline: Optional[float] = None   # v2
    helped: Optional[bool] = None        # the matrix's basis lower than the baseline's by more than its noise
    write_amplification: Optional[float] = None
    read_iops: Optional[float] = None
    resident_share_end: Optional[float] = None
    read_p99_ms: Optional[float] = None  # its read mix's p99 (options with reads: true, and the baseline)
    read_p99_vs_baseline: Optional[float] = None
    read_status: Optional[str] = None
    passed: Optional[bool] = None        # every threshold of the scenario met
    settled_blocks: Optional[int] = None  # v3: the cell ended after these blocks, unable to beat the baseline
    settled_budget_s: Optional[float] = None  # v4: ended past this clock, every block slower than the baseline
    db_bytes_end: Optional[int] = None   # v5: the engine's files at the end (result metrics.db_bytes_final)
    split: Optional[str] = None          # v5: where a block's time went, or a block log's acknowledgement, apply, lag


class MatrixFile(Model):
    version: Literal[1, 2, 3, 4, 5] = MATRIX_VERSION
    engine: str
    scenario: str
    profile: Optional[str]
    mem: Optional[str]
    noise: float
    # v2: what `helped` compares: "p99", or "service p50" where the baseline was saturated (its p99 is then
    # the backlog since the clock started, which any small gain in a block's cost shrinks many times over)
    basis: str = "p99"
    dir: str
    updated_utc: str
    rows: list[OptionRow]
    combination: list[str] = []          # the options the best combination took (empty: none helped)
    answer: str                          # one line: does any option (or the combination) meet the thresholds


MATRICES_VERSION = 1


class EngineBest(Model):
    """One engine's matrix in a side-by-side: its baseline, its best option that gives nothing up (the
    combination included) and its best with a trade-off, each on the matrix's basis; None: none measured."""
    engine: str
    dir: str                             # the engine's matrix directory (its matrix.json and matrix.md)
    basis: str
    baseline: Optional[OptionRow] = None
    best_clean: Optional[OptionRow] = None
    best_traded: Optional[OptionRow] = None
    answer: str


class MatricesFile(Model):
    version: Literal[1] = MATRICES_VERSION
    scenario: str
    profile: Optional[str]
    mem: Optional[str]
    updated_utc: str
    engines: list[EngineBest]
