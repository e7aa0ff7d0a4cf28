#!/usr/bin/env bash
# Configure and build tiercache.
#   scripts/build.sh [BUILD_DIR [BUILD_TYPE [extra cmake args...]]]
# BUILD_DIR defaults to build (relative to the repository root),
# BUILD_TYPE to RelWithDebInfo. Builds every target with -j$(nproc), or only
# those named in TIERCACHE_TARGETS (space-separated).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${1:-build}"
build_type="${2:-RelWithDebInfo}"
shift $(($# < 2 ? $# : 2))
[[ "$build_dir" = /* ]] || build_dir="$root/$build_dir"

cmake -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE="$build_type" "$@"
targets=()
for t in ${TIERCACHE_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$build_dir" -j"$(nproc)" "${targets[@]}"
