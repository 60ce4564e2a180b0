# An engine's runner image (the default of every engine.toml's [images.runner]): the harness runner and,
# for an embedded engine, the engine itself in one container, so the container's memory limit applies to
# the engine. Built on the shared core image (docker/core.Dockerfile): only this engine's driver and what it
# needs beyond core are installed here.
# Built by `make images` from a context of its own (docker/images.sh), laid out as the image's files:
# opt/arkbench/src/{harness,engines,scenarios/mixes.yaml}, tmp/wheelhouse (build/wheelhouse/engine-<name>),
# tmp/install-runner.sh and tmp/arkbench-engine (the engine's name). Labels come from the build's flags.
ARG CORE_IMAGE=arkbench/core:dev
FROM ${CORE_IMAGE}
COPY tmp /tmp
RUN sh /tmp/install-runner.sh engine "$(cat /tmp/arkbench-engine)" && \
    rm -rf /tmp/wheelhouse /tmp/install-runner.sh /tmp/arkbench-engine
# the code after the driver: a change of code rebuilds from here, not the install
COPY opt /opt
USER arkbench
# Last, so a new commit rebuilds only the code's layers: results made in the container name the code they ran.
ARG HARNESS_VERSION=dev
ARG GIT_COMMIT=
ENV ARKBENCH_VERSION=${HARNESS_VERSION} ARKBENCH_GIT_COMMIT=${GIT_COMMIT}
