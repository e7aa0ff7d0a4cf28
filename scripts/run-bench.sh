#!/usr/bin/env bash
# Install what is missing, build, and run tiercache-bench on
# configs/default.json. Extra arguments go to tiercache-bench.
# TIERCACHE_BUILD_DIR overrides the build directory (default: build).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${TIERCACHE_BUILD_DIR:-build}"
[[ "$build_dir" = /* ]] || build_dir="$root/$build_dir"

bash "$root/scripts/setup.sh"
TIERCACHE_TARGETS=tiercache-bench bash "$root/scripts/build.sh" "$build_dir" RelWithDebInfo
cd "$root"
exec "$build_dir/tools/tiercache-bench" --config configs/default.json "$@"
