#!/bin/sh
# The tables of docs/benchmarks.md, "An adaptive window": W-TinyLFU with a
# fixed 1% window against the adaptive one (eviction.wtinylfu_adaptive_window),
#   1. on Zipf 0.9 and 1.0 at 1%, 10% and 30% caches (configs/acceptance/);
#   2. on three recency-biased traces and one of Zipf with scans
#      (scripts/recency-traces.py, 6M requests each) replayed on a 19,968-object cache (39 slabs of 512 128-byte
#      slots), beside LRU and S3-FIFO on the same cache and the reference
#      simulators (ARC among them) at the same capacity.
# Usage: scripts/adaptive-window.sh [BUILD_DIR] [TRACE_DIR]   (output on stdout)
set -eu
B=${1:-build}
T=${2:-/dev/shm/tiercache-recency-traces}
cd "$(dirname "$0")/.."
mkdir -p "$T"
miss() { python3 -c 'import json,sys; d=json.load(sys.stdin); c=d["cache"]; print("%.3f window_per_mille=%d" % (100 * (1 - c["hit_ratio"]), c["wtinylfu_window_per_mille"]))'; }
# A config from an acceptance config: POLICY ADAPTIVE SLABS -> stdout
cfg() {
  python3 - "$@" <<'PY'
import json, sys
policy, adaptive, slabs = sys.argv[1], sys.argv[2] == "on", sys.argv[3]
d = json.load(open("configs/acceptance/zipf0.9-1pct-lru.json"))
d["eviction"] = {"policy": policy, "wtinylfu_adaptive_window": adaptive}
if slabs != "-":
    d["tiers"][0]["size"] = int(slabs) * 65536
print(json.dumps(d))
PY
}
for a in 0.9 1.0; do
  for p in 1 10 30; do
    for w in off on; do
      f=configs/acceptance/zipf$a-${p}pct-wtinylfu.json
      python3 -c "import json; d=json.load(open('$f')); d['eviction']['wtinylfu_adaptive_window']=('$w'=='on'); print(json.dumps(d))" >"$T/zipf.json"
      echo "zipf=$a size=${p}% adaptive=$w miss_ratio_pct=$("$B"/tools/tiercache-bench --config "$T/zipf.json" --no-limits --no-progress --json | miss)"
    done
  done
done
for k in slide recency phases scans; do
  [ -s "$T/$k.csv" ] || python3 scripts/recency-traces.py "$k" 6000000 "$T/$k.csv"
  for run in "lru off" "s3fifo off" "wtinylfu off" "wtinylfu on"; do
    set -- $run
    cfg "$1" "$2" 39 >"$T/replay.json"
    echo "trace=$k policy=$1 adaptive=$2 miss_ratio_pct=$("$B"/tools/tiercache-bench replay --config "$T/replay.json" --trace "$T/$k.csv" --no-limits --no-progress --json | miss)"
  done
  echo "simulate trace=$k"
  "$B"/tools/tiercache-bench simulate --config configs/acceptance/zipf0.9-1pct-lru.json --trace "$T/$k.csv" --objects 19968
done
