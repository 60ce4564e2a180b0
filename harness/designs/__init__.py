"""Designs over the engine contract (docs/design.md, "Designs over the contract"): how an application would
deploy an engine differently, the tree's last leaf. A design wraps any adapter and is itself an engine to the
runner; the plan names it (block_log), engine_for() builds it."""
from __future__ import annotations

from harness import registry


def engine_for(plan):
    """The plan's engine: its adapter, behind the design the plan names."""
    engine = registry.engine_class(plan.engine)()
    if plan.design == "block_log":
        from harness.designs.block_log import BlockLogEngine
        b = plan.block_log
        return BlockLogEngine(engine, b.group_blocks, b.sync, b.applied_is_durable, b.segment_bytes,
                              b.lag_bound_blocks)
    return engine
