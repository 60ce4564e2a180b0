"""Open-loop readers: each thread has its own connection and a fixed schedule (query k due at
t0 + k/rate), so a stalled query delays the ones queued behind it and that delay is measured."""
from __future__ import annotations

import random
import threading
import time
from typing import Callable

from harness.runner.state import RunState
from harness.scenario.model import Readers
from harness.workload.entity import VALUES_PER_KEY
from harness.workload.shapes import ATTRIBUTE_NAMES


class ReaderPool:
    def __init__(self, engine, cfg: Readers, keys: Callable[[], list[bytes]], state: RunState, seed: int) -> None:
        # keys(): a recent sample of live entity keys (the block feed refreshes it every few blocks)
        self.engine, self.cfg, self.keys, self.state, self.seed = engine, cfg, keys, state, seed
        self._stop = threading.Event()
        self.threads: list[threading.Thread] = []

    def start(self) -> None:
        if self.cfg.threads:
            period_ns = int(1e9 * self.cfg.threads / self.cfg.rate_per_s)
            for i in range(self.cfg.threads):
                # stagger the threads so their schedules interleave instead of firing together
                offset_ns = period_ns * i // self.cfg.threads
                self._spawn(f"reader-{i}", self._loop, random.Random(self.seed * 7919 + i), period_ns, offset_ns)
        if self.cfg.long_read:
            self._spawn("long-reader", self._long_loop)

    def _spawn(self, name: str, target, *args) -> None:
        t = threading.Thread(target=self._guard, args=(target, *args), name=name, daemon=True)
        self.threads.append(t)
        t.start()

    def _guard(self, target, *args) -> None:
        try:
            target(*args)
        except Exception as e:   # a reader that cannot even connect is an error of the run, recorded
            self.state.read_errors += 1
            self.state.read_error = self.state.read_error or f"{type(e).__name__}: {e}"

    def stop(self) -> None:
        self._stop.set()
        for t in self.threads:
            t.join(timeout=30)

    def _pick_key(self, rng: random.Random) -> bytes | None:
        keys = self.keys()
        return keys[rng.randrange(len(keys))] if keys else None

    def _loop(self, rng: random.Random, period_ns: int, offset_ns: int) -> None:
        reader = self.engine.reader()
        st, mix = self.state, self.cfg.mix
        fetch_share = mix.entity_fetch / ((mix.entity_fetch + mix.attribute_scan) or 1)
        due = time.monotonic_ns() + offset_ns
        try:
            while not self._stop.is_set():
                now = time.monotonic_ns()
                if now < due and self._stop.wait((due - now) / 1e9):
                    break
                try:
                    if rng.random() < fetch_share:
                        key = self._pick_key(rng)
                        if key is not None:
                            reader.entity_fetch(key)
                    else:
                        reader.attribute_scan(f"attr_{rng.randrange(ATTRIBUTE_NAMES):03d}",
                                              f"v{rng.randrange(VALUES_PER_KEY)}")
                    st.read.record_us((time.monotonic_ns() - due) // 1000)
                    st.reads += 1
                except Exception as e:
                    st.read_errors += 1
                    st.read_error = st.read_error or f"{type(e).__name__}: {e}"
                due += period_ns
        finally:
            reader.close()

    def _long_loop(self) -> None:
        lr = self.cfg.long_read
        reader = self.engine.reader()
        try:
            while not self._stop.wait(lr.every_s):
                reader.hold_snapshot(min(lr.hold_s, 3600.0))
        finally:
            reader.close()
