"""Trade-off screens, after the answer. An option that gives something up (the simple schema, no indexes) is
never the answer, so its screen waits until the walk has found one, or found none, and runs only while the
walk's budget holds (decision.yaml's estimate.minutes.<profile>.walk_budget): on 2026-12-05 three such screens
and their states took ~25 of a ratio walk's ~165 minutes and could change nothing the walk answered. A screen the
budget leaves out is said in its cell (`unscreened`) and in the answer's trade-offs, never silently dropped."""
from __future__ import annotations

from harness.scenario.matrix import load_matrix
from harness.walks.verdict.answer import at_mem
from harness.walks.verdict.roles import log, screen


def screen_trade_offs(walk) -> None:
    """Each trade-off due a screen (Walk.pending, in the walk's order), once, on the first criterion, where its
    screen and its layout's state fit in the budget left; its matrix cell records it as tried, and as a trade-off
    if it passed."""
    costs = walk.tree.estimate.minutes.get(walk.opts.profile)
    budget = costs.walk_budget if costs else None
    matrix = load_matrix()
    for step, mem, name in walk.pending:
        opt = matrix.engines[step.engine].options[name]
        i = next(k for k, c in enumerate(walk.matrix) if c.engine == step.engine and c.mem == mem)
        cell = walk.matrix[i]
        need = costs.screen + costs.state.get(f"{step.engine}/{name}", 0.0) if costs else 0.0
        if budget is not None and walk.elapsed_min() + need > budget:
            why = (f"{opt.says} (gives up {opt.trade_off}): not screened, {walk.elapsed_min():.0f} min into the walk "
                   f"its ~{need:.0f} min would pass the walk's budget of {budget:.0f} min")
            log(f"{step.engine} at {mem}: {why}")
            walk.matrix[i] = cell.model_copy(update={"unscreened": cell.unscreened + [why]})
            continue
        role = screen(walk.tree.screen_blocks)
        log(f"{step.engine} at {mem}: screening the trade-off {name} ({opt.says}; {role.label})")
        recs = walk.engine_at(step.engine, step.set, name, mem, opt, role)
        passed = [f"{opt.says} (gives up {opt.trade_off}; passed {recs[0].scenario}, {role.label}, one run)"] \
            if at_mem(recs) == "pass" else []
        walk.matrix[i] = cell.model_copy(update={"tried": cell.tried + [name], "trade_offs": cell.trade_offs + passed})
    walk.pending = []
