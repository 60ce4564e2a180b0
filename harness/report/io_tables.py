"""The reference's verification checklist per cell (result.json metrics.io): what reached the disk, the
device reads that were cache misses, and how much of the engine's files (and, where the engine maps its
pages, of each index) the page cache held as the measured phase started and ended."""
from __future__ import annotations

from harness.units import format_bytes

Table = tuple[list[str], list[list[str]]]     # headers, rows: content.py makes them a table block


def _pct(v) -> str:
    return "-" if v is None else f"{v:.0%}"


def io_table(cells) -> Table | None:
    rows = []
    for c in cells:
        io = c.result.metrics.io
        if io is None:
            continue
        d, a, res = io.device, io.attributed, io.residency
        rows.append([c.label, format_bytes(d.write_bytes) if d else "-",
                     "-" if io.write_amplification is None else f"{io.write_amplification:.1f}x",
                     "-" if io.read_iops is None else f"{io.read_iops:,.0f}",
                     f"{format_bytes(a.write_bytes)} ({a.source})" if a and a.write_bytes is not None else "-",
                     f"{_pct(res.share_start)} → {_pct(res.share_end)} of {format_bytes(res.file_bytes_start)}"
                     if res else "-"])
    if not rows:
        return None
    return ["cell", "device written", "write amplification", "device reads/s", "written by the cell's processes",
            "resident (start → end)"], rows


def index_residency_table(cells) -> Table | None:
    rows = []
    for c in cells:
        io = c.result.metrics.io
        for name, r in sorted(((io.index_residency or {}) if io else {}).items(), key=lambda kv: kv[1].share_end or 0):
            rows.append([c.label, name, format_bytes(r.file_bytes_end), _pct(r.share_start), _pct(r.share_end)])
    if not rows:
        return None
    return ["cell", "table or index", "bytes", "resident at start", "resident at end"], rows
