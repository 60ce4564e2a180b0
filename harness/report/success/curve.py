"""The degradation curve (issue 85): one figure (per-block service time, acknowledgement or queryable p99, the
max-writes knee) against the database's size, every point at the same data-to-memory ratio, and the 10x point
projected through them where this machine's disk cannot hold it.

The projection is a least-squares line through the measured points in one of two models, y = a + b·ln(size) or
y = a + b·size, whichever leaves the smaller residual standard error (both have two parameters): at one
data-to-memory ratio the share of each index in cache is the same at every size and a row's insert walks one
more B-tree level per multiple of its fan-out, so the logarithm is the expected shape; a figure that grows with
the data itself (a scan, a checkpoint that rewrites more) is linear, and the worse-fitting of the two is named
beside the chosen one. Its 95% prediction interval is Student's, for one new observation at that size:
ŷ ± t(n-2) · s · sqrt(1 + 1/n + (x - x̄)² / Sxx). Where the better line's slope is within noise of 0,
the projection is the points' mean with its own interval, ȳ ± t(n-1) · sd · sqrt(1 + 1/n): a flat, noisy figure's
line would otherwise carry its noise to 10x (the 12-05 acknowledgement p99, 4-15 ms measured, gave -19 ms). A time is
never projected below 0. A projection is its own type: the table and the chart give it
a cell and a marker of its own, labelled projected, never the measured line's."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Literal

from harness.stats import t95

Model_ = Literal["log", "linear", "flat"]
MIN_POINTS = 3          # two parameters and at least one degree of freedom for the interval
_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")


@dataclass(frozen=True)
class Measured:
    """A measured point: its figure at the database's size, and the run and sitting it comes from."""
    scale: float
    size_gib: float
    value: float
    run: str            # the cell it was measured in, as the published folder links it
    sitting: str        # the day (YYYY-MM-DD)

    def __post_init__(self):
        if self.size_gib <= 0:
            raise ValueError(f"a measured point's size must be above 0 GiB, not {self.size_gib}")
        if not self.run.strip() or not _DAY.match(self.sitting):
            raise ValueError(f"a measured point names its run and its sitting (YYYY-MM-DD): {self.run!r}, "
                             f"{self.sitting!r}")


@dataclass(frozen=True)
class Fit:
    model: Model_
    a: float
    b: float
    s: float            # the residual standard error
    n: int
    mean_x: float
    sxx: float

    def x(self, size_gib: float) -> float:
        return math.log(size_gib) if self.model == "log" else 0.0 if self.model == "flat" else size_gib

    @property
    def flat(self) -> bool:
        """The slope's 95% interval holds 0: the points do not say the figure moves with the size."""
        return self.model == "flat" or abs(self.b) <= t95(self.n - 2) * self.s / math.sqrt(self.sxx)

    def says(self) -> str:
        if self.model == "flat":
            return f"y = {self.a:.4g}, the points' mean (sd {self.s:.3g}, {self.n} points)"
        x = "ln(size GiB)" if self.model == "log" else "size GiB"
        return (f"y = {self.a:.4g} {'+' if self.b >= 0 else '-'} {abs(self.b):.4g}·{x} (residual s {self.s:.3g}, "
                f"{self.n} points{'; its slope is within noise of 0' if self.flat else ''})")


@dataclass(frozen=True)
class Projected:
    """A fit's prediction at a size nothing measured, with its 95% prediction interval."""
    scale: float
    size_gib: float
    value: float
    lo: float
    hi: float
    fit: Fit
    rejected: Fit       # the other model, and why it was not chosen: its larger residual

    def says(self, unit: str) -> str:
        why = (f"neither line's slope is distinguishable from 0 (the better, {self.rejected.model}: residual s "
               f"{self.rejected.s:.3g})" if self.fit.model == "flat" else
               f"the {self.rejected.model} model fit worse (residual s {self.rejected.s:.3g})")
        return (f"projected {self.value:,.4g} {unit} (95% prediction interval {self.lo:,.4g}-{self.hi:,.4g}) at "
                f"{self.scale:g}x ≈ {self.size_gib:,.1f} GiB: {self.fit.model} model, {self.fit.says()}; {why}")


def fit(points: list[Measured], model: Model_) -> Fit:
    if len(points) < MIN_POINTS:
        raise ValueError(f"a fit needs at least {MIN_POINTS} measured points, not {len(points)}")
    xs = [math.log(p.size_gib) if model == "log" else p.size_gib for p in points]
    ys = [p.value for p in points]
    n, mx, my = len(xs), sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        raise ValueError("a fit needs points at more than one size")
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    a = my - b * mx
    s = math.sqrt(sum((y - a - b * x) ** 2 for x, y in zip(xs, ys)) / (n - 2))
    return Fit(model, a, b, s, n, mx, sxx)


def project(points: list[Measured], scale: float) -> Projected:
    """The figure at `scale`, its size from the measured points' GiB per unit of scale (a state grows with it)."""
    per_scale = sum(p.size_gib / p.scale for p in points) / len(points)
    size = per_scale * scale
    fits = sorted((fit(points, m) for m in ("log", "linear")), key=lambda f: f.s)
    best = fits[0]
    if best.flat:           # no slope the points can tell from 0: their mean, with its own prediction interval
        return _flat(points, scale, size, best)
    x = best.x(size)
    value = best.a + best.b * x
    half = t95(best.n - 2) * best.s * math.sqrt(1 + 1 / best.n + (x - best.mean_x) ** 2 / best.sxx)
    # a time is never below 0: the line's value and its interval are cut there (a flat, noisy figure's line can
    # cross it far out: the 12-05 acknowledgement p99, 4-15 ms measured, projected -19 ms)
    return Projected(scale, size, max(0.0, value), max(0.0, value - half), max(0.0, value + half), best, fits[1])


def _flat(points: list[Measured], scale: float, size: float, rejected: Fit) -> Projected:
    ys = [p.value for p in points]
    n, mean = len(ys), sum(ys) / len(ys)
    sd = math.sqrt(sum((y - mean) ** 2 for y in ys) / (n - 1))
    half = t95(n - 1) * sd * math.sqrt(1 + 1 / n)
    flat = Fit("flat", mean, 0.0, sd, n, 0.0, 0.0)
    return Projected(scale, size, mean, max(0.0, mean - half), mean + half, flat, rejected)


def curve_rows(points: list[Measured], projected: list[Projected], unit: str) -> list[list[str]]:
    """The curve as table rows (scale, size, figure, what it is): a projected row says so in its own words."""
    rows = [[f"{p.scale:g}x", f"{p.size_gib:,.1f}", f"{p.value:,.4g} {unit}", f"measured {p.sitting}: {p.run}"]
            for p in sorted(points, key=lambda p: p.size_gib)]
    return rows + [[f"{q.scale:g}x", f"{q.size_gib:,.1f}", f"projected {q.value:,.4g} {unit}",
                    f"projected, not measured: 95% interval {q.lo:,.4g}-{q.hi:,.4g}, {q.fit.model} model"]
                   for q in projected]


def draw(ax, points: list[Measured], projected: list[Projected], label: str) -> None:
    """The measured points as one line, each projection a hollow marker of its own with its interval, dashed
    from the last measured point: a reader never takes one for the other."""
    pts = sorted(points, key=lambda p: p.size_gib)
    ax.plot([p.size_gib for p in pts], [p.value for p in pts], "o-", label=f"{label}: measured")
    for q in projected:
        last = pts[-1]
        ax.plot([last.size_gib, q.size_gib], [last.value, q.value], ":", color="grey")
        ax.errorbar([q.size_gib], [q.value], yerr=[[q.value - q.lo], [q.hi - q.value]], fmt="o", mfc="white",
                    capsize=4, color="grey", label=f"{label}: projected at {q.scale:g}x ({q.fit.model} fit, 95% PI)")
