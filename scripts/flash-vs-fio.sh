#!/usr/bin/env bash
# The flash store's I/O path against fio on the same file (issue 34): 4 KiB
# random reads at each queue depth, sequential writes of the store's piece
# size, and the store's write amplification. Runs alternate (fio, ours, ...)
# and the medians and ratios ours/fio are printed.
#
#   scripts/flash-vs-fio.sh [ROUNDS]      (default 3)
#
# Per round: for each QD in QDS, fio randread then `tiercache-flash-bench
# read` (io_uring, 4 KiB, QD in flight); fio sequential write (bs = the
# store's 1 MiB piece, iodepth = pieces per region capped at WRITE_QD) then
# `tiercache-flash-bench write` (whole regions, as the store writes them);
# last, `tiercache-flash-bench store` (inserts through FlashStore until
# FILL x SIZE item bytes, then random lookups by QD threads for each QD:
# a lookup is one synchronous read, so QD threads keep QD reads in flight),
# which gives items/s, write amplification (device bytes / item bytes) and
# lookups/s, also compared with fio's IOPS at the same QD; for QD > 1 also
# one thread's lookupMany batches of QD keys (QD reads in one submission).
# The file is laid out (written whole) by fio first, so no read hits a hole.
# It lives on a real disk (DIR, default /var/tmp), not tmpfs: O_DIRECT and
# the device are the point.
# Env: DIR (/var/tmp), SIZE (2GiB; fio/bench size syntax, e.g. 512MiB),
# SECONDS_PER_RUN (10), QDS ("1 32"), WRITE_QD (32), REGION_SIZE (16MiB),
# VALUE_SIZE (1000), FILL (1.5), STORE_QD (the store's queue_depth, 32), FIO (/usr/bin/fio),
# FLASH_BENCH (build/tools/tiercache-flash-bench), LOCK (a file to hold with
# flock -x for each round, e.g. /tmp/tc-cpu.lock), KEEP=1 keeps the raw
# output directory.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
rounds="${1:-3}"
dir="${DIR:-/var/tmp}"
size="${SIZE:-2GiB}"
secs="${SECONDS_PER_RUN:-10}"
qds="${QDS:-1 32}"
write_qd="${WRITE_QD:-32}"
region="${REGION_SIZE:-16MiB}"
vsize="${VALUE_SIZE:-1000}"
fill="${FILL:-1.5}"
store_qd="${STORE_QD:-32}"
fio_bin="${FIO:-/usr/bin/fio}"
bench="${FLASH_BENCH:-$root/build/tools/tiercache-flash-bench}"
lock="${LOCK:-}"
for b in "$fio_bin" "$bench"; do
  [[ -x "$b" ]] || { echo "flash-vs-fio: $b missing (build tiercache-flash-bench; apt-get install fio)" >&2; exit 1; }
done
to_bytes() {
  local n="${1%%[!0-9]*}" u="${1##*[0-9]}"
  case "$u" in
    "") echo "$n" ;; K | KiB) echo $((n << 10)) ;; M | MiB) echo $((n << 20)) ;; G | GiB) echo $((n << 30)) ;;
    *) echo "flash-vs-fio: bad size $1" >&2; exit 2 ;;
  esac
}
size_b=$(to_bytes "$size")
region_b=$(to_bytes "$region")
piece=$((1 << 20))  # FlashStore::kWritePiece
pieces=$((region_b / piece))
wqd=$((pieces < write_qd ? pieces : write_qd))
((wqd >= 1)) || wqd=1
work=$(mktemp -d "$dir/tiercache-flash-vs-fio.XXXXXX")
file="$work/flash.dat"
cleanup() {
  rm -f "$file"
  if [[ "${KEEP:-0}" == 1 ]]; then echo "raw output kept in $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
fs=$(df -T "$work" | awk 'NR==2 {print $2 " on " $1}')
echo "file $file ($fs), size $size, ${secs}s per run, QDs: $qds, write: ${piece}-byte pieces, iodepth $wqd"

fio_common=(--filename="$file" --size="$size_b" --direct=1 --ioengine=io_uring --numjobs=1 --output-format=json)
echo "laying out the file with fio..."
"$fio_bin" --name=layout "${fio_common[@]}" --rw=write --bs=1M --iodepth=16 >"$work/layout.json"

# json_field FILE read|write iops|bw_bytes
json_field() {
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["jobs"][0][sys.argv[2]][sys.argv[3]])' "$@"
}
kv() { tr ' ' '\n' | sed -n "s/^$1=//p"; }

round() {
  local r=$1 qd out
  for qd in $qds; do
    "$fio_bin" --name=randread "${fio_common[@]}" --rw=randread --bs=4k --iodepth="$qd" \
      --runtime="$secs" --time_based >"$work/fio-read-$qd-$r.json"
    echo "fio_read_qd$qd $(json_field "$work/fio-read-$qd-$r.json" read iops)" >>"$work/results"
    out=$("$bench" read --file "$file" --size "$size_b" --seconds "$secs" --qd "$qd")
    echo "$out" >>"$work/raw"
    echo "ours_read_qd$qd $(kv iops <<<"$out")" >>"$work/results"
  done
  "$fio_bin" --name=seqwrite "${fio_common[@]}" --rw=write --bs="$piece" --iodepth="$wqd" \
    --runtime="$secs" --time_based >"$work/fio-write-$r.json"
  echo "fio_write_mb_s $(python3 -c "print($(json_field "$work/fio-write-$r.json" write bw_bytes) / 1e6)")" \
    >>"$work/results"
  out=$("$bench" write --file "$file" --size "$size_b" --seconds "$secs" --qd "$write_qd" --region-size "$region_b")
  echo "$out" >>"$work/raw"
  echo "ours_write_mb_s $(kv mb_s <<<"$out")" >>"$work/results"
  # Synchronous lookups by QD threads, then (QD > 1) one thread's lookupMany
  # of QD keys at a time: the batched path findMany and the server use.
  local runs=${qds// /,}
  for qd in $qds; do ((qd > 1)) && runs+=",1x$qd"; done
  out=$("$bench" store --file "$file" --size "$size_b" --seconds "$secs" --qd "$store_qd" \
    --region-size "$region_b" --value-size "$vsize" --fill "$fill" --threads "$runs")
  echo "$out" >>"$work/raw"
  {
    echo "store_items_s $(head -1 <<<"$out" | kv items_s)"
    echo "store_device_mb_s $(head -1 <<<"$out" | kv device_mb_s)"
    echo "store_write_amp $(head -1 <<<"$out" | kv write_amp)"
    for qd in $qds; do
      echo "store_lookups_qd$qd $(grep "threads=$qd batch=1 " <<<"$out" | kv lookups_s)"
      ((qd > 1)) && echo "store_batched_qd$qd $(grep "threads=1 batch=$qd " <<<"$out" | kv lookups_s)"
    done
  } >>"$work/results"
}

: >"$work/results"
for ((r = 1; r <= rounds; r++)); do
  echo "round $r/$rounds..."
  if [[ -n "$lock" ]]; then exec 9>"$lock"; flock -x 9; fi
  round "$r"
  if [[ -n "$lock" ]]; then exec 9>&-; fi
done

python3 - "$work/results" "$qds" "$vsize" <<'PY'
import statistics, sys
vals = {}
for line in open(sys.argv[1]):
    k, v = line.split()
    vals.setdefault(k, []).append(float(v))
med = {k: statistics.median(v) for k, v in vals.items()}
n = len(next(iter(vals.values())))
print(f"medians of {n} alternating rounds")
print(f"{'test':<28}{'fio':>14}{'ours':>14}{'ours/fio':>10}")
for qd in sys.argv[2].split():
    f, o = med[f"fio_read_qd{qd}"], med[f"ours_read_qd{qd}"]
    print(f"{'4k randread IOPS, QD ' + qd:<28}{f:>14.0f}{o:>14.0f}{o / f:>9.2f}x")
f, o = med["fio_write_mb_s"], med["ours_write_mb_s"]
print(f"{'seq write MB/s':<28}{f:>14.1f}{o:>14.1f}{o / f:>9.2f}x")
for qd in sys.argv[2].split():
    f, o = med[f"fio_read_qd{qd}"], med[f"store_lookups_qd{qd}"]
    print(f"{'store lookups/s, ' + qd + ' thr':<28}{f:>14.0f}{o:>14.0f}{o / f:>9.2f}x")
    if f"store_batched_qd{qd}" in med:
        o = med[f"store_batched_qd{qd}"]
        print(f"{'store lookupMany x' + qd + ', 1 thr':<28}{f:>14.0f}{o:>14.0f}{o / f:>9.2f}x")
f, o = med["fio_write_mb_s"], med["store_device_mb_s"]
print(f"{'store fill, device MB/s':<28}{f:>14.1f}{o:>14.1f}{o / f:>9.2f}x")
print(f"store fill ({sys.argv[3]}-byte values): {med['store_items_s']:.0f} inserts/s, "
      f"write amplification {med['store_write_amp']:.3f} (device bytes / key+value bytes)")
PY
