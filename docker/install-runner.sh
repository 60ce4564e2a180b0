#!/bin/sh
# Shared by every engine image (root, at build time): the harness's own Python packages and one engine's
# driver into a venv, from the wheelhouse `make images` builds on the host (so the build needs no PyPI),
# at the host venv's exact versions; then the non-root user.
# Usage: install-runner.sh ENGINE
set -eu
engine=${1:?usage: install-runner.sh ENGINE}
wh=/tmp/wheelhouse
python3 -m venv /opt/arkbench
/opt/arkbench/bin/pip install --no-cache-dir --no-index --find-links "$wh" -c "$wh/requirements.txt" \
  -r "$wh/core.txt" -r "$wh/engine-$engine.txt"
useradd --uid 10001 --user-group --create-home --shell /usr/sbin/nologin arkbench
mkdir -p /results /data
chown arkbench:arkbench /results /data
