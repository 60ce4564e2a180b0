"""A design's figures over the measured window, from its own figures() (harness/designs/), and the histograms
its thresholds read: each series it gives becomes one, and the summary of the figure of the same name."""
from __future__ import annotations

from harness.results.models import LatencySummary
from harness.runner.metrics import new_histogram, summary_ms


def histogram_of_ms(values_ms: list[float]):
    h = new_histogram()
    for v in values_ms:
        h.record_value(max(0, round(v * 1000)))
    return h


def design_figures(design, start_ns: int, end_ns: int, drain_s: float | None) -> tuple[object, dict]:
    """(the figures, {metric: histogram}) of the blocks acknowledged in [start_ns, end_ns]."""
    figures, series = design.figures(start_ns, end_ns, drain_s)
    hists = {name: histogram_of_ms(values) for name, values in series.items()}
    summaries = {name: LatencySummary(**summary_ms(h)) if h.get_total_count() else LatencySummary()
                 for name, h in hists.items()}
    return figures.model_copy(update=summaries), hists
