"""What the harness and engines need from the machine (memory cgroups), below every other layer."""
