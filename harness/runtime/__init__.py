"""Where a run's runner executes: `local` (a child process, in a memory cgroup when MEM is given) or
`docker` (the engine's containers, from a compose file made for the run). Either way the block feed
runs here, outside the limit, and the runner reaches it through the run directory."""


def execute(plan) -> int:
    from harness.feed.server import FeedServer
    with FeedServer.for_plan(plan):
        if plan.runtime == "docker":
            from harness.runtime.docker import run_docker
            return run_docker(plan)
        from harness.runtime.local import run_local
        return run_local(plan)
