"""SIGTERM (kill, timeout, a service manager, a CI runner's stop) ends a harness process the way Ctrl-C does:
as KeyboardInterrupt, so its finally blocks run. Without this, SIGTERM killed the process where it stood and
left its memory cgroups under /sys/fs/cgroup behind, the run with no result and a walk's cell half-recorded.
A repeat while that stop runs is ignored: the same stop reaches a runner twice, sent to the process group and
forwarded by its parent, and the second must not cut the first's cleanup short (SIGKILL still ends it)."""
from __future__ import annotations

import signal

_stopping = False


def stop_on_sigterm() -> None:
    """Called once, on the main thread, by a harness program (not by code that calls main() in-process)."""
    def on_term(signum, frame):
        global _stopping
        if _stopping:
            return
        _stopping = True
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)


def asked_to_stop() -> bool:
    """True once this process took a SIGTERM: its children may not have been sent one."""
    return _stopping
