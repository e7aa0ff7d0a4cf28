#!/usr/bin/env bash
# Server CPU per request and throughput of tiercache-server against
# memcached, driven by a client that is not tiercache's own: memcaslap
# (libmemcached-tools), or memtier_benchmark with MEMTIER=path (not in
# Debian 12: build it from its source, github.com/RedisLabs/memtier_benchmark).
# One server thread each, 50 connections, 512-byte values, 1 set : 10
# gets; runs alternate (tiercache, memcached, ...) and the medians and
# their ratios are printed.
#
#   scripts/server-cpu-vs-memcached.sh [ROUNDS]      (default 5 rounds per dataset)
#
# Datasets (memcaslap's key space is connections x window keys; memtier's
# is 1..N, every key set first, then gets and sets on uniform random keys,
# so a store that keeps a quarter of the 4x dataset hits about a quarter):
#   fits   about half the DRAM budget;
#   4x     four times the DRAM budget: tiercache gets DRAM plus an emulated-PMEM
#          tier (a file on /dev/shm) of 4x DRAM, memcached the same DRAM, so it
#          misses more; the hit ratio is printed beside the throughput.
# CPU per request = server utime+stime (/proc/PID/stat) over the measured run
# / requests served (stats cmd_get + cmd_set over the same run); its user
# and system parts are printed too, and tiercache's background threads'
# share (tc-* threads: evictor, reaper) within them. The client's CPU per
# request is printed too: with 2 cores the client (memtier above all) runs
# near a full core and bounds ops/s, and it pays more for a hit (the value
# is received and parsed) than for a miss.
# With STRACE=1 a last run per server and dataset attaches `strace -c -f` and
# prints system calls per request (strace slows the server: its throughput
# is not a result).
# Env: DRAM_MB (64), SECONDS_PER_RUN (10), WARMUP_SECONDS (4), CONNECTIONS (50),
# VALUE_SIZE (512), KEY_SIZE (64; memcaslap only), TIERCACHE_SERVER, MEMCACHED, MEMCASLAP, MEMTIER,
# LOCK (a file to hold with flock -x for each round, e.g. /tmp/tc-cpu.lock),
# PMEM_DIR (where the emulated-PMEM tier's file goes; default: as root, a
# tmpfs mounted with huge=within_size for the run, as docs/configuration.md
# asks of an emulated tier - /dev/shm here maps 4 KiB pages and misses the
# TLB on most reads; otherwise /dev/shm),
# BASELINE (another tiercache-server build, e.g. the parent commit's: it runs
# beside the others in every round, and tiercache / baseline is printed too),
# DATASETS (fits 4x: which of the two to run),
# TIERED (1, the default: tiercache's 4x run adds the PMEM tier; 0: it gets
# DRAM only, as memcached does, and misses as much - a control for what its
# hits cost the client, which is the bottleneck on a 2-core host),
# BACKGROUND_EVICTION (1, the default here: one evictor thread; 0: none, the
# worker evicts and demotes inline, so background_us is 0),
# MEMCACHED_MEMORY (dram, the default: memcached gets tier 0's DRAM only, so
# in the 4x set it keeps a quarter of the keys; total: it gets DRAM plus the
# PMEM tier's size, all as DRAM, so both servers hold the whole 4x set, hit
# alike and the client does the same work per request with either - the
# control for what tiercache's tiering costs the server),
# PROTOCOL (memtier only: memcache_text, the default, or memcache_binary -
# memcached's binary protocol, which tiercache-server carries out as meta
# commands),
# PROMOTION (0: the library's default, off; 1: promote items hit twice in the
# PMEM tier - it buys nothing here, where the emulated tier costs what DRAM
# costs, and under uniform keys every promotion is paid for with a demotion).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
rounds="${1:-5}"
dram_mb="${DRAM_MB:-64}"
secs="${SECONDS_PER_RUN:-10}"
warm="${WARMUP_SECONDS:-4}"
conns="${CONNECTIONS:-50}"
vsize="${VALUE_SIZE:-512}"
ksize="${KEY_SIZE:-64}"
tc_bin="${TIERCACHE_SERVER:-$root/build/tools/tiercache-server}"
mc_bin="${MEMCACHED:-/usr/bin/memcached}"
slap="${MEMCASLAP:-/usr/bin/memcaslap}"
memtier="${MEMTIER:-}"
lock="${LOCK:-}"
promotion="${PROMOTION:-0}"
bg_eviction="${BACKGROUND_EVICTION:-1}"
[[ "$bg_eviction" =~ ^[01]$ ]] || { echo "server-cpu-vs-memcached: BACKGROUND_EVICTION must be 0 or 1, not '$bg_eviction'" >&2; exit 2; }
baseline="${BASELINE:-}"
datasets="${DATASETS:-fits 4x}"
tiered="${TIERED:-1}"
mc_memory="${MEMCACHED_MEMORY:-dram}"
protocol="${PROTOCOL:-memcache_text}"
[[ "$protocol" == memcache_text || "$protocol" == memcache_binary ]] || { echo "server-cpu-vs-memcached: PROTOCOL must be memcache_text or memcache_binary, not '$protocol'" >&2; exit 2; }
[[ "$mc_memory" == dram || "$mc_memory" == total ]] || { echo "server-cpu-vs-memcached: MEMCACHED_MEMORY must be dram or total, not '$mc_memory'" >&2; exit 2; }
[[ "$tiered" =~ ^[01]$ ]] || { echo "server-cpu-vs-memcached: TIERED must be 0 or 1, not '$tiered'" >&2; exit 2; }
big_pmem=$((tiered == 1 ? dram_mb * 4 : 0))
mc_big_extra=$([[ "$mc_memory" == total ]] && echo "$big_pmem" || echo 0)
for w in $datasets; do
  [[ "$w" == fits || "$w" == 4x ]] || { echo "server-cpu-vs-memcached: DATASETS takes fits and/or 4x, not '$w'" >&2; exit 2; }
done
client=$slap
[[ -n "$memtier" ]] && client=$memtier
for b in "$tc_bin" "$mc_bin" "$client" ${baseline:+"$baseline"}; do
  [[ -x "$b" ]] || { echo "server-cpu-vs-memcached: $b missing (build tiercache-server; apt-get install memcached libmemcached-tools)" >&2; exit 1; }
done
work=$(mktemp -d /tmp/tiercache-cpu-vs-memcached.XXXXXX)
pid=""
pmem_dir="${PMEM_DIR:-}"
cleanup() {
  [[ -n "$pid" ]] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  mountpoint -q "$work/pmem" 2>/dev/null && umount "$work/pmem"
  rm -rf "$work"
}
trap cleanup EXIT
if [[ -z "$pmem_dir" ]]; then
  pmem_dir=/dev/shm
  if [[ $EUID -eq 0 ]] && mkdir -p "$work/pmem" &&
     mount -t tmpfs -o "huge=within_size,size=$((dram_mb * 4 + 64))M" tiercache-pmem "$work/pmem" 2>/dev/null; then
    pmem_dir="$work/pmem"
  fi
fi

# Window keys per connection: item ~ 48 B header + key + value on both servers.
# memcaslap takes the window in units of k (1024 keys; a bare number is refused).
item_bytes=$((vsize + ksize + 64))
fits_win=$((dram_mb * 1048576 / 2 / item_bytes / conns / 1024))
big_win=$((dram_mb * 1048576 * 4 / item_bytes / conns / 1024))
((fits_win > 0)) || fits_win=1
((big_win > 0)) || big_win=1
# memtier: keys of 'memtier-N' (about 16 bytes), same item budget.
mt_item_bytes=$((vsize + 16 + 64))
fits_keys=$((dram_mb * 1048576 / 2 / mt_item_bytes))
big_keys=$((dram_mb * 1048576 * 4 / mt_item_bytes))
cat >"$work/slap.cfg" <<CFG
key
$ksize $ksize 1
value
$vsize $vsize 1
cmd
0 0.0909
1 0.9091
CFG

bench_name=server-cpu-vs-memcached
# shellcheck source=lib/server-bench.sh
source "$root/scripts/lib/server-bench.sh"

tiercache_config() {  # tiercache_config PMEM_MB
  local pmem=""
  [[ "$1" -gt 0 ]] && pmem=", {\"name\": \"pmem\", \"kind\": \"pmem-file\", \"size\": \"$1MiB\", \"path\": \"$pmem_dir\"}"
  cat >"$work/tc.json" <<JSON
{
  "slab_size": "1MiB",
  "tiers": [{"name": "dram", "kind": "dram", "size": "${dram_mb}MiB"}$pmem],
  "allocation": {"min_size": 64, "max_size": "1MiB", "growth_factor": 1.25},
  "index": {"bucket_power": 21},
  "background_eviction": {"enabled": $([[ "$bg_eviction" == 1 ]] && echo true || echo false), "threads": 1},
  "promotion": {"enabled": $([[ "$1" -gt 0 && "$promotion" == 1 ]] && echo true || echo false), "hits": 2},
  "server": {"threads": 1, "max_item_size": "512KiB", "max_conns": 1024}
}
JSON
}

start_server() {  # start_server tiercache|memcached PMEM_MB -> sets pid, port (memcached: PMEM_MB more DRAM)
  port=$(free_port)
  if [[ "$1" == tiercache || "$1" == baseline ]]; then
    tiercache_config "$2"
    local bin=$tc_bin
    [[ "$1" == baseline ]] && bin=$baseline
    "$bin" --config "$work/tc.json" -p "$port" -t 1 >"$work/server.log" 2>&1 &
  else
    local as_user=()
    [[ $EUID -eq 0 ]] && as_user=(-u root)  # memcached refuses root unless told which user to be
    "$mc_bin" "${as_user[@]}" -U 0 -l 127.0.0.1 -p "$port" -m "$((dram_mb + $2))" -t 1 -c 1024 >"$work/server.log" 2>&1 &
  fi
  pid=$!
  wait_port "$port" || { cat "$work/server.log" >&2; exit 1; }
}
stop_server() { kill -TERM "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true; pid=""; }

slap_run() {  # slap_run WINDOW SECONDS -> memcaslap's last line
  timed "$slap" -s "127.0.0.1:$port" -T 1 -c "$conns" -w "${1}k" -t "${2}s" -F "$work/slap.cfg" 2>&1 | grep -E '^Run time' | tail -1
}

# timed CMD... : runs CMD and writes its CPU seconds (user + system) to
# $work/client_cpu: the client's cost per request, beside the server's
timed() {
  /usr/bin/python3 -c 'import resource, subprocess, sys
rc = subprocess.run(sys.argv[2:]).returncode
r = resource.getrusage(resource.RUSAGE_CHILDREN)
open(sys.argv[1], "w").write("%.3f\n" % (r.ru_utime + r.ru_stime))
sys.exit(rc)' "$work/client_cpu" "$@"
}

# memtier_run KEYS SECONDS [fill] -> memtier's "Totals" line (ops/s first)
memtier_run() {
  local args=(-P "$protocol" -s 127.0.0.1 -p "$port" -t 1 -c "$conns" -d "$vsize" --key-maximum "$1"
              --key-minimum 1 --hide-histogram)
  if [[ "${3:-}" == fill ]]; then
    "$memtier" "${args[@]}" --ratio 1:0 --key-pattern P:P -n allkeys 2>/dev/null | grep -E '^Totals' | tail -1
  else
    timed "$memtier" "${args[@]}" --ratio 1:10 --key-pattern R:R --distinct-client-seed --test-time "$2" 2>/dev/null |
      grep -E '^Totals' | tail -1
  fi
}

run() {  # run NAME DATASET WINDOW|KEYS PMEM_MB -> a result line
  start_server "$1" "$4"
  if [[ -n "$memtier" ]]; then
    memtier_run "$3" 0 fill >/dev/null  # every key once
  else
    slap_run "$3" "$warm" >/dev/null  # fills the window's keys
  fi
  local t0 t1 s0 s1 out
  read -r -a s0 <<<"$(stats "$port")"
  read -r -a t0 <<<"$(cpu_split "$pid")"
  if [[ -n "$memtier" ]]; then out=$(memtier_run "$3" "$secs"); else out=$(slap_run "$3" "$secs"); fi
  read -r -a t1 <<<"$(cpu_split "$pid")"
  read -r -a s1 <<<"$(stats "$port")"
  stop_server
  local gets=$((s1[0] - s0[0])) sets=$((s1[1] - s0[1])) hits=$((s1[2] - s0[2]))
  local tps
  if [[ -n "$memtier" ]]; then
    tps=$(awk '{ printf "%d", $2 }' <<<"$out")
  else
    tps=$(sed -E 's/.*TPS: ([0-9]+).*/\1/' <<<"$out")
  fi
  awk -v w="$2" -v s="$1" -v u=$((t1[0] - t0[0])) -v k=$((t1[1] - t0[1])) -v bg=$((t1[2] - t0[2])) -v hz="$(getconf CLK_TCK)" \
    -v g="$gets" -v st="$sets" -v h="$hits" -v tps="$tps" -v cc="$(cat "$work/client_cpu")" \
    'BEGIN { n = g + st; us = 1e6 / hz / n
             printf "%s %s ops_per_sec=%d requests=%d hit_ratio=%.4f server_cpu_us_per_request=%.2f user_us=%.2f system_us=%.2f background_us=%.2f client_cpu_us=%.2f\n",
                    w, s, tps, n, (g ? h / g : 0), (u + k) * us, u * us, k * us, bg * us, cc * 1e6 / n }'
}

syscalls() {  # syscalls NAME DATASET WINDOW PMEM_MB: strace -c over a short loaded run
  command -v strace >/dev/null || { echo "strace missing (apt-get install strace)" >&2; return 0; }
  start_server "$1" "$4"
  if [[ -n "$memtier" ]]; then memtier_run "$3" 0 fill >/dev/null; else slap_run "$3" "$warm" >/dev/null; fi
  local s0 s1
  read -r -a s0 <<<"$(stats "$port")"
  strace -c -f -p "$pid" -o "$work/strace.txt" &
  local spid=$!
  sleep 0.5
  if [[ -n "$memtier" ]]; then memtier_run "$3" 5 >/dev/null; else slap_run "$3" 5 >/dev/null; fi
  kill -INT "$spid"; wait "$spid" 2>/dev/null || true
  read -r -a s1 <<<"$(stats "$port")"
  stop_server
  local n=$(((s1[0] - s0[0]) + (s1[1] - s0[1])))
  echo "=== $2 $1: system calls per request ($n requests under strace)"
  awk -v n="$n" '$NF ~ /^[a-z_0-9]+$/ && $4 ~ /^[0-9]+$/ && $NF != "total" { printf "  %-14s %.3f\n", $NF, $4 / n; t += $4 }
                 END { printf "  %-14s %.3f\n", "all", t / n }' "$work/strace.txt"
}

echo "=== server-cpu-vs-memcached: $(basename "$client"), DRAM ${dram_mb} MiB each, 1 server thread, ${conns} connections," \
     "${ksize} B keys, ${vsize} B values, 1:10 set:get, ${secs} s per run after ${warm} s warm-up, ${rounds} alternating rounds"
echo "=== fits: ${conns} x ${fits_win}k keys; 4x: ${conns} x ${big_win}k keys (tiercache adds a $((dram_mb * 4)) MiB emulated-PMEM tier in $pmem_dir; memcached gets $((dram_mb + mc_big_extra)) MiB)"
results="$work/results.txt"
if [[ -n "$memtier" ]]; then
  fits_win=$fits_keys big_win=$big_keys
  echo "=== memtier: fits ${fits_keys} keys, 4x ${big_keys} keys"
fi
for r in $(seq "$rounds"); do
  [[ -n "$lock" ]] && { exec 9>"$lock"; flock -x 9; }
  if [[ " $datasets " == *" fits "* ]]; then
    [[ -n "$baseline" ]] && run baseline fits "$fits_win" 0 | tee -a "$results"
    run tiercache fits "$fits_win" 0 | tee -a "$results"
    run memcached fits "$fits_win" 0 | tee -a "$results"
  fi
  if [[ " $datasets " == *" 4x "* ]]; then
    [[ -n "$baseline" ]] && run baseline 4x "$big_win" "$big_pmem" | tee -a "$results"
    run tiercache 4x "$big_win" "$big_pmem" | tee -a "$results"
    run memcached 4x "$big_win" "$mc_big_extra" | tee -a "$results"
  fi
  [[ -n "$lock" ]] && exec 9>&-
done

echo "=== medians and ratios (tiercache / memcached)"
for w in $datasets; do
  /usr/bin/python3 - "$results" "$w" <<'PY'
import statistics, sys
rows = [dict(kv.split("=", 1) for kv in line.split()[2:]) | {"w": line.split()[0], "s": line.split()[1]}
        for line in open(sys.argv[1]) if line.strip()]
w = sys.argv[2]
def med(server, key):
    return statistics.median(float(r[key]) for r in rows if r["w"] == w and r["s"] == server)
tc, mc = med("tiercache", "ops_per_sec"), med("memcached", "ops_per_sec")
print("%-5s throughput: tiercache %.0f ops/s, memcached %.0f ops/s, ratio %.3fx" % (w, tc, mc, tc / mc))
print("%-5s hit ratio:  tiercache %.4f, memcached %.4f" % (w, med("tiercache", "hit_ratio"), med("memcached", "hit_ratio")))
ct, cm = med("tiercache", "server_cpu_us_per_request"), med("memcached", "server_cpu_us_per_request")
print("%-5s server CPU per request: tiercache %.2f us, memcached %.2f us, ratio %.3fx" % (w, ct, cm, ct / cm))
print("%-5s   of which user / system (background threads): tiercache %.2f / %.2f (%.2f) us, memcached %.2f / %.2f us"
      % (w, med("tiercache", "user_us"), med("tiercache", "system_us"), med("tiercache", "background_us"),
         med("memcached", "user_us"), med("memcached", "system_us")))
print("%-5s client CPU per request (the client, not a server, bounds ops/s when it nears a core):"
      " with tiercache %.2f us, with memcached %.2f us" % (w, med("tiercache", "client_cpu_us"), med("memcached", "client_cpu_us")))
if any(r["s"] == "baseline" for r in rows):
    tb, cb = med("baseline", "ops_per_sec"), med("baseline", "server_cpu_us_per_request")
    print("%-5s against the baseline build: throughput %.3fx, server CPU per request %.2f against %.2f us, ratio %.3fx"
          % (w, tc / tb, ct, cb, ct / cb))
PY
done

if [[ "${STRACE:-0}" == 1 ]]; then
  [[ -n "$lock" ]] && { exec 9>"$lock"; flock -x 9; }
  for w in $datasets; do
    win=$fits_win pm=0
    [[ $w == 4x ]] && win=$big_win pm=$big_pmem
    syscalls tiercache "$w" "$win" "$pm"
    syscalls memcached "$w" "$win" "$([[ $w == 4x ]] && echo "$mc_big_extra" || echo 0)"
  done
fi
