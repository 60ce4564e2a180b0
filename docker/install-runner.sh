#!/bin/sh
# The images' Python installs (root, at build time), from the wheelhouse `make images` builds on the host
# (so a build needs no PyPI), at the host venv's exact versions (requirements.txt as constraints):
#   core           a venv with the harness's own dependencies, then the non-root user (docker/core.Dockerfile)
#   engine NAME    one engine's driver into that venv, and its side builds (docker/runner.Dockerfile)
# Usage: install-runner.sh core | install-runner.sh engine NAME
set -eu
wh=/tmp/wheelhouse
pip_install() {
  /opt/arkbench/bin/pip install --no-cache-dir --no-index --find-links "$wh" -c "$wh/requirements.txt" "$@"
}
case "${1:?usage: install-runner.sh core | engine NAME}" in
core)
  python3 -m venv /opt/arkbench
  pip_install -r "$wh/core.txt"
  useradd --uid 10001 --user-group --create-home --shell /usr/sbin/nologin arkbench
  mkdir -p /results /data
  chown arkbench:arkbench /results /data ;;
engine)
  engine=${2:?usage: install-runner.sh engine NAME}
  pip_install -r "$wh/engine-$engine.txt"
  # side builds (engine.toml's side_requirements), each in its own folder for a setting to load
  while read -r name req; do
    /opt/arkbench/bin/pip install --no-cache-dir --no-index --find-links "$wh/side" --no-deps \
      --target "/opt/arkbench/arkbench-side/$engine/$name" "$req"
  done < "$wh/side-$engine.txt" ;;
*) echo "install-runner.sh: core or engine NAME, not $1" >&2; exit 2 ;;
esac
