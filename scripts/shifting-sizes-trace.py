#!/usr/bin/env python3
"""Writes a synthetic trace in libCacheSim's oracleGeneral format whose size
mix shifts over time, so that slabs handed out first-come go to the wrong
classes (docs/benchmarks.md, "Slab rebalancing by marginal hits").

Objects have one of ~100 sizes, log-spaced from 64 B to 16 KiB, and fall
into three bands by size (small < 512 B, mid < 4 KiB, large). The trace runs
in phases; in each, the active band gets `--active` of the requests and the
others share the rest; within a band, popularity is Zipf(alpha). The active
band goes small -> large -> mid -> small, so memory that followed the
first phase is wrong for the next.

Usage: shifting-sizes-trace.py OUT.oracleGeneral [--requests N] [--objects N] [--seed S]
"""
import argparse
import bisect
import itertools
import math
import random
import struct


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--requests", type=int, default=4_000_000)
    ap.add_argument("--objects", type=int, default=300_000)
    ap.add_argument("--alpha", type=float, default=0.9)
    ap.add_argument("--active", type=float, default=0.8)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = random.Random(a.seed)

    sizes = sorted({int(64 * (16384 / 64) ** (i / 99)) for i in range(100)})
    bands = [[], [], []]  # object ids
    size_of = {}
    for oid in range(1, a.objects + 1):
        s = sizes[int(rng.random() * len(sizes))]
        size_of[oid] = s
        bands[0 if s < 512 else 1 if s < 4096 else 2].append(oid)
    cum = []
    for b in bands:
        rng.shuffle(b)  # popularity rank independent of id
        w = [1.0 / math.pow(r + 1, a.alpha) for r in range(len(b))]
        cum.append(list(itertools.accumulate(w)))

    order = [0, 2, 1, 0]
    per_phase = a.requests // len(order)
    other = (1.0 - a.active) / 2
    with open(a.out, "wb") as f:
        buf = bytearray()
        for i in range(a.requests):
            active = order[min(i // per_phase, len(order) - 1)]
            u = rng.random()
            band = active if u < a.active else (active + 1 + (u - a.active >= other)) % 3
            c = cum[band]
            oid = bands[band][bisect.bisect_left(c, rng.random() * c[-1])]
            # {u32 time, u64 id, u32 size, i64 next access (unused here: -1)}
            buf += struct.pack("<IQIq", i // 1000, oid, size_of[oid], -1)
            if len(buf) >= 1 << 20:
                f.write(buf)
                buf.clear()
        f.write(buf)
    print(f"{a.requests} requests, {a.objects} objects, {len(sizes)} sizes, bands "
          f"{[len(b) for b in bands]} -> {a.out}")


if __name__ == "__main__":
    main()
