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


ENGINE_REFUSED = "the engine refused a valid block"     # how a result's error starts on a RefusedBlock


class RefusedBlock(RunFailed):
    """An engine's driver rejected a block the workload model holds valid (its keys unique, as every other engine
    applied it): a limit of the engine, raised by its adapter where the driver documents one (DuckDB's ART
    indexes, "over-eager constraint checking" on updates of indexed columns). The cell fails, as an OOM does:
    the engine could not carry the workload. Anything else a driver raises stays an error."""


def is_out_of_memory(e: BaseException) -> bool:
    """An engine that refused an allocation at its own limit (DuckDB's memory_limit, a server's 'out of memory'),
    or Python's MemoryError: the workload did not fit the memory, as an OOM kill says, not a harness fault."""
    text = f"{type(e).__name__}: {e}".lower()
    return "out of memory" in text or "outofmemory" in text or isinstance(e, MemoryError)


def run_failure(e: BaseException) -> tuple[str, str]:
    """A run's status and error for what stopped it: an engine out of memory at its own limit is the cell's oom and
    a block it refused its failure, both measurements; anything else is an error."""
    lines = str(e).strip().splitlines() or [""]               # DuckDB appends paragraphs of advice
    if isinstance(e, KeyboardInterrupt):
        return "error", "interrupted"
    if is_out_of_memory(e):
        first = next((x for x in lines if "out of memory" in x.lower()), lines[0])
        return "oom", f"{ENGINE_OOM}: {type(e).__name__}: {first}"
    if isinstance(e, RefusedBlock):
        return "failed", f"{ENGINE_REFUSED}: {lines[0]}"
    return "error", f"{type(e).__name__}: {e}"
