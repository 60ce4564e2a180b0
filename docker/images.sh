#!/usr/bin/env bash
# `make images`: every engine image, tagged arkbench/<engine>:<version>. With a reachable registry the
# public base is used; without one (this project's machines), a local Debian base is built first.
# Rebuilding after no change is served from Docker's layer cache.
# Usage: docker/images.sh VERSION "ENGINES"
set -euo pipefail
cd "$(dirname "$0")/.."
version=${1:?usage: images.sh VERSION ENGINES}
engines=${2:?}
public_base=${PUBLIC_BASE:-python:3.11-slim-bookworm}
local_base=arkbench/base:bookworm
start=$(date +%s)
command -v docker >/dev/null && docker info >/dev/null 2>&1 || { echo "images: no Docker daemon answers" >&2; exit 2; }
if docker image inspect "$public_base" >/dev/null 2>&1 || timeout 60 docker pull -q "$public_base" >/dev/null 2>&1; then
  base=$public_base
else
  base=$local_base
  if ! docker image inspect "$base" >/dev/null 2>&1; then
    echo "images: no registry reachable (docker pull $public_base failed); building $base with debootstrap"
    docker/build-base.sh "$base"
  fi
fi
echo "images: base $base"
commit=$(python3 -m harness.provenance | cut -d' ' -f2)   # HEAD (-dirty): baked into each image
echo "images: harness $version, commit ${commit:-unknown}"
build() {   # tag dockerfile [target]
  local t0=$(date +%s)
  docker build -q -f "$2" ${3:+--target "$3"} --build-arg BASE_IMAGE="$base" \
    --build-arg HARNESS_VERSION="$version" --build-arg GIT_COMMIT="$commit" -t "$1" . >/dev/null
  echo "images: $1 $(docker image inspect -f '{{.Id}}' "$1" | cut -c1-19) ($(( $(date +%s) - t0 )) s)"
}
for e in $engines; do
  if [ "$e" = postgres ]; then      # the one engine with a separate server image
    build "arkbench/postgres:$version" engines/postgres/Dockerfile runner
    build "arkbench/postgres-server:$version" engines/postgres/Dockerfile server
  else
    build "arkbench/$e:$version" "engines/$e/Dockerfile"
  fi
done
echo "images: done in $(( $(date +%s) - start )) s"
