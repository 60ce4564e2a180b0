"""Open-loop readers: each thread has its own connection and a fixed schedule (query k due at
t0 + k/rate), so a stalled query delays the ones queued behind it and that delay is measured. Each query
is an entry of the scenario's mix (reads/queries.py), its parameters drawn from live entities."""
from __future__ import annotations

import bisect
import itertools
import random
import threading
import time
from typing import Callable

from harness.reads.params import Draw
from harness.reads.queries import resolve
from harness.runner.metrics import KindStats
from harness.runner.state import RunState
from harness.scenario.model import Readers


class ReaderPool:
    def __init__(self, engine, cfg: Readers, sample: Callable[[], list[dict] | None], state: RunState, seed: int,
                 engine_name: str, variant: str) -> None:
        # sample(): the feed's latest sample of live entities as read parameters (reads/params.py)
        self.engine, self.cfg, self.sample, self.state, self.seed = engine, cfg, sample, state, seed
        self.engine_name, self.variant = engine_name, variant
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

    def _loop(self, rng: random.Random, period_ns: int, offset_ns: int) -> None:
        reader = self.engine.reader()
        queries = resolve(self.cfg.mix, self.engine_name, self.variant, reader.placeholder)
        for q in queries:
            self.state.read_kinds.setdefault(q.name, KindStats())
        draw = Draw(queries)
        cum = list(itertools.accumulate(q.weight for q in queries))
        st = self.state
        due = time.monotonic_ns() + offset_ns
        try:
            while not self._stop.is_set():
                now = time.monotonic_ns()
                if now < due and self._stop.wait((due - now) / 1e9):
                    break
                draw.refresh(self.sample())
                i = bisect.bisect_right(cum, rng.random() * cum[-1])
                q = queries[min(i, len(queries) - 1)]
                try:
                    params = draw.params(i, rng)
                    if params is None:           # no sampled entity offers what it needs: nothing to ask
                        st.read_kinds[q.name].record_empty()
                        st.reads_empty += 1
                    else:
                        rows = sum(reader.run(s.sql, p) for s, p in zip(q.statements, params))
                        us = (time.monotonic_ns() - due) // 1000
                        if rows or not q.expect_rows:
                            st.read.record_us(us)
                            st.read_kinds[q.name].record(us, rows)
                            st.reads += 1
                        else:
                            st.read_kinds[q.name].record_empty()
                            st.reads_empty += 1
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
