#!/bin/sh
# Shared by every engine image (root, at build time): the harness's Python packages into a venv, from the
# wheelhouse `make images` builds on the host (so the build needs no PyPI), and the non-root user.
set -eu
python3 -m venv /opt/arkbench
/opt/arkbench/bin/pip install --no-cache-dir --no-index --find-links /tmp/wheelhouse -r /tmp/wheelhouse/requirements.txt
useradd --uid 10001 --user-group --create-home --shell /usr/sbin/nologin arkbench
mkdir -p /results /data
chown arkbench:arkbench /results /data
