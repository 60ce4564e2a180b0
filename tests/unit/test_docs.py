"""Docs that match the code: every file a README or docs page names in backticks exists (from the repository's
root or from the page's own folder), every link to a page lands on a heading it has, and the README stays
≤ 150 lines. A page that drifts from the code fails here, not in a reader's hands."""
import re
from pathlib import Path

import pytest

from tests.conftest import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "engines").glob("*/README.md"))]
PATH = re.compile(r"`((?:harness|engines|scenarios|tests|docs)/[A-Za-z0-9_./-]+)`")
LINK = re.compile(r"\]\(((?:[A-Za-z0-9_./-]+)?\.md)?(#[a-z0-9-]+)?\)")


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^a-z0-9 _-]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    return {_slug(m.group(1)) for m in re.finditer(r"^#+ (.+)$", page.read_text(), re.M)}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_file_a_page_names_exists(page):
    missing = [p for p in PATH.findall(page.read_text())
               if not (ROOT / p.rstrip("/")).exists() and not (page.parent / p.rstrip("/")).exists()]
    assert not missing, f"{page.relative_to(ROOT)} names files that are not there: {missing}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_lands_on_a_heading(page):
    broken = []
    for target, anchor in LINK.findall(page.read_text()):
        dest = (page.parent / target) if target else page
        if not dest.exists():
            broken.append(f"{target} (no such page)")
        elif anchor and anchor[1:] not in _anchors(dest):
            broken.append(f"{target}{anchor} (no such heading)")
    assert not broken, f"{page.relative_to(ROOT)}: {broken}"


def test_the_readme_stays_under_150_lines():
    n = len((ROOT / "README.md").read_text().splitlines())
    assert n <= 150, f"README.md is {n} lines: the limit is 150 (details belong in docs/)"
