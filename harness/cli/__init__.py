"""The `harness` command: one subcommand per make target (run, sweep, verdict, ceiling, knee, the benches,
states, report, validate, the fault campaign; cells.py, walks.py and faults.py); errors are one line (traceback with -v); exit codes as in
docs/design.md."""
from __future__ import annotations

import argparse
import os
import sys
import traceback
from pathlib import Path

from harness.cli.cells import add_benches, add_report, add_run, add_states, add_validate, cmd_runner
from harness.cli.faults import add_faults
from harness.cli.store import add_store
from harness.cli.walks import (add_capacity, add_ceiling, add_curve, add_experiments, add_k8s, add_knee, add_matrix,
                               add_reads, add_reproduce, add_sweep, add_v1, add_verdict, add_writes)
from harness.compare import add_command as add_compare
from harness.errors import EXIT_RUN_FAILED, ConfigError, HarnessError
from harness.platform.stop import stop_on_sigterm


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="harness", description="arkbench: one scenario, one engine, honest numbers")
    p.add_argument("-v", "--verbose", action="store_true", help="show tracebacks")
    sub = p.add_subparsers(dest="cmd", required=True)
    for add in (add_run, add_validate, add_benches, add_sweep, add_matrix, add_verdict, add_reproduce, add_ceiling,
                add_reads, add_writes, add_knee, add_capacity, add_curve, add_v1, add_states, add_report, add_compare,
                add_experiments, add_k8s, add_faults, add_store):
        add(sub)
    i = sub.add_parser("_runner", help=argparse.SUPPRESS)
    i.add_argument("plan", type=Path)
    i.set_defaults(func=cmd_runner)
    return p


def main(argv: list[str] | None = None) -> int:
    if argv is None:            # a program (the harness command, a runtime's runner), not a caller in-process
        stop_on_sigterm()
    args = _parser().parse_args(argv)
    try:
        if getattr(args, "writes", False):
            _writable(args.results, "--results")
            _writable(Path(args.data) if args.data else None, "--data")
        return args.func(args)
    except HarnessError as e:
        if args.verbose:
            traceback.print_exc()
        print(f"error: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_RUN_FAILED
    except OSError as e:       # a file or folder the run needed: one line, like every other error
        if args.verbose:
            traceback.print_exc()
        print(f"error: {e.filename or ''}: {e.strerror or e}" if e.filename else f"error: {e}", file=sys.stderr)
        return EXIT_RUN_FAILED


def _writable(path: Path | None, flag: str) -> None:
    """Refuse before anything runs when results or data cannot be written where asked. Leaves nothing
    behind: folders it had to create for the probe are removed again."""
    if path is None:
        return
    created = [p for p in [path, *path.parents] if not p.exists()]
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / f".arkbench-write-probe-{os.getpid()}"
        probe.touch()
        probe.unlink()
    except OSError as e:
        raise ConfigError(f"{flag} {path}: cannot write there ({e.strerror or e})") from None
    finally:
        for p in created:                 # deepest first
            try:
                p.rmdir()
            except OSError:
                pass
