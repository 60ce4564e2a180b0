"""What a verdict expects before its first cell: the walk itself, played with the outcomes decision.yaml's
`estimate.passes` names (and `passes_at_largest`, at the largest MEM only; anything else fails early), each cell
at the minutes its kind costs on this machine (`estimate.minutes` for the profile, measured here), and each
starting state at its build's minutes the first time a cell needs it. The same walk code runs, so the cells it counts are the cells the walk runs when the cells come out
as expected; a close call's confirmations cannot be foreseen and are not counted (the report sets the estimate
beside the walk's actual cells and minutes)."""
from __future__ import annotations

import contextlib
import io
from dataclasses import replace

from harness import registry
from harness.results import CellRecord, Estimate
from harness.scenario.decision import Costs
from harness.scenario.matrix import load_matrix
from harness.state.store import owner
from harness.walks.verdict.alternatives import closest_alternative
from harness.walks.verdict.controls import checked, implication_controls
from harness.walks.verdict.headroom import reference_cell
from harness.walks.verdict.answer import answers
from harness.walks.verdict.leaf import run_leaf, with_leaf
from harness.walks.verdict.states import leaf_engine
from harness.walks.verdict.roles import CANDIDATE, Role, candidate_of
from harness.walks.verdict.trade_offs import screen_trade_offs
from harness.walks.verdict.walk import Walk


CAPACITY_STEPS = 2      # a candidate's capacity, led by its busy share: one step under its line, one over (capacity.py)
ALTERNATIVE = "capacity step of the closest alternative"


class Tally:
    """The minutes the played walk would spend; its cells are the played walk's own records."""

    def __init__(self) -> None:
        self.minutes, self.state_minutes = 0.0, 0.0
        self.states: set[tuple[str, tuple]] = set()
        self.cells, self.by_label = 0, {}
        self.path: list[str] = []       # the played walk's answer at each level

    def forget(self, owner: str, keep_default: bool) -> None:
        """The states of `owner` (the engine whose states they are) dropped after a step (DROP_STATES, or a disk
        too small for them all): a later cell on them builds them again. keep_default: its states at the step's own
        layout stay (a later step opens them, or the leaf's first engine clones them: verdict/states.py, which
        keeps them where they fit; the estimate assumes they do)."""
        self.states = {s for s in self.states if s[0] != owner or (keep_default and not s[1])}

    def count(self, records: list[CellRecord]) -> None:
        self.cells = len(records)
        for r in records:
            self.by_label[r.label] = self.by_label.get(r.label, 0) + 1


def outcome_key(engine: str, tag: str, leaf_designs: set[str]) -> str:
    """The name decision.yaml's estimate.passes uses for a cell's configuration: engine, engine/option or
    engine/leaf-design (an implication control checks the configuration it stands for)."""
    tag = candidate_of(tag)         # a capacity step (or a headroom screen): expected as its candidate
    what = checked(tag)
    if what is not None:
        return f"{engine}/{'leaf-' if what in leaf_designs else ''}{what}" if what else engine
    return f"{engine}/{tag}" if tag else engine


def predicted(walk: Walk, passes: set[str], costs: Costs | None, tally: Tally, at_largest: set[str] = frozenset()):
    """An engine_at for `walk` that runs nothing: each cell passes if its configuration is in `passes`, or in
    `at_largest` and at the walk's largest MEM."""
    leaf = walk.tree.leaf
    designs = {d for names in leaf.designs.values() for d in names} if leaf else set()

    def engine_at(engine, settings, tag, mem, option=None, role: Role = CANDIDATE) -> list[CellRecord]:
        key = outcome_key(engine, tag, designs)
        ok = key in passes or (key in at_largest and mem == walk.mems[0])
        criteria = walk.criteria[:role.criteria]
        ran = criteria if ok else criteria[:1]
        if costs is not None:
            _add_state(tally, costs, engine, tag, option)
            fail = (costs.design_fail or costs.fail) if option is not None and option.logs_blocks else costs.fail
            # a screen that fails stops early as any failure does (the 11-29 walks' failed screens: 1.7-2.4 min)
            tally.minutes += sum(fail if not ok else costs.screen if walk.screened(cp, option, role) else
                                 costs.full.get(cp.criterion.scenario, fail) for cp in ran)
        recs = [CellRecord(cell_id="estimate", scenario=cp.criterion.scenario, engine=engine, mem=mem,
                           data_limit_bytes=None, scale=1.0, runtime="estimate", dir=f"{engine}-{tag}-{mem}",
                           state="complete", status="passed" if ok else "failed", label=role.label,
                           criterion=cp.criterion.name) for cp in ran]
        walk.records += recs
        return recs
    return engine_at


UNINDEXED = (("workload.indexes", "[]"),)      # the layout of an option without secondary indexes (no_indexes)


def _add_state(tally: Tally, costs: Costs, engine: str, tag: str, option) -> None:
    """A starting state, the first time a cell of `engine` needs it at the option's layout (its workload.* settings:
    the schema, the indexes): built and aged (an engine that opens another's states, libSQL, needs none of its
    own), at the minutes decision.yaml gives `engine/option` (the option's layout), else `engine`."""
    layout = _layout(option)
    if (owner(engine), layout) not in tally.states:
        tally.states.add((owner(engine), layout))
        if not layout and registry.manifest(engine).capabilities.indexes_after_ageing:
            tally.states.add((owner(engine), UNINDEXED))    # built and aged first, then indexed: its minutes hold both
        minutes = costs.state.get(f"{engine}/{tag.removeprefix('leaf-')}", _same_layout(costs, engine, layout))
        tally.state_minutes += minutes
        tally.minutes += minutes


def _layout(option) -> tuple:
    """An option's layout: its workload.* settings (the schema, the indexes), what its starting state depends on."""
    return tuple(sorted((k, str(v)) for k, v in (option.set if option is not None else {}).items()
                        if k.startswith("workload.")))


def _same_layout(costs: Costs, engine: str, layout: tuple) -> float:
    """The minutes decision.yaml gives another option of `engine` at the same layout (its current ∪ history state is
    the same whichever design first needs it), else the engine's own."""
    if layout:
        options = load_matrix().engines[engine].options
        for key, minutes in costs.state.items():
            name = key.removeprefix(f"{engine}/")
            if name != key and name in options and _layout(options[name]) == layout:
                return minutes
    return costs.state.get(engine, 0.0)


def _closest_alternative(tally: Tally, costs: Costs) -> None:
    """The closest alternative's capacity under 1x: which candidate came closest needs its figures, which a played
    cell has none of (the played walk names none), so its steps are counted here, led by its busy share as a
    candidate's are: one under its line, one over, each at a screen's minutes (a step under 1x has its blocks due
    less often, its 60 blocks longer: a pass's minutes, not a failure's)."""
    tally.cells += CAPACITY_STEPS
    tally.by_label[ALTERNATIVE] = CAPACITY_STEPS
    tally.minutes += CAPACITY_STEPS * costs.screen


def play(walk: Walk, passes: set[str], costs: Costs | None, drop_states: bool = False,
         at_largest: set[str] = frozenset()) -> Tally:
    """The whole walk (steps, leaf, implication controls) on a copy of `walk`, with predicted cells; with
    drop_states, each step's states are dropped as the walk drops them."""
    tally = Tally()
    engines = [s.engine for s in walk.tree.steps]
    kept = {owner(e) for e in leaf_engine(walk)}

    def dropped(w: Walk) -> None:
        done = w.steps[-1].engine
        later = {owner(e) for e in engines[engines.index(done) + 1:]}
        tally.forget(owner(done), owner(done) in later | kept)
    twin = replace(walk, records=[], matrix=[], steps=[], reference=[], cells_at_reference=0, pending=[],
                   on_step=dropped if drop_states else None)
    twin.engine_at = predicted(twin, passes, costs, tally, at_largest)
    twin.elapsed_min = lambda: tally.minutes        # the trade-offs' budget against the played walk's minutes
    with contextlib.redirect_stderr(io.StringIO()):         # the played walk's log is not the walk's
        twin.run()
        leaf = run_leaf(twin)
        implication_controls(twin, leaf)
        if twin.headroom_on:
            closest_alternative(twin, leaf)
            reference_cell(twin, "end")
        screen_trade_offs(twin)
    tally.count(twin.records)
    if twin.headroom_on and costs is not None and any(r.status == "failed" and r.label == "candidate"
                                                      for r in twin.records):
        _closest_alternative(tally, costs)
    tally.path = [f"{a.mem}: {a.design or a.engine or 'nothing'}"
                  for a in with_leaf(answers(twin.tree, twin.mems, twin.matrix, lambda m: None), leaf)]
    return tally


def estimate(walk: Walk, profile: str, drop_states: bool = False) -> Estimate:
    spec = walk.tree.estimate
    costs = spec.minutes.get(profile)
    tally = play(walk, set(spec.passes), costs, drop_states, set(spec.passes_at_largest))
    largest = f"; at {walk.mems[0]} only: {', '.join(spec.passes_at_largest)}" if spec.passes_at_largest else ""
    basis = (f"{costs.measured}; expected to pass: {', '.join(spec.passes) or 'nothing'}{largest}" if costs else
             f"no minutes measured for profile {profile!r} in decision.yaml's estimate: cells only")
    full = [costs.full.get(cp.criterion.scenario, costs.fail) for cp in walk.criteria] if costs else []
    return Estimate(cells=tally.cells, minutes=round(tally.minutes, 1), state_minutes=round(tally.state_minutes, 1),
                    by_label=tally.by_label, basis=basis, path=tally.path,
                    unexpected_pass_minutes=round(sum(full) - costs.fail + (CAPACITY_STEPS * costs.screen if walk.headroom_on
                                                                            else 0), 1)
                    if full else None,
                    close_call_minutes=round((walk.tree.confirm.runs - 1) * full[0], 1) if full and not walk.headroom_on
                    else None)
