#!/usr/bin/env bash
# One config, several builds of tiercache-bench, single runs alternating.
#
#   scripts/bench-alternate.sh RUNS CONFIG BENCH...
#
# Each round runs `BENCH --config CONFIG --json --no-progress --no-limits`
# once per BENCH, in turn, so a slow spell of the host falls on every build.
# A line per run gives ops/s, hit ratio, get and set mean and p99.9 (us) and
# CPU us per operation; the last lines give each build's medians. Use it for
# two builds of one change; for two configs on one build use
# `tiercache-bench compare A B -n RUNS`, which also tests significance.
set -euo pipefail

[[ $# -ge 3 ]] || { sed -n '2,11p' "$0" >&2; exit 2; }
runs="$1"
config="$2"
shift 2
[[ "$runs" =~ ^[1-9][0-9]*$ ]] || { echo "bench-alternate: RUNS must be a positive number, not '$runs'" >&2; exit 2; }
[[ -f "$config" ]] || { echo "bench-alternate: no config file '$config'" >&2; exit 2; }
for b in "$@"; do
  [[ -x "$b" ]] || { echo "bench-alternate: $b is not an executable" >&2; exit 2; }
done

out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
for ((r = 1; r <= runs; r++)); do
  i=0
  for b in "$@"; do
    "$b" --config "$config" --json --no-progress --no-limits > "$out/r$r-b$i.json"
    i=$((i + 1))
  done
done

python3 - "$out" "$runs" "$@" <<'PY'
import json, statistics, sys
out, runs, bins = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
cols = ["ops/s", "hit ratio", "get mean", "get p99.9", "set mean", "set p99.9", "CPU us/op"]
rows = {i: [] for i in range(len(bins))}
print("run  build  " + "  ".join(f"{c:>10}" for c in cols))
for r in range(1, runs + 1):
    for i in range(len(bins)):
        j = json.load(open(f"{out}/r{r}-b{i}.json"))
        lat = j["latency_us"]
        row = [j["ops"]["per_second"], 100 * j["cache"]["hit_ratio"], lat["get"]["mean"], lat["get"]["p999"],
               lat["set"]["mean"], lat["set"]["p999"], j["cpu"]["per_op_us"]]
        rows[i].append(row)
        print(f"{r:3}  {i:5}  " + "  ".join(f"{v:10.2f}" for v in row))
for i, b in enumerate(bins):
    med = [statistics.median(col) for col in zip(*rows[i])]
    print(f"build {i} ({b}) medians: " + ", ".join(f"{c} {v:.2f}" for c, v in zip(cols, med)))
PY
