"""The block log's file (harness/designs/log_file.py): records found again by name, a torn tail cut, applied
segments dropped behind a head that names the first one still needed."""
import os

from harness.designs import log_file
from harness.designs.log_file import BlockLogFile


def test_a_torn_record_cuts_the_log_there_and_the_records_before_it_are_read_back(tmp_path):
    log = BlockLogFile(tmp_path, sync=True)
    where = [log.append(n, bytes([n]) * 1000)[:2] for n in (1, 2, 3)]
    log.close()
    seg, third = where[2]
    os.truncate(tmp_path / f"{seg:08d}{log_file.SUFFIX}", third + 10)        # the third record's append died
    again = BlockLogFile(tmp_path, sync=True)
    assert [(n, p) for n, _, _, p in again.records()] == [(1, b"\x01" * 1000), (2, b"\x02" * 1000)]
    assert os.path.getsize(tmp_path / f"{seg:08d}{log_file.SUFFIX}") == third      # cut at the torn record
    assert again.read(*where[1]) == b"\x02" * 1000


def test_applied_segments_go_and_a_reopened_log_starts_at_the_head(tmp_path, monkeypatch):
    monkeypatch.setattr(log_file, "SEGMENT_BYTES", 2000)          # two 1 KB records a segment
    log = BlockLogFile(tmp_path, sync=True)
    for n in range(1, 7):
        log.append(n, b"x" * 1000)
    assert len(list(tmp_path.glob(f"*{log_file.SUFFIX}"))) == 3
    log.release_through(4)                 # segments 1 and 2 hold blocks 1-4; 3 is being written
    assert len(list(tmp_path.glob(f"*{log_file.SUFFIX}"))) == 1
    log.close()
    assert [n for n, *_ in BlockLogFile(tmp_path, sync=True).records()] == [5, 6]
