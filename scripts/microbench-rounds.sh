#!/usr/bin/env bash
# Micro-benchmark rounds: tiercache against the baseline of the same process,
# and one build against another when several binaries are given.
#
#   scripts/microbench-rounds.sh OP ROUNDS [BIN...]
#
# OP is a benchmark of tiercache-microbench without its BM_ prefix (Set,
# AllocateInsert, FindHit, FindMiss). Each round runs every BIN in turn (the
# builds alternate, so a slow spell of the host falls on all of them), one
# process per BIN: 12 repetitions of 0.15 s of each implementation, randomly
# interleaved, 1 thread. A line per round and binary gives both medians (real
# ns per operation) and the ratio baseline / tiercache (above 1: tiercache is
# faster); the last lines give each binary's median ratio over the rounds.
# One round says little on a shared host: the baseline's own median moves by
# a third between processes (its heap nodes are not on huge pages).
# BIN defaults to build/bench/tiercache-microbench. REPS and MIN_TIME change
# the repetitions (12) and the time per repetition (0.15 s); THREADS (1 or
# 2) the thread count; VERSUS the other implementation (baseline; FindHit
# also has plain-map-read and plain-map-shared-lock).
#   THREADS=2 VERSUS=plain-map-read scripts/microbench-rounds.sh FindHit 10 OLD NEW
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
[[ $# -ge 2 ]] || { sed -n '2,22p' "$0" >&2; exit 2; }
threads="${THREADS:-1}"
versus="${VERSUS:-baseline}"
[[ "$threads" =~ ^[12]$ ]] || { echo "microbench-rounds: THREADS must be 1 or 2, not '$threads'" >&2; exit 2; }
[[ "$versus" =~ ^[a-z-]+$ ]] || { echo "microbench-rounds: VERSUS must name an implementation, not '$versus'" >&2; exit 2; }
op="$1"
rounds="$2"
shift 2
bins=("$@")
[[ ${#bins[@]} -gt 0 ]] || bins=("$root/build/bench/tiercache-microbench")
for b in "${bins[@]}"; do
  [[ -x "$b" ]] || { echo "microbench-rounds: $b is not an executable" >&2; exit 2; }
done
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "microbench-rounds: ROUNDS must be a positive number, not '$rounds'" >&2; exit 2; }

out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
for ((r = 1; r <= rounds; r++)); do
  i=0
  for b in "${bins[@]}"; do
    "$b" --benchmark_filter="^BM_${op}/(tiercache|${versus})/.*threads:${threads}\$" \
      --benchmark_repetitions="${REPS:-12}" --benchmark_min_time="${MIN_TIME:-0.15}" \
      --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true \
      --benchmark_format=json > "$out/r$r-b$i.json" 2> "$out/r$r-b$i.err"
    i=$((i + 1))
  done
done

python3 - "$out" "$rounds" "$op" "$threads" "$versus" "${bins[@]}" <<'PY'
import json, statistics, sys
out, rounds, op, threads, versus, bins = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6:]
ratios = {i: [] for i in range(len(bins))}
print(f"round  binary  tiercache_ns  {versus}_ns  {versus}/tiercache   (BM_{op}, {threads} thread(s))")
for r in range(1, rounds + 1):
    for i, b in enumerate(bins):
        medians = {}
        for bm in json.load(open(f"{out}/r{r}-b{i}.json"))["benchmarks"]:
            if bm.get("aggregate_name") != "median":
                continue
            impl = bm["run_name"].split("/")[1]
            medians[impl] = bm["real_time"]
        if "tiercache" not in medians or versus not in medians:
            sys.exit(f"microbench-rounds: {b} printed no BM_{op} medians for both implementations")
        ratio = medians[versus] / medians["tiercache"]
        ratios[i].append(ratio)
        print(f"{r:5}  {i:6}  {medians['tiercache']:12.1f}  {medians[versus]:11.1f}  {ratio:18.2f}")
for i, b in enumerate(bins):
    rs = ratios[i]
    print(f"binary {i} ({b}): median {statistics.median(rs):.2f}, range {min(rs):.2f}-{max(rs):.2f} over {len(rs)} rounds")
PY
