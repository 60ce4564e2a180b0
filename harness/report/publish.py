"""A finished verdict made readable without the code: its report.md, verdict.json, plots and a screenshot of
report.html copied under docs/results/<name>/, beside a README naming the machine, the date and the commit it
was measured at: `make publish RUN=results/verdict-...`, for a reader who will not run the walk."""
from __future__ import annotations

import gzip
import json
import re
import shutil
from contextlib import contextmanager
from pathlib import Path

from harness.report.answer_table import alternative_line, as_markdown, readers_line
from harness.errors import ConfigError
from harness.results import load_result
from harness.results.walks import VerdictFile

SCREENSHOT_WIDTH_PX = 1200
REPO = Path(__file__).resolve().parents[2]


def publish(run: Path, dest_root: Path, name: str | None = None) -> Path:
    """Refuses a walk that has not ended (no verdict yet) or whose report was never written."""
    verdict = _finished(run)
    env = _environment(run, verdict)
    name = name or f"{(verdict.updated_utc or '')[:10]}-{verdict.profile}"
    dest = dest_root / name
    dest.mkdir(parents=True, exist_ok=True)
    scrub = scrubber(run)
    (dest / "verdict.json").write_text(scrub((run / "verdict.json").read_text()))
    copy_report(run, dest)
    write_cells(run, dest, verdict.cells, scrub)
    decision = Path(verdict.decision_file)
    if decision.is_file():
        (dest / "decision.yaml").write_text(decision.read_text())
    (dest / "commit").write_text(f"{env.get('git_commit') or '?'}\n")
    shot = dest / "report.png" if take_screenshot(run / "report.html", dest / "report.png") else None
    (dest / "README.md").write_text(_readme(verdict, env, shot))
    return dest


def finished_walk(run: Path, file: str, target: str) -> dict:
    """A walk's file (reads.json, writes.json, v1.json) once the walk has ended: refused, naming the make target
    that finishes it, where it is missing or not complete."""
    path = run / file
    if not path.is_file():
        raise ConfigError(f"{run}: holds no {file}")
    out = json.loads(path.read_text())
    if not out.get("complete"):
        raise ConfigError(f"{path}: complete is false: run the same `make {target}` again to finish it")
    return out


def require_report(run: Path) -> None:
    """Publishing copies report.md: refused, with the command that writes it, where there is none."""
    if not (run / "report.md").is_file():
        raise ConfigError(f"{run / 'report.md'}: missing: write it with `make report RUN={run}`")


def copy_report(run: Path, dest: Path) -> None:
    """report.md and the plots it links to: what a reader of the published folder sees without the HTML."""
    md = (run / "report.md").read_text()
    (dest / "report.md").write_text(md)
    for plot in sorted(set(re.findall(r"\]\((plots/[^)\s]+)\)", md))):
        (dest / plot).parent.mkdir(exist_ok=True)
        shutil.copy2(run / plot, dest / plot)


def scrubber(run: Path):
    """A file's text without the paths of the machine that ran it: the walk's folder as '.', the project's root,
    the states' and the data's as relative names (a reproduction reads them anywhere)."""
    from harness.state import store
    roots = [(str(run.resolve()), "."), (str(store.root_dir().resolve()), "states"), (str(REPO) + "/", "")]

    def scrub(text: str) -> str:
        for path, name in roots:
            text = text.replace(path, name)
        return text
    return scrub


def write_cells(run: Path, dest: Path, records: list, scrub, under: str = "cells") -> None:
    """Every cell's result.json the walk (or a sitting) ran: answers, alternatives, controls, reference cells,
    gzipped under cells/<scenario>/<dir>/: what a reader checks a figure against and a reproduction compares with.
    records: anything with .scenario and .dir."""
    for rec in records:
        src = run / rec.scenario / rec.dir / "result.json"
        if src.is_file():
            out = dest / under / rec.scenario / rec.dir / "result.json.gz"
            out.parent.mkdir(parents=True, exist_ok=True)
            text = scrub(src.read_text())
            data_dir = (json.loads(text).get("plan") or {}).get("data_dir")
            if data_dir and Path(data_dir).is_absolute():     # the cells' data root, wherever DATA= put it
                text = text.replace(str(Path(data_dir).parent), "data")
            out.write_bytes(gzip.compress(text.encode(), mtime=0))


def _finished(run: Path) -> VerdictFile:
    path = run / "verdict.json"
    if not path.is_file():
        raise ConfigError(f"{path}: no such file: RUN= must be a verdict's directory (results/verdict-...)")
    verdict = VerdictFile.model_validate_json(path.read_text())
    if verdict.verdict is None:
        raise ConfigError(f"{path}: the walk has not ended (no 'verdict' yet): run `make verdict` to its end first")
    require_report(run)
    return verdict


def _environment(run: Path, verdict: VerdictFile) -> dict:
    """The machine and commit from the cells' own result.json (every cell captures its environment)."""
    for rec in verdict.cells:
        result = load_result(run / rec.scenario / rec.dir / "result.json")
        if result is not None:
            return result.environment
    return {}


def _readme(v: VerdictFile, env: dict, shot: Path | None) -> str:
    gib = (env.get("ram_bytes") or 0) / 2**30
    est = v.estimate
    lines = [
        f"# The verdict at the `{v.profile}` profile, {(v.updated_utc or '?')[:10]}", "",
        f"- Machine: {env.get('cpu_model', '?')}, {env.get('cpus_usable', '?')} usable cores, {gib:.0f} GiB RAM, "
        f"kernel {env.get('kernel', '?')}",
        f"- Commit: `{env.get('git_commit') or '?'}` (arkbench {env.get('harness_version', '?')})",
        f"- Walk: {(v.walk_s or 0) / 60:.0f} min, {len(v.cells)} cells run, {v.cells_implied} implied"
        + (f"; expected before its first cell: {est.cells} cells, {est.minutes:.0f} min" if est else ""),
        f"- MEMS: {' '.join(v.mems)}" + (f" ({v.memory_basis})" if v.memory_basis else ""), "",
        "## The answer", "",
        *(as_markdown(v) + [""] if v.answers else []),
        *([readers_line(v), ""] if v.readers else []),
        *([alternative_line(v), ""] if v.alternative else []),
        *([f"Every cell at durability `{v.durability}`.", ""] if v.durability else []),
        f"[report.md](report.md) (every cell, its label and minutes; the implication controls), "
        f"[verdict.json](verdict.json) (what a script reads), every cell's result under [cells/](cells) (gzipped), "
        f"the [decision file](decision.yaml) it walked and its [commit](commit)."]
    if shot:
        lines += ["", f"report.html as headless Chromium draws it: [{shot.name}]({shot.name})."]
    return "\n".join(lines) + "\n"


def take_screenshot(html: Path, png: Path) -> bool:
    """A full-page screenshot of report.html in Debian's headless Chromium; False where it is not installed."""
    if shutil.which("chromium") is None or not html.is_file():
        return False
    with chromium_page() as page:
        page.goto(html.resolve().as_uri(), wait_until="load")     # `make publish RUN=results/...` is relative
        page.screenshot(path=str(png), full_page=True)
    return True


@contextmanager
def chromium_page(width_px: int = SCREENSHOT_WIDTH_PX):
    """A page in Debian's headless Chromium (installed by `make install`), closed on leaving."""
    from playwright.sync_api import sync_playwright
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=shutil.which("chromium"), args=["--no-sandbox"])
        try:
            yield browser.new_page(viewport={"width": width_px, "height": 900})
        finally:
            browser.close()
