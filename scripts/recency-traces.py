#!/usr/bin/env python3
"""Synthetic request traces where recency, not long-run frequency, decides
what will be hit next: the traffic a fixed small W-TinyLFU window handles
worst (docs/benchmarks.md, "An adaptive window"). Unit-size gets in
tiercache-bench's CSV trace format (key,size,op), deterministic per kind.

  slide    Zipf 0.8 over a window of 50,000 keys that slides one key every
           4 requests: yesterday's hot keys fade, new ones take their place.
  recency  60% of requests re-reference a recent request (exponentially
           distributed distance, mean 5,000), 40% draw from 5M keys.
  phases   Zipf 0.9 over 100,000 keys, a fresh key set every 400,000
           requests (a workload change).
  scans    the opposite case, for contrast: Zipf 0.9 over 100,000 keys
           (frequency decides) with a scan of 60,000 never-repeated keys
           every 1,000,000 requests.

usage: scripts/recency-traces.py KIND REQUESTS OUT.csv [SIZE]
SIZE is the value size of every request (default 60: with keys of up to 12
bytes, an item fits the acceptance configs' 128-byte class).
"""
import bisect
import random
import sys


def zipf_cdf(n, alpha):
    weights = [1 / (i + 1) ** alpha for i in range(n)]
    total = sum(weights)
    cdf, acc = [], 0.0
    for w in weights:
        acc += w / total
        cdf.append(acc)
    return cdf


def main():
    if len(sys.argv) not in (4, 5) or sys.argv[1] not in ("slide", "recency", "phases", "scans"):
        sys.exit(__doc__)
    kind, n, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    size = int(sys.argv[4]) if len(sys.argv) == 5 else 60
    rng = random.Random(3 if kind == "scans" else 1)
    draw = lambda cdf: bisect.bisect_left(cdf, rng.random())
    with open(path, "w") as out:
        if kind == "slide":
            cdf = zipf_cdf(50_000, 0.8)
            for i in range(n):
                out.write(f"k{draw(cdf) + i // 4},{size},get\n")
        elif kind == "recency":
            recent = []
            for _ in range(n):
                if recent and rng.random() < 0.6:
                    k = recent[-1 - int(rng.expovariate(1 / 5000)) % len(recent)]
                else:
                    k = rng.randrange(5_000_000)
                recent.append(k)
                if len(recent) > 200_000:
                    recent = recent[-100_000:]
                out.write(f"k{k},{size},get\n")
        elif kind == "scans":
            cdf = zipf_cdf(100_000, 0.9)
            scan = 0
            for i in range(n):
                if i % 1_000_000 == 500_000:
                    out.write("".join(f"s{scan}_{j},{size},get\n" for j in range(60_000)))
                    scan += 1
                out.write(f"k{draw(cdf)},{size},get\n")
        else:
            cdf = zipf_cdf(100_000, 0.9)
            perm = list(range(100_000))
            for i in range(n):
                if i % 400_000 == 0:
                    rng.shuffle(perm)
                out.write(f"p{i // 400_000}k{perm[draw(cdf)]},{size},get\n")


if __name__ == "__main__":
    main()
