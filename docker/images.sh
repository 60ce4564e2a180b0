#!/usr/bin/env bash
# `make images`: each engine's images as its engine.toml declares them (harness/registry.py), tagged
# arkbench/<engine>:<version> (runner, FROM the shared arkbench/core:<version>) and
# arkbench/<engine>-server:<version> (a server engine's server, built FROM its runner image); the runners
# are built side by side (IMAGE_JOBS, default 3). With a reachable registry the public base is used; without one (this
# project's machines), a local Debian base is built first. An unchanged rebuild is served from cache.
# Usage: docker/images.sh PYTHON VERSION "ENGINES"
set -euo pipefail
cd "$(dirname "$0")/.."
py=${1:?usage: images.sh PYTHON VERSION ENGINES}
version=${2:?}
engines=${3:?}
public_base=${PUBLIC_BASE:-python:3.11-slim-bookworm}
debian_packages=$("$py" -m harness.registry_cli debian-packages)
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
specs=$("$py" -m harness.registry_cli images $engines)      # engine image-name role dockerfile target; runners first
jobs=${IMAGE_JOBS:-3}                                   # builds at once: pip and layer commits overlap
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

context() {   # IMAGE ENGINE: the folder a core or runner image is built from, laid out as its files
  local ctx=build/context/$1 engine=$2
  rm -rf "$ctx"
  mkdir -p "$ctx/tmp"
  chmod 1777 "$ctx/tmp"          # COPY gives the image's /tmp the context's mode: keep it everyone's
  cp -l docker/install-runner.sh "$ctx/tmp/"
  if [ "$engine" = core ]; then cp -al build/wheelhouse/core "$ctx/tmp/wheelhouse"; echo "$ctx"; return; fi
  mkdir -p "$ctx/opt/arkbench/src/scenarios"
  cp -al harness engines "$ctx/opt/arkbench/src/"
  cp -l scenarios/mixes.yaml "$ctx/opt/arkbench/src/scenarios/"
  find "$ctx" -name __pycache__ -prune -exec rm -rf {} +
  cp -al "build/wheelhouse/engine-$engine" "$ctx/tmp/wheelhouse"
  echo "$engine" > "$ctx/tmp/arkbench-engine"
  echo "$ctx"
}

build() {   # TAG ROLE DOCKERFILE TARGET ENGINE: one image, its line printed when done
  local tag=$1 role=$2 dockerfile=$3 target=$4 engine=$5 t0 ctx=.
  t0=$(date +%s)
  local args=(--build-arg BASE_IMAGE="$base" --build-arg CORE_IMAGE="$core" --build-arg HARNESS_VERSION="$version"
              --build-arg GIT_COMMIT="$commit" --build-arg RUNNER_IMAGE="arkbench/$engine:$version"
              --label org.arkbench.engine="$engine" --label org.arkbench.version="$version"
              --label org.arkbench.role="$role")
  [ "$target" = - ] || args+=(--target "$target")
  # the measuring code it holds (harness/provenance.py's code_digest): RUNTIME=auto passes over an image that
  # holds other code than the checkout's, RUNTIME=docker refuses it
  [ "$engine" = core ] || args+=(--label org.arkbench.code="$("$py" -m harness.provenance code "$engine")")
  # the shared runner and the core have contexts of their own: only what the image holds (an engine's own
  # Dockerfile is built from the repository, as it expects)
  case "$dockerfile" in docker/runner.Dockerfile|docker/core.Dockerfile) ctx=$(context "${tag//[:\/]/_}" "$engine") ;; esac
  # the legacy builder's deprecation notice on every build is noise; a failed build shows everything
  if ! docker build -q -f "$dockerfile" "${args[@]}" -t "$tag" "$ctx" > "$logs/${tag//[:\/]/_}.log" 2>&1; then
    echo "images: $tag failed:" >&2; cat "$logs/${tag//[:\/]/_}.log" >&2; return 1
  fi
  [ "$ctx" = . ] || rm -rf "$ctx"
  echo "images: $tag ($role) $(docker image inspect -f '{{.Id}}' "$tag" | cut -c1-19) ($(( $(date +%s) - t0 )) s)"
}

# the shared layer first (the harness's own dependencies), then every engine side by side: its runner,
# then its server (FROM the runner) in the same job
core="arkbench/core:$version"
build "$core" core docker/core.Dockerfile - core
engine_images() {   # ENGINE: its images in order, runner first
  while read -r engine name role dockerfile target; do
    [ "$engine" = "$1" ] || continue
    build "arkbench/$name:$version" "$role" "$dockerfile" "$target" "$engine" || return 1
  done <<< "$specs"
}
pids=()
for engine in $(cut -d' ' -f1 <<< "$specs" | uniq); do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || exit 1; done
  engine_images "$engine" & pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || exit 1; done
echo "images: done in $(( $(date +%s) - start )) s"
# REGISTRY=host[:port][/path]: each image pushed there too, for a cluster's nodes (k8s-manifests --registry)
if [ -n "${REGISTRY:-}" ]; then
  while read -r engine name role dockerfile target; do
    docker tag "arkbench/$name:$version" "$REGISTRY/arkbench/$name:$version"
    docker push -q "$REGISTRY/arkbench/$name:$version" || { echo "images: push to $REGISTRY failed" >&2; exit 1; }
    echo "images: pushed $REGISTRY/arkbench/$name:$version"
  done <<< "$specs"
fi
