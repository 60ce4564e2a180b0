"""Checkpoints off the commit path, as production SQLite runs them: a second connection, in a thread of the
writer's process, runs PASSIVE checkpoints while the writer goes on (PASSIVE never waits for the writer or
readers: it copies what it can), and a TRUNCATE once the WAL passes a bound, so the WAL stays bounded. The
writer's own automatic checkpoint is off (wal_autocheckpoint = 0 on its connection).

The trade-off: a TRUNCATE (or RESTART) waits for the writer and then holds it off while it runs, so that
part of the cost moves into the next block's BEGIN (its statements phase), measured where it lands; and
the WAL grows to the bound between truncations (recovery replays more of it after a crash)."""
from __future__ import annotations

import threading
import time
from typing import Callable

CHECKPOINTER_CACHE_KIB = 2048      # it copies frames from the WAL to the file: it needs no page cache


def backfilled_all(answer) -> bool:
    """Whether a wal_checkpoint's answer (busy, frames in the WAL, frames checkpointed) says every frame committed
    before it is in the database file. SQLite syncs the WAL before it copies a frame and the file after, so such a
    checkpoint (or the earlier one that copied those frames) made them durable. One a reader held back may have
    copied, and synced, nothing."""
    busy, log, done = answer
    return busy == 0 and log >= 0 and done == log


class BackgroundCheckpointer:
    """Started on open, stopped on close; its figures are engine counters (the writer's are apart)."""

    def __init__(self, connect: Callable[[], object], pragmas: list[str], interval_s: float, truncate_bytes: int,
                 wal_bytes: Callable[[], int], committed_mark: Callable[[], int] = lambda: 0) -> None:
        self._connect, self._pragmas, self._committed_mark = connect, pragmas, committed_mark
        self.synced_mark = 0        # the applied mark committed before the last checkpoint that backfilled every frame
        self.interval_s, self.truncate_bytes, self._wal_bytes = interval_s, truncate_bytes, wal_bytes
        self.figures = {"background_checkpoints": 0, "background_checkpoint_us": 0, "background_frames_done": 0,
                        "background_busy": 0, "background_truncations": 0, "background_truncate_us": 0,
                        "background_truncated_bytes": 0}
        self.error: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sqlite-checkpointer", daemon=True)

    def start(self) -> "BackgroundCheckpointer":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=60)

    def _checkpoint(self, conn, mode: str) -> tuple[int, int, int]:
        rows = conn.execute(f"PRAGMA wal_checkpoint({mode})").fetchall()
        return tuple(rows[0]) if rows and len(rows[0]) == 3 else (0, 0, 0)

    def _run(self) -> None:
        conn = self._connect()           # its own connection, made in its own thread
        try:
            for stmt in self._pragmas:
                conn.execute(stmt).fetchall()
            conn.execute(f"PRAGMA cache_size = -{CHECKPOINTER_CACHE_KIB}").fetchall()
            while not self._stop.wait(self.interval_s):
                f = self.figures
                wal_bytes = self._wal_bytes()
                truncate = self.truncate_bytes and wal_bytes >= self.truncate_bytes
                mark = self._committed_mark()           # committed before the checkpoint starts
                t0 = time.perf_counter()
                busy, log, done = self._checkpoint(conn, "TRUNCATE" if truncate else "PASSIVE")
                us = round((time.perf_counter() - t0) * 1e6)
                if backfilled_all((busy, log, done)):
                    self.synced_mark = mark
                f["background_checkpoints"] += 1
                f["background_checkpoint_us"] += us
                f["background_busy"] += busy
                if not truncate:
                    f["background_frames_done"] += max(done, 0)
                elif not busy:             # a TRUNCATE answers 0 frames: the WAL it emptied is what it did
                    f["background_truncations"] += 1
                    f["background_truncate_us"] += us
                    f["background_truncated_bytes"] += wal_bytes
        except Exception as e:            # the writer's result says so; the run goes on without it
            self.error = f"{type(e).__name__}: {e}"
        finally:
            conn.close()
