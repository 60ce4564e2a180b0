#!/bin/sh
# Shared by every engine image (root, at build time): the harness's own Python packages and one engine's
# driver into a venv, from the wheelhouse `make images` builds on the host (so the build needs no PyPI),
# at the host venv's exact versions, and its side builds; then the non-root user.
# Usage: install-runner.sh ENGINE
set -eu
engine=${1:?usage: install-runner.sh ENGINE}
wh=/tmp/wheelhouse
python3 -m venv /opt/arkbench
/opt/arkbench/bin/pip install --no-cache-dir --no-index --find-links "$wh" -c "$wh/requirements.txt" \
  -r "$wh/core.txt" -r "$wh/engine-$engine.txt"
# side builds (engine.toml's side_requirements), each in its own folder for a setting to load
while read -r name req; do
  /opt/arkbench/bin/pip install --no-cache-dir --no-index --find-links "$wh/side" --no-deps \
    --target "/opt/arkbench/arkbench-side/$engine/$name" "$req"
done < "$wh/side-$engine.txt"
useradd --uid 10001 --user-group --create-home --shell /usr/sbin/nologin arkbench
mkdir -p /results /data
chown arkbench:arkbench /results /data
