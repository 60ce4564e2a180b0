#!/usr/bin/env bash
# `make test`: the whole suite in two parts, so a cold run waits less (issue 43: ≤ 20 min on 2 cores).
#   1. every test but the docker and serial ones, on TEST_JOBS pytest workers (xdist; an idle worker takes
#      tests queued on a busy one), while the engine images build beside them (their log: build/images.log);
#   2. once the images are built: the docker suite and the serial tests (assertions on rates or times,
#      which a parallel neighbour would bend), one at a time.
# Usage: tests/suite.sh PYTHON MAKE [pytest args...]
set -uo pipefail
cd "$(dirname "$0")/.."
py=${1:?usage: suite.sh PYTHON MAKE [pytest args]}
make_cmd=${2:?}
shift 2
jobs=${TEST_JOBS:-2}
start=$(date +%s)
mkdir -p build
images_pid=
if docker info >/dev/null 2>&1; then
  echo "test: building the engine images beside part 1 (log: build/images.log)"
  $make_cmd --no-print-directory images >build/images.log 2>&1 &
  images_pid=$!
else
  echo "no Docker daemon answers: the docker suite will be skipped"
fi

ok() { [ "$1" = 0 ] || [ "$1" = 5 ]; }     # 5: nothing collected (a -k that selects none of a part)
"$py" -m pytest -n "$jobs" --dist worksteal -m "not docker and not serial" "$@"
part1=$?
part1_s=$(( $(date +%s) - start ))
if [ -n "$images_pid" ]; then
  if ! wait "$images_pid"; then
    tail -40 build/images.log
    echo "test: the image build failed (build/images.log); the docker suite cannot run" >&2
    exit 1
  fi
  echo "test: images built ($(grep -h 'images:' build/images.log | tail -1))"
fi
"$py" -m pytest -m "docker or serial" "$@"
part2=$?
echo "test: part 1 (parallel, $jobs workers) ${part1_s} s, part 2 (docker, serial) $(( $(date +%s) - start - part1_s )) s, in all $(( $(date +%s) - start )) s"
ok "$part1" && ok "$part2"
