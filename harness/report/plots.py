"""The report's plots, as standalone SVG text (inlined in report.html, saved beside report.md): nothing to
fetch when viewing. Every plot reads the run's own files: blocks.csv (one row per measured block) and
timeseries.csv (one row per second, all phases, on the same run clock)."""
from __future__ import annotations

import io
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FixedLocator, FuncFormatter, MaxNLocator  # noqa: E402

from harness.report.collect import CellData  # noqa: E402
from harness.report.minutes import minutes  # noqa: E402

plt.rcParams.update({"svg.fonttype": "none", "font.size": 9, "axes.grid": True, "grid.alpha": 0.3,
                     "figure.dpi": 100, "svg.hashsalt": "arkbench"})   # the salt keeps ids stable
RASTERIZE_ABOVE_POINTS = 5000     # a long unthrottled run: keep the SVG small, the points as an image
MIB = 1 << 20


def _svg(fig) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    text = buf.getvalue()
    text = re.sub(r"\s*<metadata>.*?</metadata>", "", text, flags=re.S)   # RDF boilerplate
    return text[text.index("<svg"):]          # drop the XML prolog and doctype: it is inlined in HTML


def _threshold_ms(cell: CellData) -> float | None:
    from harness.scenario.thresholds import parse_threshold
    parsed = [parse_threshold(t.expr) for t in cell.result.thresholds]
    limits = [t.limit for t in parsed if t.metric == "commit_ms"]
    return min(limits) if limits else None


LOG_SPAN = 100          # a latency axis goes logarithmic past two decades: a 35 s queue and 2 s blocks both show


def _latency_axis(ax, values) -> None:
    pos = [v for v in values if v and v > 0]
    if pos and max(pos) / min(pos) > LOG_SPAN:
        ax.set_yscale("log")
    else:
        ax.set_ylim(bottom=0)


DENSE_CHECKPOINT_SECONDS = 60   # past this many, lines would paint the plot over: ticks along the bottom instead


def _checkpoint_marks(ax, at_s: list[float]) -> None:
    """The seconds a checkpoint ran in: vertical lines when few; when many (a log's applier checkpoints every
    block), ticks on the bottom edge, so the latency points stay visible."""
    if len(at_s) > DENSE_CHECKPOINT_SECONDS:
        ax.plot(at_s, [0.0] * len(at_s), "|", color="tab:orange", ms=8, alpha=0.6, clip_on=False,
                transform=ax.get_xaxis_transform(), label=f"checkpoint(s) in this second ({len(at_s):,})")
        return
    for i, x in enumerate(at_s):
        ax.axvline(x, color="tab:orange", lw=0.6, alpha=0.6, label=None if i else "checkpoint(s) in this second")


def latency_over_time(cell: CellData) -> str:
    """Every measured block's commit latency, the seconds checkpoints ran in, WAL size on the right axis."""
    blocks, ts = cell.blocks(), cell.timeseries()
    fig, ax = plt.subplots(figsize=(8, 3.2))
    t0 = blocks[0]["due_s"] if blocks else 0.0
    x = [b["end_s"] - t0 for b in blocks]
    y = [b["commit_ms"] for b in blocks]
    ax.scatter(x, y, s=4, color="tab:blue", label="commit latency (from intended start)",
               rasterized=len(x) > RASTERIZE_ABOVE_POINTS)
    limit = _threshold_ms(cell)
    if limit:
        ax.axhline(limit, color="tab:red", lw=1, ls="--", label=f"threshold {limit:g} ms")
    t_end = blocks[-1]["end_s"] + 1 if blocks else float("inf")
    timed = [r for r in ts if r.get("phase") in ("warmup", "measure") and r["t_s"] <= t_end]
    _checkpoint_marks(ax, [cur["t_s"] - t0 for prev, cur in zip(timed, timed[1:])
                           if cur.get("checkpoints") is not None and prev.get("checkpoints") is not None
                           and cur["checkpoints"] > prev["checkpoints"] and cur["t_s"] - t0 >= 0])
    ax.set_xlabel("seconds since the measured phase began")
    ax.set_ylabel("commit latency (ms)")
    _latency_axis(ax, y + ([limit] if limit else []))
    wal = [(r["t_s"] - t0, r["wal_bytes"] / MIB) for r in timed if r.get("wal_bytes") is not None and r["t_s"] >= t0]
    if wal:
        ax2 = ax.twinx()
        ax2.plot(*zip(*wal), color="tab:green", lw=1, label="WAL size")
        ax2.set_ylabel("WAL (MiB)")
        ax2.set_ylim(bottom=0)
        ax2.grid(False)
        h1, l1 = ax.get_legend_handles_labels()
        h2, l2 = ax2.get_legend_handles_labels()
        ax.legend(h1 + h2, l1 + l2, loc="upper left", fontsize=7)
    else:
        ax.legend(loc="upper left", fontsize=7)
    ax.set_title(f"{cell.scenario}: {cell.label}")
    return _svg(fig)


_PCT_TICKS = [0.5, 0.9, 0.99, 0.999, 0.9999]


def latency_cdf(cells: list[CellData], title: str) -> str:
    """HdrHistogram-style percentile distribution: the tail gets the room, not the median."""
    fig, ax = plt.subplots(figsize=(8, 3.4))
    top, every = 0.5, []
    for c in cells:
        vals = sorted(b["commit_ms"] for b in c.blocks())
        n = len(vals)
        if not n:
            continue
        q = [(i + 1) / (n + 1) for i in range(n)]      # plotting positions: never 1.0
        ax.plot([1 / (1 - p) for p in q], vals, lw=1.2, label=c.label)
        every += vals
        top = max(top, q[-1])
    ticks = [1 / (1 - p) for p in _PCT_TICKS if p <= max(top, 0.9)]
    ax.set_xscale("log")
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"p{100 * (1 - 1 / v):g}"))
    ax.xaxis.set_minor_locator(FixedLocator([]))
    ax.set_xlabel("percentile")
    ax.set_ylabel("commit latency (ms)")
    _latency_axis(ax, every)
    ax.legend(fontsize=7, loc="upper left")
    ax.set_title(title)
    return _svg(fig)


def p99_vs_memory(cells: list[CellData], title: str) -> str:
    """p99 per engine against its memory limit; an OOM-killed or failed-to-run cell is an x on the axis."""
    fig, ax = plt.subplots(figsize=(8, 3.2))
    every, dead = [], []
    for engine in dict.fromkeys(c.name for c in cells):
        pts = sorted((c.data_limit_bytes / MIB, c.commit_ms.p99) for c in cells
                     if c.name == engine and c.data_limit_bytes and c.status in ("passed", "failed"))
        line = ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", lw=1.2, label=engine)
        every += [p[1] for p in pts]
        dead.append((engine, line[0].get_color(), [c.data_limit_bytes / MIB for c in cells if c.name == engine
                                                   and c.data_limit_bytes and c.status not in ("passed", "failed")]))
    mems = sorted({c.data_limit_bytes / MIB for c in cells if c.data_limit_bytes})
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator(mems))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v / 1024:g} GiB" if v >= 1024 else f"{v:g} MiB"))
    ax.xaxis.set_minor_locator(FixedLocator([]))
    ax.set_xlabel("memory limit")
    ax.set_ylabel("p99 commit latency (ms)")
    _latency_axis(ax, every)
    for engine, color, xs in dead:          # on the axis, whichever scale it took
        if xs:
            ax.scatter(xs, [ax.get_ylim()[0]] * len(xs), marker="x", s=60, color=color, clip_on=False,
                       label=f"{engine}: OOM / error")
    ax.legend(fontsize=7)
    ax.set_title(title)
    return _svg(fig)


def sizes_over_time(cells: list[CellData], title: str) -> str:
    """Database and WAL size through the whole run (load, warmup, measure) on the run clock."""
    fig, ax = plt.subplots(figsize=(8, 3.2))
    for c in cells:
        ts = c.timeseries()
        db = [(r["t_s"], r["db_bytes"] / MIB) for r in ts if r.get("db_bytes") is not None]
        wal = [(r["t_s"], r["wal_bytes"] / MIB) for r in ts if r.get("wal_bytes") is not None]
        line = ax.plot(*zip(*db), lw=1.2, label=f"{c.label} db") if db else None
        if wal:
            ax.plot(*zip(*wal), lw=1, ls="--", color=line[0].get_color() if line else None, label=f"{c.label} WAL")
    ax.set_xlabel("seconds since the run began (load, then warmup and measure)")
    ax.set_ylabel("MiB")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=7, ncol=2)
    ax.set_title(title)
    return _svg(fig)



def ceiling_curve(steps: list[dict], knee: float | None, limits: dict[str, float], title: str) -> str:
    """Read and write p99 against the offered read rate, each step a point (a repeat too), and the share of the
    offered rate achieved; the knee and the criteria (limits: write_ms, read_ms, read_share_pct) as lines. A
    failed step is an open marker."""
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(10, 3.4))
    for key, label, color in (("read_p99_ms", "read p99", "tab:blue"), ("write_p99_ms", "write (commit) p99", "tab:red")):
        pts = sorted((s["offered_qps"], s[key], s["passed"]) for s in steps if s.get(key) is not None)
        if not pts:
            continue
        ax.plot([p[0] for p in pts], [p[1] for p in pts], lw=1, color=color, label=label)
        ax.scatter([p[0] for p in pts if p[2]], [p[1] for p in pts if p[2]], color=color, s=18)
        ax.scatter([p[0] for p in pts if not p[2]], [p[1] for p in pts if not p[2]], facecolors="none",
                   edgecolors=color, s=30)
    for key, what, color in (("write_ms", "write", "tab:red"), ("read_ms", "read", "tab:blue")):
        if limits.get(key):
            ax.axhline(limits[key], color=color, ls=":", lw=1, label=f"{what} criterion {limits[key]:g} ms")
    # a share, not reads/s against a y = x line: on a log axis two points' straight segment is no y = x
    pts = sorted((s["offered_qps"], 100 * s["achieved_qps"] / s["offered_qps"], s["passed"]) for s in steps
                 if s.get("achieved_qps") is not None)
    if pts:
        ax2.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", lw=1, label="achieved")
    if limits.get("read_share_pct"):
        ax2.axhline(limits["read_share_pct"], color="tab:blue", ls=":", lw=1,
                    label=f"criterion {limits['read_share_pct']:g}%")
    ax2.set_ylim(min([p[1] for p in pts] + [limits.get("read_share_pct") or 100]) - 5, 102)
    for a in (ax, ax2):
        if knee:
            a.axvline(knee, color="green", lw=1, label=f"knee {knee:,.0f} QPS")
        a.set_xscale("log")
        a.set_xlabel("offered read rate (QPS)")
    ax.set_yscale("log")
    ax.set_ylabel("p99 latency (ms, from the intended start)")
    ax2.set_ylabel("reads achieved (% of offered)")
    ax.legend(fontsize=7)
    ax2.legend(fontsize=7)
    ax.set_title(title)
    ax2.set_title("reads achieved, share of the rate offered")
    return _svg(fig)


def knee_curve(points: list[tuple], knee: float | None, limit_ms: float | None, axis_label: str, title: str) -> str:
    """points: (axis value, p99 ms, service p50 ms, verdict) per step; the criterion and the knee as lines."""
    fig, ax = plt.subplots(figsize=(7, 3.6))
    for i, label, color in ((1, "commit p99", "tab:red"), (2, "service p50", "tab:blue")):
        pts = sorted((p[0], p[i], p[3]) for p in points if p[i] is not None)
        if not pts:
            continue
        ax.plot([p[0] for p in pts], [p[1] for p in pts], lw=1, color=color, label=label)
        for verdict, style in (("pass", {"color": color}), ("fail", {"facecolors": "none", "edgecolors": color}),
                               ("error", {"color": color, "marker": "x"})):
            sel = [p for p in pts if p[2] == verdict]
            ax.scatter([p[0] for p in sel], [p[1] for p in sel], s=24, **style)
    ax.set_xscale("log")
    ax.set_yscale("log")
    if limit_ms:
        ax.axhline(limit_ms, color="tab:red", ls=":", lw=1, label=f"criterion {limit_ms:g} ms")
        lo, hi = ax.get_ylim()      # the criterion inside the frame, not on its edge when every step is above it
        ax.set_ylim(min(lo, limit_ms / 2), max(hi, limit_ms * 2))
    if knee is not None:
        ax.axvline(knee, color="green", lw=1, label=f"knee {knee:,.4g}")
    ax.set_xlabel(axis_label)
    ax.set_ylabel("ms")
    ax.legend(fontsize=7)
    ax.set_title(title)
    return _svg(fig)


def v1_frontier(frontier: list[dict], need: dict, title: str) -> str:
    """Writes/s against the highest passing reads/s, per write rate; V1's corner shaded."""
    fig, ax = plt.subplots(figsize=(6, 3.6))
    knees = [(p["write_rows_per_s"], p["read_qps"]) for p in frontier if p["read_qps"] is not None and p["reached"]]
    tops = [(p["write_rows_per_s"], p["read_qps"]) for p in frontier if p["read_qps"] is not None and not p["reached"]]
    none = [p["write_rows_per_s"] for p in frontier if p["read_qps"] is None]
    line = sorted(knees + tops)
    if line:
        ax.plot([w for w, _ in line], [r for _, r in line], color="tab:blue", lw=1)
    ax.scatter([w for w, _ in knees], [r for _, r in knees], color="tab:blue", s=30, label="knee", zorder=3)
    ax.scatter([w for w, _ in tops], [r for _, r in tops], facecolors="none", edgecolors="tab:blue", s=40,
               label="top rate passed (no knee)", zorder=3)
    floor = min([r for _, r in line] + [need["read_qps"]]) / 2
    ax.scatter(none, [floor] * len(none), marker="x", color="tab:red", s=40, label="no read rate passed", zorder=3)
    ax.axvspan(need["write_rows_per_s"], max([w for w, _ in line] + none + [need["write_rows_per_s"] * 5]),
               ymin=0, ymax=1, color="tab:green", alpha=0.06)
    ax.axhline(need["read_qps"], color="tab:green", ls=":", lw=1, label=f"V1: ≥ {need['read_qps']:,.0f} reads/s "
                                                                         f"at ≥ {need['write_rows_per_s']:,.0f} rows/s")
    ax.set_xlabel("writes offered (rows/s)")
    ax.set_ylabel("reads/s carried (checked DC mix)")
    ax.set_yscale("log")
    ax.legend(fontsize=7)
    ax.set_title(title)
    return _svg(fig)


def reads_vs_size(cells: list[CellData], title: str) -> str:
    """The degradation curve: read p99 and reads per second against the database's size, per engine."""
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(10, 3.2))
    for engine in dict.fromkeys(c.name for c in cells):
        pts = sorted((c.result.metrics.db_bytes_final / MIB, c.result.metrics.read_latency_ms.p99,
                      c.result.metrics.reads_per_s) for c in cells
                     if c.name == engine and c.result.metrics.read_latency_ms and c.result.metrics.db_bytes_final)
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", lw=1.2, label=engine)
            ax2.plot([p[0] for p in pts], [p[2] for p in pts], marker="o", lw=1.2, label=engine)
    for a in (ax, ax2):
        a.set_xscale("log")
        a.set_xlabel("database size (MiB)")
        a.legend(fontsize=7)
    ax.set_ylabel("read p99 (ms)")
    ax2.set_ylabel("reads per second")
    ax.set_title(title)
    return _svg(fig)


def recovery_by_wal(cells: list[CellData], title: str) -> str:
    """Recovery seconds against the WAL at the kill, per engine, both axes logarithmic."""
    fig, ax = plt.subplots(figsize=(8, 3.2))
    for engine in dict.fromkeys(c.name for c in cells):
        pts = sorted((k.wal_bytes / MIB, k.recovery_s) for c in cells if c.name == engine and c.result.crash
                     for k in c.result.crash.kills if k.aimed_at.startswith("wal ") and k.wal_bytes and k.recovery_s)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", lw=1.2, label=engine)
    # the other seeds' advice, for shape: a WAL under 100 MB for sub-second recovery
    ax.axvline(100, color="grey", ls=":", lw=1, label="100 MB WAL, 1 s: the other seeds' sub-second advice")
    ax.axhline(1, color="grey", ls=":", lw=1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("WAL at the kill (MiB)")
    ax.set_ylabel("recovery: open + first read (s)")
    ax.legend(fontsize=7)
    ax.set_title(title)
    return _svg(fig)


def answer_over_minutes(cell: CellData, rows: list | None = None) -> str:
    """A cell's deciding figures minute by minute (report/minutes.py): its commit (under a block log,
    acknowledgement) p99 from the due time; for a design, when a reader can query the block, its apply lag and its
    applier's busy share; with readers, their p99 from each read's intended start."""
    rows = minutes(cell) if rows is None else rows      # report/minutes.Minute, where the caller has them
    wanted = (("ack_p99_ms", "commit p99 (ms)", None), ("queryable_p99_ms", "queryable p99 (ms)", None),
              ("read_p99_ms", "read p99 (ms)", None), ("lag_p99_blocks", "apply lag p99 (blocks)", None),
              ("busy_share", "applier busy (share)", 1.0))
    series = [(label, [(r.minute, getattr(r, key)) for r in rows if getattr(r, key) is not None], top)
              for key, label, top in wanted]
    series = [s for s in series if s[1]] or [("commit p99 (ms)", [], None)]
    fig, axes = plt.subplots(len(series), 1, figsize=(8, 1.8 * len(series)), sharex=True, squeeze=False)
    for ax, (label, pts, top) in zip(axes[:, 0], series):
        if pts:
            ax.plot(*zip(*pts), marker="o", ms=3, lw=1)
        ax.set_ylabel(label, fontsize=7)
        ax.set_ylim(0, top)
    axes[0, 0].set_title(f"{cell.scenario}: {cell.label}, minute by minute")
    axes[-1, 0].set_xlabel("minute of the measured phase")
    axes[-1, 0].xaxis.set_major_locator(MaxNLocator(integer=True))
    return _svg(fig)
