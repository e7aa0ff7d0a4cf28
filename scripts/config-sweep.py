#!/usr/bin/env python3
"""Random config sweep: builds random cache configs and runs tiercache-bench on
each, failing on anything a user would call a defect.

Each config draws the tiers (1-3, DRAM and emulated PMEM, maybe a persistent
pool file), the policy and its knobs, background eviction and promotion, pools,
slab rebalancing and a workload (threads, key space, sizes, mix, popularity).
A share of them (--cachebench-share) is drawn in CacheLib's cachebench format
instead, for what only that format's workload has: per-key TTLs, chained
items, updates and lone gets.
A run fails when the bench exits non-zero (1: a value read back did not match
what was written, or a run-time failure), its JSON says a value check failed,
or stderr holds a sanitizer report. A config with a persistent tier runs three
times on one pool file: a clean run, a run killed with SIGKILL part-way, and a
run that recovers the pool and reads it back (prepopulate off, so recovered
values are read and checked).

Point it at a sanitizer build to look for races and memory errors:

  scripts/config-sweep.py --bench build-tsan/tools/tiercache-bench -n 40 --seed 3

Every failing config is kept in --workdir with its stderr, and the line to
rerun it is printed. The configs are a function of --seed alone, so a sweep
can be repeated exactly.
"""

import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

SANITIZER_REPORT = re.compile(r"ERROR: (Address|Thread|Memory|Leak)Sanitizer|WARNING: ThreadSanitizer|runtime error:")


def mib(n):
    return f"{n}MiB"


def random_config(rng, pool_path, sanitized):
    slab_mib = rng.choice([1, 1, 2, 4])
    ntiers = rng.choice([1, 2, 2, 3])
    tiers = []
    persistent = False
    for t in range(ntiers):
        size = slab_mib * rng.randint(8, 40)
        if t == 0 or rng.random() < 0.3:
            tiers.append({"name": f"t{t}", "kind": "dram", "size": mib(size)})
            continue
        # A volatile pmem-file tier holds at least 16 MiB (kPmemMinSize).
        tier = {"name": f"t{t}", "kind": "pmem-file", "size": mib(max(size, 16 + slab_mib))}
        # At most one persistent tier, the last, as a deployment would have it.
        if t == ntiers - 1 and not persistent and rng.random() < 0.6:
            tier["path"] = pool_path
            tier["persistent"] = True
            persistent = True
        else:
            tier["path"] = "/dev/shm"
        tiers.append(tier)

    policy = rng.choice(["lru", "clock", "s3fifo", "wtinylfu"])
    eviction = {"policy": policy, "demote_rejected": rng.random() < 0.7}
    if policy == "lru":
        eviction["lru_insertion_point"] = rng.choice([0, 0, 1, 2])
        eviction["lru_refresh_ms"] = rng.choice([0, 10, 1000])
        eviction["lru_refresh_ratio"] = rng.choice([0, 0.1])
    elif policy == "s3fifo":
        eviction["s3fifo_small_percent"] = rng.choice([5, 10, 30])
    elif policy == "wtinylfu":
        eviction["wtinylfu_window_percent"] = rng.choice([1, 1, 5, 20])

    max_value = rng.choice([512, 2000, 8000])
    config = {
        "slab_size": mib(slab_mib),
        "tiers": tiers,
        "allocation": {"min_size": 64, "max_size": mib(slab_mib) if rng.random() < 0.3 else "64KiB",
                       "growth_factor": rng.choice([1.25, 1.5, 2.0])},
        "index": {"bucket_power": rng.choice([14, 17, 20]), "lock_power": rng.choice([4, 8, 10])},
        "eviction": eviction,
        "rebalance": {"enabled": rng.random() < 0.8,
                      "strategy": rng.choice(["free-slots", "marginal-hits"]),
                      "interval_ms": rng.choice([10, 100, 1000])},
        "demotion": {"enabled": rng.random() < 0.8},
        "background_eviction": {
            "enabled": rng.random() < 0.6,
            "threads": rng.choice([1, 1, 2]),
            "interval_ms": rng.choice([1, 5, 10]),
            "strategy": rng.choice(["free-threshold", "keep-free"]),
            "low_watermark": rng.choice([1, 2, 5]),
            "high_watermark": rng.choice([5, 10]),
            "min_batch": rng.choice([1, 8, 16]),
            "max_batch": rng.choice([32, 512]),
            "keep_free": rng.choice([0, 16, 64]),
            "yield_to_application": rng.random() < 0.5,
        },
        "promotion": {"enabled": rng.random() < 0.5, "background": rng.random() < 0.7,
                      "hits": rng.choice([1, 2, 3]), "queue_size": rng.choice([16, 4096]),
                      "max_batch": rng.choice([8, 256]), "interval_ms": rng.choice([1, 10])},
        "reaper": {"enabled": rng.random() < 0.7, "interval_ms": rng.choice([10, 1000])},
    }
    if persistent:
        config["persistence"] = {"durable_sets": rng.random() < 0.4, "demote_on_shutdown": rng.random() < 0.7}
    pools = 1
    if rng.random() < 0.25:
        pools = 2
        config["pools"] = [{"name": "a", "share": 0.5}, {"name": "b", "share": 0.5}]

    # Sanitized binaries run 5-20x slower: fewer operations, same shapes.
    ops = rng.choice([20_000, 60_000, 150_000]) // (4 if sanitized else 1)
    get_ratio = rng.choice([0.5, 0.7, 0.9])
    remove_ratio = rng.choice([0.0, 0.0, 0.05])
    popularity = rng.choice([
        {"distribution": "zipf", "alpha": rng.choice([0.7, 0.9, 1.1])},
        {"distribution": "normal", "stddev_fraction": 0.1},
        {"distribution": "uniform"},
    ])
    min_value = rng.choice([10, 100])
    workload = {
        "threads": rng.choice([1, 2, 3, 4]),
        "ops_per_thread": ops,
        "keys": rng.choice([2_000, 50_000, 300_000]),
        "key_size": [rng.choice([8, 16]), rng.choice([32, 64, 250])],
        "value_size": [min_value, max_value],
        "get_ratio": get_ratio,
        "set_ratio": round(1 - get_ratio - remove_ratio, 3),
        "remove_ratio": remove_ratio,
        "popularity": popularity,
        "lookaside": rng.random() < 0.8,
        "prepopulate": rng.random() < 0.5,
        "seed": rng.randint(1, 1 << 30),
        "progress_interval_ms": 0,
    }
    if pools == 2:
        workload["key_pools"] = [0.5, 0.5]
        workload["op_pools"] = [0.5, 0.5]
    config["workload"] = workload
    return config, persistent


def random_cachebench_config(rng, sanitized):
    """A CacheLib cachebench config: reaches what the native workload does not
    draw (per-key TTLs and the reaper, chained items, updates, lone gets)."""
    cache = {
        "cacheSizeMB": rng.choice([48, 96, 160]),
        "allocator": rng.choice(["LRU", "LRU2Q", "TinyLFU"]),
        "allocFactor": rng.choice([1.25, 1.5]),
        "maxAllocSize": rng.choice([65536, 1048576]),
        "htBucketPower": rng.choice([16, 20]),
    }
    if rng.random() < 0.7:
        cache["memoryTiers"] = [{"ratio": 1}, {"ratio": rng.choice([1, 2, 3]), "file": "/dev/shm/sweep-pmem"}]
    if rng.random() < 0.6:
        cache["backgroundEvictorIntervalMilSec"] = rng.choice([1, 10])
        cache["evictorThreads"] = rng.choice([1, 2])
        cache["maxEvictionBatch"] = rng.choice([40, 400])
        cache["minEvictionBatch"] = rng.choice([1, 10])
    if "memoryTiers" in cache and rng.random() < 0.5:
        cache["backgroundPromoterIntervalMilSec"] = rng.choice([1, 10])
    pools = rng.choice([1, 1, 2])
    if pools == 2:
        cache["numPools"] = 2
        cache["poolSizes"] = [0.5, 0.5]
    chained = rng.random() < 0.4
    test = {
        "numOps": rng.choice([20_000, 80_000]) // (4 if sanitized else 1),
        "numThreads": rng.choice([1, 2, 4]),
        "numKeys": rng.choice([5_000, 100_000]),
        "keySizeRange": [8, 16, 64],
        "keySizeRangeProbability": [0.5, 0.5],
        "valSizeRange": [16, 512, rng.choice([4096, 30000])],
        "valSizeRangeProbability": [0.8, 0.2],
        "getRatio": 0.6,
        "setRatio": 0.25,
        "delRatio": rng.choice([0, 0.05]),
        "loneGetRatio": rng.choice([0, 0.02]),
        "updateRatio": rng.choice([0, 0.05]),
        "enableLookaside": rng.random() < 0.7,
        "prepopulateCache": rng.random() < 0.5,
    }
    if rng.random() < 0.5:
        # Short TTLs, so items expire during the run (reaper, reads, eviction walks).
        test["ttlSecsRange"] = [0, 1, 3]
        test["ttlSecsRangeProbability"] = [0.5, 0.5]
        test["ttlRatio"] = rng.choice([0.3, 1.0])
    if chained:
        test["addChainedRatio"] = 0.05
        test["chainedItemLengthRange"] = [1, 8]
        test["chainedItemLengthRangeProbability"] = [1.0]
        test["chainedItemValSizeRange"] = [16, 2000]
        test["chainedItemValSizeRangeProbability"] = [1.0]
    if pools == 2:
        test["keyPoolDistribution"] = [0.5, 0.5]
        test["opPoolDistribution"] = [0.5, 0.5]
    return {"cache_config": cache, "test_config": test}


def run_bench(bench, config_path, timeout, kill_after=None):
    """Runs the bench; returns (rc, stdout, stderr). kill_after: SIGKILL after that many seconds."""
    cmd = [bench, "--config", config_path, "--json", "--no-progress", "--no-limits"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=kill_after if kill_after is not None else timeout)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL if kill_after is not None else signal.SIGABRT)
        out, err = proc.communicate()
        if kill_after is None:
            err += f"\n[config-sweep] timed out after {timeout} s\n"
            return -1, out, err
        return "killed", out, err
    return proc.returncode, out, err


def check(rc, out, err, expect_json=True):
    """Returns the failure's description, or None."""
    if SANITIZER_REPORT.search(err):
        return "sanitizer report"
    if rc == "killed":
        return None
    if rc == 2:
        # The generator drew a config the cache refuses: its error should name
        # the field (read it in the kept stderr); a sweep defect, not a cache one.
        return "config refused (exit 2)"
    if rc != 0:
        return f"exit status {rc}"
    if expect_json:
        try:
            report = json.loads(out)
        except json.JSONDecodeError:
            return "stdout is not one JSON document"
        failures = report.get("value_check_failures", 0)
        if failures:
            return f"{failures} value check failures"
    return None


def summary(out):
    """A run's operations, hit ratio and recovered items, for the progress line."""
    try:
        report = json.loads(out)
        cache = report["cache"]
        return (f", {report['ops']['total']} ops, hit ratio {cache['hit_ratio']:.3f}, "
                f"{cache['evictions']} evictions, {cache['demotions']} demotions, {cache['expired']} expired, "
                f"{cache['recovered_items']} recovered")
    except (json.JSONDecodeError, KeyError, TypeError):
        return ""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", default="build/tools/tiercache-bench")
    ap.add_argument("-n", "--count", type=int, default=20, help="configs to run")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workdir", help="where configs, pool files and failures go (default: a new dir in /dev/shm)")
    ap.add_argument("--timeout", type=int, default=600, help="seconds one run may take")
    ap.add_argument("--cachebench-share", type=float, default=0.3,
                    help="share of configs drawn in CacheLib's cachebench format (TTLs, chained items)")
    ap.add_argument("--sanitized", action="store_true",
                    help="fewer operations per run (implied when the bench path names asan or tsan)")
    args = ap.parse_args()

    sanitized = args.sanitized or bool(re.search(r"[at]san", args.bench))
    workdir = args.workdir or tempfile.mkdtemp(prefix="tiercache-sweep-", dir="/dev/shm")
    os.makedirs(workdir, exist_ok=True)
    rng = random.Random(args.seed)
    failed = []
    start = time.time()
    for i in range(args.count):
        pool_path = os.path.join(workdir, f"pool-{i}")
        if rng.random() < args.cachebench_share:
            config, persistent = random_cachebench_config(rng, sanitized), False
        else:
            config, persistent = random_config(rng, pool_path, sanitized)
        kill_after = rng.uniform(0.3, 3.0)
        path = os.path.join(workdir, f"config-{i}.json")
        with open(path, "w") as f:
            json.dump(config, f, indent=1)
        # The persistent sequence: clean run, killed run, recovering run that
        # reads what was recovered.
        steps = [("run", None)]
        if persistent:
            steps += [("kill -9", kill_after), ("recover", None)]
        verdict = None
        for step, kill in steps:
            if step == "recover":
                config["workload"]["prepopulate"] = False
                with open(path, "w") as f:
                    json.dump(config, f, indent=1)
            t0 = time.time()
            rc, out, err = run_bench(args.bench, path, args.timeout, kill)
            verdict = check(rc, out, err)
            print(f"[{i + 1}/{args.count}] config-{i} {step}: {verdict or 'ok'} ({time.time() - t0:.1f} s"
                  f"{summary(out)})", flush=True)
            if verdict:
                with open(os.path.join(workdir, f"config-{i}.{step.replace(' ', '')}.stderr"), "w") as f:
                    f.write(err)
                failed.append((i, step, verdict, path))
                break
        if persistent and not verdict and os.path.exists(pool_path):
            os.unlink(pool_path)
    print(f"{args.count} configs in {time.time() - start:.0f} s, {len(failed)} failed; workdir {workdir}")
    for i, step, verdict, path in failed:
        print(f"  config-{i} ({step}): {verdict}\n    rerun: {args.bench} --config {path} --json --no-limits")
    if not failed:
        shutil.rmtree(workdir, ignore_errors=True) if not args.workdir else None
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
