"""Where a run's runner executes: `local` (a child process, in a memory cgroup when MEM is given) or
`docker` (the engine's containers, from a compose file made for the run). What a cell does before and around
that (its starting state, the block feed) is harness/cell.py's."""
