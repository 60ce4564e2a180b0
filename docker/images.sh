#!/usr/bin/env bash
# `make images`: each engine's images as its engine.toml declares them (harness/registry.py), tagged
# arkbench/<engine>:<version> (runner) and arkbench/<engine>-server:<version> (a server engine's server,
# built FROM its runner image). With a reachable registry the public base is used; without one (this
# project's machines), a local Debian base is built first. An unchanged rebuild is served from cache.
# Usage: docker/images.sh PYTHON VERSION "ENGINES"
set -euo pipefail
cd "$(dirname "$0")/.."
py=${1:?usage: images.sh PYTHON VERSION ENGINES}
version=${2:?}
engines=${3:?}
public_base=${PUBLIC_BASE:-python:3.11-slim-bookworm}
debian_packages=$("$py" -m harness.registry debian-packages)
# named by what the manifests ask of it, so a new engine's Debian package gets a new base
local_base=arkbench/base:bookworm-$(echo "$debian_packages" | sha1sum | cut -c1-8)
start=$(date +%s)
command -v docker >/dev/null && docker info >/dev/null 2>&1 || { echo "images: no Docker daemon answers" >&2; exit 2; }
if docker image inspect "$public_base" >/dev/null 2>&1 || timeout 60 docker pull -q "$public_base" >/dev/null 2>&1; then
  base=$public_base
else
  base=$local_base
  if ! docker image inspect "$base" >/dev/null 2>&1; then
    echo "images: no registry reachable (docker pull $public_base failed); building $base with debootstrap"
    docker/build-base.sh "$base" $debian_packages
  fi
fi
echo "images: base $base"
commit=$("$py" -m harness.provenance | cut -d' ' -f2)   # HEAD (-dirty): baked into each image
echo "images: harness $version, commit ${commit:-unknown}"
specs=$("$py" -m harness.registry images $engines)      # engine image-name role dockerfile target; runners first
while read -r engine name role dockerfile target; do
  tag="arkbench/$name:$version"
  t0=$(date +%s)
  args=(--build-arg BASE_IMAGE="$base" --build-arg ENGINE="$engine" --build-arg HARNESS_VERSION="$version"
        --build-arg GIT_COMMIT="$commit" --build-arg RUNNER_IMAGE="arkbench/$engine:$version")
  [ "$target" = - ] || args+=(--target "$target")
  # the legacy builder's deprecation notice on every build is noise; a failed build shows everything
  if ! out=$(docker build -q -f "$dockerfile" "${args[@]}" -t "$tag" . 2>&1); then echo "$out" >&2; exit 1; fi
  echo "images: $tag ($role) $(docker image inspect -f '{{.Id}}' "$tag" | cut -c1-19) ($(( $(date +%s) - t0 )) s)"
done <<< "$specs"
echo "images: done in $(( $(date +%s) - start )) s"
