"""The house's sizes (docs/design.md, "Style to follow"): no module of harness/ or engines/ over 350 lines, no
function over 60. They slipped once, while capabilities grew and nothing held them; this holds them, so the
next capability splits its modules along a seam as it grows, not after. `make layers` prints the longest."""
import ast

from tests.conftest import ROOT

MODULE_LINES, FUNCTION_LINES = 350, 60


def _sources():
    for folder in ("harness", "engines"):
        yield from sorted((ROOT / folder).rglob("*.py"))


def _modules() -> list[tuple[int, str]]:
    return [(len(f.read_text().splitlines()), str(f.relative_to(ROOT))) for f in _sources()]


def _functions() -> list[tuple[int, str]]:
    return [(node.end_lineno - node.lineno + 1, f"{f.relative_to(ROOT)}:{node.lineno} {node.name}")
            for f in _sources() for node in ast.walk(ast.parse(f.read_text()))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]


def test_no_module_is_over_350_lines():
    over = [f"{name}: {n} lines" for n, name in _modules() if n > MODULE_LINES]
    assert not over, f"modules over {MODULE_LINES} lines (split them along a seam):\n" + "\n".join(over)


def test_no_function_is_over_60_lines():
    over = [f"{name}: {n} lines" for n, name in _functions() if n > FUNCTION_LINES]
    assert not over, f"functions over {FUNCTION_LINES} lines:\n" + "\n".join(over)


def largest(n: int = 5) -> str:
    """The n longest modules and functions against their limits."""
    return "\n".join(f"longest {what} (limit {limit}): " + ", ".join(f"{name} {k}" for k, name in sorted(items)[::-1][:n])
                     for what, limit, items in (("modules", MODULE_LINES, _modules()),
                                                ("functions", FUNCTION_LINES, _functions())))


if __name__ == "__main__":       # make layers
    print(largest())
