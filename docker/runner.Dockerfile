# An engine's runner image (the default of every engine.toml's [images.runner]): the harness runner and,
# for an embedded engine, the engine itself in one container, so the container's memory limit applies to
# the engine. Only this engine's driver is installed (build/wheelhouse/engine-<name>.txt).
# Built by `make images` (context: repo root): docker/images.sh passes ENGINE and BASE_IMAGE.
ARG BASE_IMAGE=python:3.11-slim-bookworm
FROM ${BASE_IMAGE}
ARG ENGINE
COPY build/wheelhouse /tmp/wheelhouse
COPY docker/install-runner.sh /tmp/install-runner.sh
RUN sh /tmp/install-runner.sh "${ENGINE}" && rm -rf /tmp/wheelhouse /tmp/install-runner.sh
ENV PATH=/opt/arkbench/bin:$PATH PYTHONPATH=/opt/arkbench/src PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
COPY harness /opt/arkbench/src/harness
COPY engines /opt/arkbench/src/engines
# the read mixes a scenario names (readers.mix), resolved where the readers run
COPY scenarios/mixes.yaml /opt/arkbench/src/scenarios/mixes.yaml
USER arkbench
WORKDIR /results
ENTRYPOINT ["python", "-m", "harness.cli", "_runner"]
# Last, so a new commit rebuilds only this layer: results made in the container name the code they ran.
ARG HARNESS_VERSION=dev
ARG GIT_COMMIT=
ENV ARKBENCH_VERSION=${HARNESS_VERSION} ARKBENCH_GIT_COMMIT=${GIT_COMMIT}
LABEL org.arkbench.engine="${ENGINE}" org.arkbench.version="${HARNESS_VERSION}"
