#!/usr/bin/env bash
# tiercache-server and memcached side by side: same machine, same DRAM
# budget, same client (bench/memcache_load.cc), same workload; runs
# alternate (tiercache, memcached, tiercache, memcached, ...) and the ratios
# are printed (docs/server.md, "Compared with memcached").
#
#   scripts/server-vs-memcached.sh [ROUNDS]      (default 2 rounds per workload)
#
# Workloads (both Zipf 0.99 unless ZIPF is set, 90% gets with look-aside fill, 512-byte values):
#   fits   a key space whose items fit in the DRAM budget;
#   4x     a key space 4x the DRAM budget: tiercache gets DRAM plus an
#          emulated-PMEM tier (file on /dev/shm) of 4x DRAM, memcached the same
#          DRAM; the hit ratio is printed beside the throughput.
# CPU per request = server process CPU time (utime+stime from /proc) during
# the measured run / requests served.
# Env: DRAM_MB (64), SECONDS_PER_RUN (10), CONNECTIONS (4), DEPTH (16),
# SERVER_THREADS (2), VALUE_SIZE (512), ZIPF (0.99; 0 = uniform keys),
# TIERCACHE_SERVER, LOAD, MEMCACHED.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
rounds="${1:-2}"
dram_mb="${DRAM_MB:-64}"
secs="${SECONDS_PER_RUN:-10}"
conns="${CONNECTIONS:-4}"
depth="${DEPTH:-16}"
threads="${SERVER_THREADS:-2}"
vsize="${VALUE_SIZE:-512}"
zipf="${ZIPF:-0.99}"
tc_bin="${TIERCACHE_SERVER:-$root/build/tools/tiercache-server}"
load_bin="${LOAD:-$root/build/bench/tiercache-memcache-load}"
mc_bin="${MEMCACHED:-/usr/bin/memcached}"
for b in "$tc_bin" "$load_bin" "$mc_bin"; do
  [[ -x "$b" ]] || { echo "server-vs-memcached: $b missing (build tiercache-server and tiercache-memcache-load)" >&2; exit 1; }
done
work=$(mktemp -d /tmp/tiercache-vs-memcached.XXXXXX)
pid=""
cleanup() {
  [[ -n "$pid" ]] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

# Items per MiB are about the same for both (header + key + 512-byte value
# in a ~600-byte slot): "fits" uses half the DRAM, "4x" four times it.
item_bytes=$((vsize + 100))
fits_keys=$((dram_mb * 1048576 / 2 / item_bytes))
big_keys=$((dram_mb * 1048576 * 4 / item_bytes))

bench_name=server-vs-memcached
# shellcheck source=lib/server-bench.sh
source "$root/scripts/lib/server-bench.sh"

tiercache_config() {  # tiercache_config PMEM_MB
  local pmem=""
  [[ "$1" -gt 0 ]] && pmem=", {\"name\": \"pmem\", \"kind\": \"pmem-file\", \"size\": \"$1MiB\", \"path\": \"/dev/shm\"}"
  cat >"$work/tc.json" <<JSON
{
  "slab_size": "1MiB",
  "tiers": [{"name": "dram", "kind": "dram", "size": "${dram_mb}MiB"}$pmem],
  "allocation": {"min_size": 64, "max_size": "1MiB", "growth_factor": 1.25},
  "index": {"bucket_power": 21},
  "background_eviction": {"enabled": true, "threads": 1},
  "promotion": {"enabled": $([[ "$1" -gt 0 ]] && echo true || echo false), "hits": 2},
  "server": {"threads": $threads, "max_item_size": "512KiB"}
}
JSON
}

start_server() {  # start_server tiercache|memcached PMEM_MB -> sets pid, port
  port=$(free_port)
  if [[ "$1" == tiercache ]]; then
    tiercache_config "$2"
    "$tc_bin" --config "$work/tc.json" -p "$port" -t "$threads" >"$work/server.log" 2>&1 &
  else
    # memcached refuses to run as root unless told which user to be.
    local as_user=()
    [[ $EUID -eq 0 ]] && as_user=(-u root)
    "$mc_bin" "${as_user[@]}" -U 0 -l 127.0.0.1 -p "$port" -m "$dram_mb" -t "$threads" -c 1024 >"$work/server.log" 2>&1 &
  fi
  pid=$!
  wait_port "$port" || { cat "$work/server.log" >&2; exit 1; }
}

stop_server() { kill -TERM "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true; pid=""; }

run() {  # run NAME WORKLOAD KEYS PMEM_MB -> prints a result line
  start_server "$1" "$4"
  # Prepopulate, then a short warm-up, then the measured run.
  "$load_bin" --server "127.0.0.1:$port" --keys "$3" --value-size "$vsize" --seconds 2 --connections "$conns" \
    --depth "$depth" --zipf "$zipf" --prepopulate >/dev/null
  local t0 t1 out
  t0=$(cpu_ticks "$pid")
  out=$("$load_bin" --server "127.0.0.1:$port" --keys "$3" --value-size "$vsize" --seconds "$secs" \
        --connections "$conns" --depth "$depth" --seed 7 --zipf "$zipf")
  t1=$(cpu_ticks "$pid")
  stop_server
  local ops
  ops=$(sed -E 's/.*ops=([0-9]+) .*/\1/' <<<"$out")
  local cpu_us
  cpu_us=$(awk -v d=$((t1 - t0)) -v hz="$(getconf CLK_TCK)" -v n="$ops" 'BEGIN { printf "%.2f", d / hz * 1e6 / n }')
  echo "$2 $1 $out server_cpu_us_per_op=$cpu_us"
}

echo "=== server-vs-memcached: DRAM ${dram_mb} MiB each, ${threads} server threads, ${conns} client connections" \
     "x depth ${depth}, ${secs} s per run, ${rounds} alternating rounds; $(nproc) cores shared by client and server"
echo "=== fits: ${fits_keys} keys; 4x: ${big_keys} keys (tiercache adds a $((dram_mb * 4)) MiB emulated-PMEM tier)"
results="$work/results.txt"
for r in $(seq "$rounds"); do
  run tiercache fits "$fits_keys" 0 | tee -a "$results"
  run memcached fits "$fits_keys" 0 | tee -a "$results"
  run tiercache 4x "$big_keys" $((dram_mb * 4)) | tee -a "$results"
  run memcached 4x "$big_keys" 0 | tee -a "$results"
done

echo "=== medians and ratios (tiercache / memcached)"
for w in fits 4x; do
  /usr/bin/python3 - "$results" "$w" <<'PY'
import statistics, sys
rows = [dict(kv.split("=", 1) for kv in line.split()[2:]) | {"w": line.split()[0], "s": line.split()[1]}
        for line in open(sys.argv[1]) if line.strip()]
w = sys.argv[2]
def med(server, key):
    return statistics.median(float(r[key]) for r in rows if r["w"] == w and r["s"] == server)
tc, mc = med("tiercache", "ops_per_sec"), med("memcached", "ops_per_sec")
print("%-5s throughput: tiercache %.0f ops/s, memcached %.0f ops/s, ratio %.2fx" % (w, tc, mc, tc / mc))
print("%-5s hit ratio:  tiercache %.4f, memcached %.4f" % (w, med("tiercache", "hit_ratio"), med("memcached", "hit_ratio")))
ct, cm = med("tiercache", "server_cpu_us_per_op"), med("memcached", "server_cpu_us_per_op")
print("%-5s server CPU per request: tiercache %.2f us, memcached %.2f us, ratio %.2fx" % (w, ct, cm, ct / cm))
print("%-5s batch p99 (depth requests): tiercache %.0f us, memcached %.0f us" % (w, med("tiercache", "batch_p99_us"), med("memcached", "batch_p99_us")))
PY
done
