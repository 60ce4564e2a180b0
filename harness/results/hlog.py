"""The latency histograms' shape and their interval logs (commit.hlog, read.hlog), read back one interval at a
time: what the runner writes and a report or a partial result reads."""
from __future__ import annotations

import gzip
import shutil
import tempfile
from pathlib import Path
from typing import Iterator

from hdrh.histogram import HdrHistogram

HIGHEST_US = 3_600_000_000          # one hour: anything longer is clamped and counted


def new_histogram() -> HdrHistogram:
    return HdrHistogram(1, HIGHEST_US, 3)


def interval_histograms(path) -> Iterator[tuple[float, float, HdrHistogram]]:
    """An interval log's histograms one at a time (an hour holds thousands), with their start and end in seconds
    of the run's own clock (the offsets the runner's IntervalLog wrote); none where the file is missing or
    unreadable. A published run's log is gzipped (<name>.hlog.gz): read the same, through a temporary copy, as
    hdrh's reader opens a path."""
    path = Path(path)
    gz = path.with_name(path.name + ".gz")
    if not path.is_file() and gz.is_file():
        with tempfile.NamedTemporaryFile(suffix=".hlog") as plain, gzip.open(gz) as packed:
            shutil.copyfileobj(packed, plain)
            plain.flush()
            yield from _read(plain.name)
        return
    yield from _read(str(path))


def _read(path: str) -> Iterator[tuple[float, float, HdrHistogram]]:
    from hdrh.log import HistogramLogReader
    try:
        reader = HistogramLogReader(path, new_histogram())
        while (h := reader.get_next_interval_histogram()) is not None:
            base_s = reader.base_time_sec
            yield h.get_start_time_stamp() / 1000 - base_s, h.get_end_time_stamp() / 1000 - base_s, h
        reader.close()
    except (OSError, ValueError):
        return
