#!/usr/bin/env bash
# make test and make test-quick: the suites as stages, in lanes that run side by side, each
# stage's output shown whole when it ends (so the runners' closing lines stay visible), then a
# table of each stage's time. Exits non-zero if any stage failed.
#
#   scripts/test_stages.sh full    the Release suites beside the sanitizer builds and suites
#   scripts/test_stages.sh quick   the Release suites only
#
# Lanes: the one Release build first (it serves the CLI, ctest and the Python package), then
# lane "release" (its suites) beside lane "sanitizers" (ASan + UBSan, TSan, fuzz: builds, then
# suites). On 2 cores the lanes overlap one lane's compiling with the other's test processes,
# many of which wait (CLI subprocesses, Dask's cluster) rather than compute.
set -uo pipefail
cd "$(dirname "$0")/.."

MODE=${1:-full}
LOGS=build-logs
rm -rf "$LOGS" && mkdir -p "$LOGS"
: >"$LOGS/times"
START=$(date +%s)

# stage LANE NAME COMMAND...: runs COMMAND, its output to $LOGS/NAME.log, printed whole when it
# ends (one stage's block at a time); records the time. Returns COMMAND's status.
stage() {
  local lane=$1 name=$2 t0 rc
  shift 2
  t0=$(date +%s)
  "$@" >"$LOGS/$name.log" 2>&1
  rc=$?
  local seconds=$(($(date +%s) - t0))
  {
    flock 9
    echo "== [$lane] $name ($seconds s, $([ $rc -eq 0 ] && echo ok || echo "FAILED, status $rc"))"
    cat "$LOGS/$name.log"
    echo "$lane $name $seconds $rc" >>"$LOGS/times"
  } 9>"$LOGS/.print-lock"
  return $rc
}

PY=.venv/bin/python
JOBS=${JOBS:-$(nproc)}
# The Python suites on every core (pytest-xdist); the Dask suite starts its own worker processes
# and runs on one.
XDIST=(-n "$JOBS")
# Each pytest stage its own temporary folder: two run at once (the CLI suite in both lanes).
tmp() { echo "--basetemp=$PWD/$LOGS/tmp-$1"; }

release_lane() {
  stage release ctest bash -c "cd build && ctest --output-on-failure -j $JOBS" &&
    stage release pytest-cli env GAUSSKL_CLI="$PWD/build/gausskl" \
      $PY -m pytest -q "${XDIST[@]}" "$(tmp cli)" tests/cli &&
    stage release pytest-python $PY -m pytest -q "${XDIST[@]}" "$(tmp python)" tests/python &&
    stage release pytest-dask env GAUSSKL_CLI="$PWD/build/gausskl" \
      $PY -m pytest -q "$(tmp dask)" tests/dask
}

sanitizer_lane() {
  stage sanitizers asan-build make -s asan-build &&
    stage sanitizers asan-ctest bash -c "cd build-asan && ctest --output-on-failure -j $JOBS" &&
    stage sanitizers asan-pytest-cli env GAUSSKL_CLI="$PWD/build-asan/gausskl" \
      $PY -m pytest -q "${XDIST[@]}" "$(tmp asan-cli)" tests/cli
  local asan=$?
  stage sanitizers tsan make -s test-tsan
  local tsan=$?
  stage sanitizers fuzz-replay make -s test-fuzz
  local fuzz=$?
  return $((asan || tsan || fuzz))
}

# The whole run in one function, read before it starts.
main() {
  status=0
  stage setup deps make -s deps || status=1
  stage setup format-check make -s format-check || status=1
  if [ $status -eq 0 ]; then
    stage setup build make -s build &&
      stage setup python make -s python &&
      stage setup dask-extra make -s dask-extra || status=1
  fi
  if [ $status -eq 0 ]; then
    release_lane &
    release=$!
    sanitizers=
    if [ "$MODE" = full ]; then
      sanitizer_lane &
      sanitizers=$!
    fi
    wait $release || status=1
    if [ -n "$sanitizers" ]; then wait "$sanitizers" || status=1; fi
  fi

  TOTAL=$(($(date +%s) - START))
  echo
  LABEL="make test"
  [ "$MODE" = quick ] && LABEL="make test-quick"
  echo "== $LABEL: stage times in seconds (the lanes release and sanitizers run side by side)"
  printf '%-12s %-18s %8s  %s\n' lane stage seconds result
  while read -r lane name seconds rc; do
    printf '%-12s %-18s %8s  %s\n' "$lane" "$name" "$seconds" "$([ "$rc" -eq 0 ] && echo ok || echo FAILED)"
  done <"$LOGS/times"
  printf '%-31s %8s  %s\n' "wall clock" "$TOTAL" "$([ $status -eq 0 ] && echo ok || echo FAILED)"
  return $status
}

main
exit $?
