# The layer every engine's runner image is built on (arkbench/core:<version>): the harness's own Python
# dependencies in the venv /opt/arkbench and the non-root user, installed once, so a new node or user pays
# for them once and each engine image adds only its driver and the code.
# Built by `make images` from a context of its own (docker/images.sh): tmp/wheelhouse (the core wheels)
# and tmp/install-runner.sh. Few steps: on fuse-overlayfs each step's commit costs seconds.
ARG BASE_IMAGE=python:3.11-slim-bookworm
FROM ${BASE_IMAGE}
COPY . /
RUN sh /tmp/install-runner.sh core && rm -rf /tmp/wheelhouse /tmp/install-runner.sh
ENV PATH=/opt/arkbench/bin:$PATH PYTHONPATH=/opt/arkbench/src PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
WORKDIR /results
ENTRYPOINT ["python", "-m", "harness.cli", "_runner"]
