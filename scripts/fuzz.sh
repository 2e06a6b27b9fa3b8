#!/usr/bin/env bash
# Builds and runs the libFuzzer targets of the file readers (fuzz/).
#
#   scripts/fuzz.sh smoke          replay every seed and crash reproducer, then fuzz each
#                                  target for a few seconds ($FUZZ_SMOKE_SECONDS, default 5)
#   scripts/fuzz.sh run SECONDS [TARGET...]
#                                  fuzz each target (npy, npz, csv; default all) for SECONDS,
#                                  growing a working corpus in the build folder
#
# A crash leaves its input in $BUILD/artifacts/TARGET/; once fixed, copy it to
# fuzz/regressions/TARGET/ so that every smoke run replays it. Needs clang and libFuzzer
# (Debian: clang libclang-rt-14-dev). Build folder: $FUZZ_BUILD, default build-fuzz.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD=${FUZZ_BUILD:-build-fuzz}
TARGETS=(npy npz csv)
# Inputs up to 16 KiB; an allocation over 64 MiB is a crash: even a deflate entry of that
# size cannot legitimately expand past ~17 MB, so anything larger is a size claim the reader
# failed to check before allocating.
FLAGS=(-max_len=16384 -malloc_limit_mb=64 -timeout=10 -print_final_stats=1)

usage() {
  sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

build() {
  CC=clang CXX=clang++ cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DGAUSSKL_BUILD_FUZZ=ON -DGAUSSKL_BUILD_CLI=OFF -DGAUSSKL_BUILD_TESTS=OFF \
    -DGAUSSKL_WERROR=ON >/dev/null
  cmake --build "$BUILD" --target gausskl_fuzzers
}

# The folders of TARGET's seeds and crash reproducers (git keeps no empty folder).
inputs() {
  local folder
  for folder in "fuzz/corpus/$1" "fuzz/regressions/$1"; do
    [ ! -d "$folder" ] || echo "$folder"
  done
}

# Runs every seed and reproducer of TARGET once; fails if any of them crashes.
replay() {
  local target=$1 files log="$BUILD/logs/replay_$1.log"
  mapfile -t files < <(inputs "$target" | xargs -I{} find {} -type f | sort)
  echo "== fuzz replay $target: ${#files[@]} inputs"
  "$BUILD/fuzz/gausskl_fuzz_$target" "${FLAGS[@]}" "${files[@]}" >"$log" 2>&1 ||
    { tail -n 40 "$log"; return 1; }
}

# Fuzzes TARGET for SECONDS starting from CORPUS (written to) plus the seeds and reproducers.
fuzz() {
  local target=$1 seconds=$2 corpus=$3 log="$BUILD/logs/fuzz_$1.log" folders
  mapfile -t folders < <(inputs "$target")
  mkdir -p "$corpus" "$BUILD/artifacts/$target"
  echo "== fuzz $target for ${seconds}s"
  if ! "$BUILD/fuzz/gausskl_fuzz_$target" "${FLAGS[@]}" -dict="fuzz/$target.dict" \
      -max_total_time="$seconds" -artifact_prefix="$BUILD/artifacts/$target/" \
      "$corpus" "${folders[@]}" >"$log" 2>&1; then
    tail -n 60 "$log"
    echo "fuzz: $target crashed; the input is in $BUILD/artifacts/$target/" >&2
    return 1
  fi
  grep -E '^stat::number_of_executed_units|^Done' "$log" | tail -n 2
}

[ $# -ge 1 ] || usage
command=$1
shift
case "$command" in
  smoke)
    [ $# -eq 0 ] || usage
    build
    mkdir -p "$BUILD/logs"
    for target in "${TARGETS[@]}"; do replay "$target"; done
    for target in "${TARGETS[@]}"; do
      scratch=$(mktemp -d "$BUILD/smoke_$target.XXXXXX")
      fuzz "$target" "${FUZZ_SMOKE_SECONDS:-5}" "$scratch" || { rm -rf "$scratch"; exit 1; }
      rm -rf "$scratch"
    done
    ;;
  run)
    [ $# -ge 1 ] && [[ $1 =~ ^[0-9]+$ ]] || usage
    seconds=$1
    shift
    [ $# -eq 0 ] || TARGETS=("$@")
    build
    mkdir -p "$BUILD/logs"
    for target in "${TARGETS[@]}"; do
      [ -d "fuzz/corpus/$target" ] || usage
      fuzz "$target" "$seconds" "$BUILD/corpus/$target"
    done
    ;;
  *) usage ;;
esac
