"""Errors that map onto the CLI's exit codes (docs/design.md: 0 passed, 1 threshold failed, 2 bad input, 3 run failed)."""

EXIT_PASSED = 0
EXIT_THRESHOLD_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_RUN_FAILED = 3


class HarnessError(Exception):
    exit_code = EXIT_RUN_FAILED


class ConfigError(HarnessError):
    """Bad input: nothing ran. The message is one line naming the file, the field and what is allowed."""

    exit_code = EXIT_BAD_INPUT


class RunFailed(HarnessError):
    exit_code = EXIT_RUN_FAILED


ENGINE_OOM = "the engine ran out of memory"     # how a result's error starts when is_out_of_memory


def is_out_of_memory(e: BaseException) -> bool:
    """An engine that refused an allocation at its own limit (DuckDB's memory_limit, a server's 'out of memory'),
    or Python's MemoryError: the workload did not fit the memory, as an OOM kill says, not a harness fault."""
    text = f"{type(e).__name__}: {e}".lower()
    return "out of memory" in text or "outofmemory" in text or isinstance(e, MemoryError)
