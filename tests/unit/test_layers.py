"""The house's floors (docs/design.md, "Layers"): every import between harness's folders and top-level modules
points down a floor, and no module imports itself back through others. Lazy imports inside functions count:
a layer that only reaches up at run time still reaches up. The registry's discovery of engines/ is the one
import that leaves harness/, by design."""
import ast
import collections
from pathlib import Path

from tests.conftest import ROOT

FLOORS = [
    {"errors", "units", "validation", "stats", "provenance", "platform", "walks", "walks.bracket"},
    {"workload", "trend"},
    {"reads", "engine_api", "sql", "environment", "results"},
    {"registry"},
    {"scenario", "state", "feed", "versions", "designs", "registry_cli"},
    {"runner", "report", "windows"},
    {"runtime"},
    {"crash"},
    {"cell", "records"},
    {"place", "cell_states", "compare_window"},
    {"walks.sweep", "walks.knee_prior", "walks.knee_continue", "bench", "compare"},
    {"walks.knee", "walks.capacity", "walks.curve", "walks.store_bias"},
    {"walks.verdict", "walks.ceiling", "walks.writes", "walks.matrix", "walks.experiments", "walks.capacity_run"},
    {"walks.v1", "walks.reads", "walks.matrices", "walks.reproduce"},
    {"cli"},
]
FLOOR = {unit: i for i, units in enumerate(FLOORS) for unit in units}


def _modules() -> dict[str, Path]:
    out = {}
    for f in (ROOT / "harness").rglob("*.py"):
        name = ".".join(f.relative_to(ROOT).with_suffix("").parts)
        out[name.removesuffix(".__init__")] = f
    return out


def _imports(mods: dict[str, Path]) -> dict[str, set[str]]:
    edges = collections.defaultdict(set)
    for name, f in mods.items():
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("harness"):
                for a in node.names:
                    full = f"{node.module}.{a.name}"
                    edges[name].add(full if full in mods else node.module)
            elif isinstance(node, ast.Import):
                edges[name] |= {a.name for a in node.names if a.name.startswith("harness.")}
        edges[name].discard(name)
    return edges


def _unit(module: str) -> str:
    """harness.<folder or module>, but a walk (harness/walks/) is a unit of its own: their floors differ."""
    parts = module.split(".")
    if parts[1:2] == ["walks"] and len(parts) > 2:
        return f"walks.{parts[2]}"
    return parts[1] if len(parts) > 1 else module


def test_every_folder_and_top_level_module_has_a_floor():
    units = {_unit(m) for m in _modules()} - {"harness", "__main__"}
    assert units <= set(FLOOR), f"no floor for {sorted(units - set(FLOOR))}: add them to FLOORS and docs/design.md"
    assert set(FLOOR) <= units, f"floors name what is gone: {sorted(set(FLOOR) - units)}"


def test_imports_only_point_down_a_floor():
    up = [f"{a} -> {b} (floor {FLOOR[_unit(a)]} -> {FLOOR[_unit(b)]})"
          for a, bs in _imports(_modules()).items() for b in bs
          if _unit(b) != "harness" and _unit(a) != _unit(b) and FLOOR[_unit(b)] >= FLOOR[_unit(a)]]
    assert not up, "imports that do not point down:\n" + "\n".join(sorted(up))


def test_no_module_reaches_itself_through_others():
    edges = _imports(_modules())
    seen, stack, cycles = set(), [], []

    def visit(m: str) -> None:
        if m in stack:
            cycles.append(stack[stack.index(m):] + [m])
            return
        if m in seen:
            return
        seen.add(m)
        stack.append(m)
        for n in sorted(edges.get(m, ())):
            visit(n)
        stack.pop()

    for m in sorted(edges):
        visit(m)
    assert not cycles, "import circles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def picture() -> str:
    """The import picture, folder to folder, a floor a line from the top: what each unit imports below it."""
    down = collections.defaultdict(set)
    for a, bs in _imports(_modules()).items():
        down[_unit(a)] |= {_unit(b) for b in bs if _unit(b) not in ("harness", _unit(a))}
    lines = []
    for i in reversed(range(len(FLOORS))):
        for unit in sorted(FLOORS[i]):
            lines.append(f"{i:2d} {unit:<17} -> {', '.join(sorted(down[unit], key=lambda u: (-FLOOR[u], u))) or '-'}")
    return "\n".join(lines) + "\n   registry     -> engines/ (discovered at run time, by design: the one import leaving harness/)"


if __name__ == "__main__":       # make layers
    print(picture())
