#!/usr/bin/env bash
# Two commits' C++ benchmarks side by side: each built Release with the benchmarks in a worktree
# under ${TMPDIR:-/tmp}, then FILTERs run alternately, ROUNDS rounds (default 3), as CSV lines
# "before|after,<Google Benchmark CSV>". Compare the min of the rounds; a lone run says little on
# a shared machine.
#   bench/compare_commits.sh 07068de HEAD > compare.csv
set -euo pipefail
before=$1 after=$2 rounds=${ROUNDS:-3}
work=${TMPDIR:-/tmp}/gausskl-compare
repo=$(git rev-parse --show-toplevel)
for side in before after; do
  rev=${!side}
  git -C "$repo" worktree add -f "$work/src-$side" "$rev" >/dev/null 2>&1 ||
    git -C "$work/src-$side" checkout -q "$rev"
  cmake -S "$work/src-$side" -B "$work/build-$side" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DGAUSSKL_BUILD_BENCH=ON >/dev/null
  cmake --build "$work/build-$side" -j "$(nproc)" --target gausskl_bench_pairwise \
    gausskl_bench_rowwise gausskl_bench_full_pairs >/dev/null
done
run() {  # side, binary, filter
  "$work/build-$1/bench/$2" --benchmark_filter="$3" --benchmark_format=csv 2>/dev/null |
    tail -n +2 | sed "s/^/$1,/"
}
for ((r = 0; r < rounds; ++r)); do
  for side in before after; do
    run "$side" gausskl_bench_pairwise 'N:(1024|4096)/D:256/distinct:1/threads:0|N:4096/D:64'
    run "$side" gausskl_bench_rowwise 'BM_kl_full<(float|double)>/N:4096|BM_kl_diag<float>/D:(64|256)'
    run "$side" gausskl_bench_full_pairs 'N:512/D:16'
  done
done
