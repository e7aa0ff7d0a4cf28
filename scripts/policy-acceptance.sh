#!/bin/sh
# The unit-size acceptance tables of docs/benchmarks.md ("Eviction policies"):
# the real cache (tiercache-bench, one thread, 10M gets, Zipf over 1M keys)
# per policy and cache size, then the reference simulators over the same
# request stream at the same capacities in objects (the cache's slots).
# Usage: scripts/policy-acceptance.sh [BUILD_DIR] [POLICIES]   (output on stdout)
set -eu
B=${1:-build}
POLICIES=${2:-"lru clock s3fifo wtinylfu"}
cd "$(dirname "$0")/.."
for a in 0.9 1.0; do
  for p in 1 10 30; do
    for pol in $POLICIES; do
      f=configs/acceptance/zipf$a-${p}pct-$pol.json
      hr=$("$B"/tools/tiercache-bench --config "$f" --no-limits --no-progress --json |
           python3 -c 'import json,sys; d=json.load(sys.stdin); print("%.3f" % (100 * (1 - d["cache"]["hit_ratio"])))')
      echo "cache zipf=$a size=${p}% policy=$pol miss_ratio_pct=$hr"
    done
  done
  # 20, 196, 586 slabs of 512 slots: the caches above, in objects.
  echo "simulate zipf=$a"
  "$B"/tools/tiercache-bench simulate --config configs/acceptance/zipf$a-1pct-lru.json --objects 10240,100352,300032
done
