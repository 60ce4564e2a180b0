#!/usr/bin/env bash
# A local base image for machines that reach no container registry: a Debian bookworm root built by
# debootstrap from Debian's own package archive, then `docker import`ed. It carries what the public
# python:3.11-slim-bookworm base would give the engine images (python3, venv) plus the Debian packages
# the engines' manifests ask for (debian_packages: PostgreSQL's server, which its server image would
# otherwise apt-get during its build).
# Usage: docker/build-base.sh TAG [DEBIAN_PACKAGE...]
set -euo pipefail
tag=${1:?usage: build-base.sh TAG [DEBIAN_PACKAGE...]}
shift
extra=$(printf ',%s' "$@")
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
command -v debootstrap >/dev/null || {
  [ "$(id -u)" = 0 ] || { echo "build-base: debootstrap is missing and only root can apt-get it" >&2; exit 2; }
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null; }
root=$(mktemp -d /var/tmp/arkbench-rootfs.XXXXXX)
trap 'rm -rf "$root"' EXIT
echo "build-base: debootstrap bookworm into $root (from $mirror)"
debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates$extra \
  bookworm "$root" "$mirror" > "$root.log" 2>&1 || { tail -20 "$root.log" >&2; exit 1; }
rm -f "$root.log"
# No cluster is ever created at install time in the image; apt lists and caches are dropped.
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb
echo "build-base: docker import -> $tag"
tar -C "$root" -c . | docker import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV LANG=C.UTF-8' --change 'CMD ["/bin/bash"]' - "$tag" >/dev/null
