"""compare_versions' engines side by side (decision.yaml): the library each ran in this verdict, or would run
as installed here, and whether two consecutive steps ran the same one."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from harness.errors import ConfigError
from harness.results import LibraryVersion, VerdictStep, load_result
from harness.scenario.decision import DecisionTree
from harness.versions import probe


def library_versions(tree: DecisionTree, steps: list[VerdictStep], root: Path) -> list[LibraryVersion]:
    """compare_versions' engines side by side: as measured where a step (or control) ran them, else as
    installed here (harness.versions), each with the settings the tree gives it (a control's too)."""
    of = tree.compare_versions.of
    wanted: list[tuple[str, dict]] = []
    for i, s in enumerate(tree.steps):
        if s.engine in tree.compare_versions.engines:
            wanted.append((s.engine, s.set))
        if s.control and i:
            wanted.append((tree.steps[i - 1].engine, {**tree.steps[i - 1].set, **s.control.set}))
    wanted += [(e, {}) for e in tree.compare_versions.engines if e not in {w[0] for w in wanted}]
    wanted = list({(e, json.dumps(s, sort_keys=True)): (e, s) for e, s in wanted}.values())
    ran = {}
    for s in steps:
        for engine, settings, cells in ((s.engine, s.set, s.cells),
                                        *(((s.control.engine, s.control.set, s.control.cells),) if s.control else ())):
            for c in cells:
                r = load_result(root / c.scenario / c.dir / "result.json") if c.state == "complete" else None
                if r is not None and r.engine_library:
                    ran.setdefault((engine, json.dumps(settings, sort_keys=True)), r)
    out = []
    for engine, settings in wanted:
        r = ran.get((engine, json.dumps(settings, sort_keys=True)))
        if r is not None:
            out.append(LibraryVersion(engine=engine, set=settings, library=r.engine_library, driver=r.engine_driver,
                                      version=r.engine_related_versions.get(of), source="measured"))
            continue
        try:
            p = probe(engine, settings)
        except ConfigError as e:
            print(f"[verdict] {e}", file=sys.stderr)
            continue
        out.append(LibraryVersion(engine=engine, set=settings, library=p["library"], driver=p["driver"],
                                  version=p["related"].get(of), source="installed"))
    return out


def version_note(tree: DecisionTree, i: int, table: list[LibraryVersion]) -> str | None:
    """Between two consecutive steps of compare_versions' engines: did they run the same library?"""
    if i == 0:
        return None
    a, b = tree.steps[i - 1], tree.steps[i]
    of = tree.compare_versions.of
    find = lambda s: next((v for v in table if v.engine == s.engine and v.set == s.set), None)  # noqa: E731
    va, vb = find(a), find(b)
    if va is None or vb is None or va.version is None or vb.version is None:
        return None
    if va.version == vb.version:
        return (f"{b.engine} runs {of} {vb.version}, as {a.engine} did ({va.driver}): the same {of}, so this step "
                f"measures {b.engine} itself, not a {of} upgrade")
    return (f"{a.engine} ran {of} {va.version} ({va.driver}), {b.engine} runs {of} {vb.version} ({vb.driver}): "
            f"a difference between them may be {of}'s own, not {b.engine}'s; the control (if any) tells")
