#!/usr/bin/env bash
# `make test`: the whole suite in three parts, so a cold run waits less (issue 43: ≤ 20 min on 2 cores).
#   1. every test but the docker and serial ones, on TEST_JOBS pytest workers (xdist; an idle worker takes
#      tests queued on a busy one), while the engine images build beside them (build/images.log);
#   2. once the images are built, the docker suite, beside what is left of part 1 (its output in
#      build/test-docker.log, printed when it ends);
#   3. then, alone, the serial tests: assertions on rates or times, which a neighbour would bend.
# Usage: tests/suite.sh PYTHON MAKE [pytest args...]
set -uo pipefail
cd "$(dirname "$0")/.."
py=${1:?usage: suite.sh PYTHON MAKE [pytest args]}
make_cmd=${2:?}
shift 2
jobs=${TEST_JOBS:-3}
start=$(date +%s)
since() { echo $(( $(date +%s) - start )); }
mkdir -p build
ok() { [ "$1" = 0 ] || [ "$1" = 5 ]; }     # 5: nothing collected (a -k that selects none of a part)

images_pid=
if docker info >/dev/null 2>&1; then
  echo "test: building the engine images beside part 1 (log: build/images.log)"
  $make_cmd --no-print-directory images >build/images.log 2>&1 &
  images_pid=$!
else
  echo "no Docker daemon answers: the docker suite will be skipped"
fi
"$py" -m pytest -n "$jobs" --dist worksteal -m "not docker and not serial" "$@" &
part1_pid=$!

docker_rc=0 docker_pid=
if [ -n "$images_pid" ]; then
  if wait "$images_pid"; then
    echo "test: images built at $(since) s ($(grep -h 'images: done' build/images.log)); the docker suite starts beside part 1"
    "$py" -m pytest -m docker "$@" >build/test-docker.log 2>&1 &
    docker_pid=$!
  else
    tail -40 build/images.log
    echo "test: the image build failed (build/images.log); the docker suite cannot run" >&2
    docker_rc=1
  fi
fi
wait "$part1_pid"; part1=$?
echo "test: part 1 (parallel, $jobs workers) ended at $(since) s"
if [ -n "$docker_pid" ]; then
  wait "$docker_pid"; docker_rc=$?
  echo "test: the docker suite ended at $(since) s:"
  cat build/test-docker.log
fi
"$py" -m pytest -m "serial and not docker" "$@"
serial=$?
echo "test: in all $(since) s (part 1 and the docker suite side by side, then the serial tests)"
ok "$part1" && ok "$docker_rc" && ok "$serial"
