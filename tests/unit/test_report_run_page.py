"""What the 5x hour's report page (2026-12-02) got wrong, as its screenshot showed: a caveat that it was not at the
criterion's scale and hour when it was, a design's durability cut inside its parentheses, and a checkpoint every
block painting the latency plot over."""
from types import SimpleNamespace

import matplotlib.pyplot as plt

from harness.report import content, plots
from harness.report.cell_tables import durability_text

DESIGN = ("acknowledged once its block log record is fdatasync'ed (the engine behind it: at checkpoint: WAL synced "
          "only when checkpointed)")


def test_a_designs_durability_keeps_its_parentheses_whole():
    assert durability_text({"durability": DESIGN}) == DESIGN
    assert durability_text({"durability": "at commit: every commit fsynced"}) == "at commit"
    assert durability_text({}) == "-"


def report(scale: float, measure_s: float, scenario: str = "p99_5x"):
    c = SimpleNamespace(result=SimpleNamespace(scale=scale, scenario=scenario, crash=None), measure_s=measure_s)
    return SimpleNamespace(kind="run", cells=[c])


def test_the_criterions_scale_and_hour_is_no_caveat():
    said = content.first_line(report(5.0, 3600.0))
    assert said.kind == "p" and "scale 5, 3600 s measured" in said.text


def test_smaller_or_shorter_is_still_a_caveat():
    for r in (report(1.0, 3600.0), report(5.0, 600.0), report(5.0, 600.0, scenario="combined")):
        assert content.first_line(r).kind == "caveat"


def marks(n: int):
    fig, ax = plt.subplots()
    plots._checkpoint_marks(ax, [float(i) for i in range(n)])
    out = (len(ax.lines), ax.get_legend_handles_labels()[1])
    plt.close(fig)
    return out


def test_few_checkpoints_are_lines_many_are_ticks():
    lines, labels = marks(5)
    assert lines == 5 and labels == ["checkpoint(s) in this second"]
    lines, labels = marks(1799)
    assert lines == 1 and labels == ["checkpoint(s) in this second (1,799)"]
