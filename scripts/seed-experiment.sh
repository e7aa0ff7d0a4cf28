#!/usr/bin/env bash
# The seed experiment (docs/benchmarks.md, "Background eviction"): background
# eviction off (A) vs on (B), medians of RUNS alternating runs each, with
#   1. 2 application threads  (configs/seed-bg-off.json    vs seed-bg-on.json)
#   2. 1 application thread   (configs/seed-bg-off-1t.json vs seed-bg-on-1t.json)
#   3. the default config     (configs/default-bg-off.json vs default.json)
# and prints one compare table per pair (throughput, hit ratio, tier-0 share
# of hits, CPU per operation, get/set latency percentiles). One more pair
# says how much there was to gain:
#   4. ceiling: the 1-thread seed with background eviction on (A) vs one
#      DRAM tier holding every key, never evicting (configs/seed-dram-1t.json,
#      B): a cache whose foreground pays nothing for eviction is at most B.
#      B's LRU refreshes every 40 ms, about what the seed's adaptive interval
#      settles at (0.1 x eviction ages); without evictions it would stay exact.
#
#   5. flash: the 1-thread seed with its PMEM tier replaced by a flash store
#      (configs/seed-flash-bg-{off,on}-1t.json: 50 MiB DRAM + 512 MiB file
#      in /var/tmp, on disk), the movers filling flash regions in batches.
#
# usage: scripts/seed-experiment.sh [RUNS] [PAIR...]   PAIR: 2t 1t flash default ceiling (2t 1t default ceiling by default)
# TIERCACHE_MAX_OPS: cap every run at this many operations per thread
# (compare --max-ops; the configs' 4M take minutes per flash run).
# TIERCACHE_BUILD_DIR: the build directory holding tools/tiercache-bench
# (default: build; built there with scripts/build.sh when missing).
# Run it on a quiet machine: every figure is a ratio of two sides measured
# in the same run, but a busy host widens the spread of both.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${TIERCACHE_BUILD_DIR:-build}"
[[ "$build_dir" = /* ]] || build_dir="$root/$build_dir"
runs="${1:-5}"
shift || true
pairs=("$@")
[[ ${#pairs[@]} -gt 0 ]] || pairs=(2t 1t default ceiling)

bench="$build_dir/tools/tiercache-bench"
if [[ ! -x "$bench" ]]; then
  TIERCACHE_TARGETS=tiercache-bench bash "$root/scripts/build.sh" "$build_dir" RelWithDebInfo
fi
cd "$root"

for pair in "${pairs[@]}"; do
  case "$pair" in
    2t) a=configs/seed-bg-off.json; b=configs/seed-bg-on.json; title="seed experiment, 2 application threads" ;;
    1t) a=configs/seed-bg-off-1t.json; b=configs/seed-bg-on-1t.json; title="seed experiment, 1 application thread" ;;
    flash) a=configs/seed-flash-bg-off-1t.json; b=configs/seed-flash-bg-on-1t.json
           title="seed experiment on DRAM + flash (a file in /var/tmp), 1 application thread" ;;
    default) a=configs/default-bg-off.json; b=configs/default.json; title="default config" ;;
    ceiling) a=configs/seed-bg-on-1t.json; b=configs/seed-dram-1t.json
             title="ceiling, 1 application thread: background eviction on (A) vs all keys in DRAM, no eviction (B)" ;;
    *) echo "unknown pair '$pair' (expected 2t, 1t, flash, default or ceiling)" >&2; exit 2 ;;
  esac
  [[ $pair == ceiling ]] || title="$title: background eviction off (A) vs on (B)"
  echo "== $title, $runs runs each =="
  cap=()
  [[ -z "${TIERCACHE_MAX_OPS:-}" ]] || cap=(--max-ops "$TIERCACHE_MAX_OPS")
  echo "\$ tiercache-bench compare $a $b -n $runs ${cap[*]}"
  "$bench" compare "$a" "$b" -n "$runs" "${cap[@]}" --no-progress
  echo
done
