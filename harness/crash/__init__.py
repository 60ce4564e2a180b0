"""Crash durability and recovery (a scenario with workload.crash): the block stream is applied by a *life*,
one process that opens the engine on its files (life.py, inside MEM); the driver (driver.py, outside MEM)
logs each commit's acknowledgement with fsync, kills the life's whole process tree with SIGKILL where the
scenario aims, restarts the engine on the same files, times its recovery, and finds which block its rows
hold against the model's digest after every block (blocks.py). docs/design.md#crash says what is judged."""
