#!/usr/bin/env python3
"""Runs every standalone CacheLib cachebench config through tiercache-bench.

A standalone config is a JSON file whose top level holds both cache_config
and test_config (CacheLib's multi-instance lists and side files such as
pop.json are not). Each runs with --max-ops (a small operation cap) and a
time limit; the tally says how many ran and why the others were refused.

  scripts/cachebench-tally.py --bench build/tools/tiercache-bench \
      --configs /path/to/CacheLib/cachelib/cachebench/test_configs [--max-ops 200] [--list]

CacheLib's configs are read where they are, never copied into this project.
"""
import argparse
import collections
import json
import os
import re
import subprocess
import sys


def load(path):
    text = open(path, encoding="utf-8").read()
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r"(?m)^\s*//.*$", "", text)
    return json.loads(text)


def standalone(root):
    for d, _, files in os.walk(root):
        for f in sorted(files):
            if not f.endswith(".json"):
                continue
            p = os.path.join(d, f)
            try:
                doc = load(p)
            except (ValueError, UnicodeDecodeError):
                continue
            if isinstance(doc, dict) and "cache_config" in doc and "test_config" in doc:
                yield p


def reason(stderr):
    """The refused key and a short reason, from the bench's error line."""
    for line in stderr.splitlines():
        if line.startswith("tiercache-bench: warning"):
            continue
        m = re.match(r"tiercache-bench: ((?:cache|test)_config[\w.\[\]]*): (.*)", line)
        if m:
            key = re.sub(r"\[\d+\]", "", m.group(1))
            text = re.sub(r" \(in [^)]*\)$", "", m.group(2))
            return key, text
        if line.startswith("tiercache-bench:"):
            return "other", line[len("tiercache-bench: "):]
    return "other", stderr.strip().splitlines()[-1] if stderr.strip() else "no message"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", default="build/tools/tiercache-bench")
    ap.add_argument("--configs", required=True)
    ap.add_argument("--max-ops", type=int, default=200)
    ap.add_argument("--timeout", type=int, default=120)
    ap.add_argument("--list", action="store_true", help="print one line per config")
    a = ap.parse_args()

    ran, refused, failed = [], collections.defaultdict(list), []
    for p in sorted(standalone(a.configs)):
        rel = os.path.relpath(p, a.configs)
        cmd = [a.bench, "run", "--config", p, "--max-ops", str(a.max_ops), "--no-limits", "--no-progress"]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout)
            code, err = r.returncode, r.stderr
        except subprocess.TimeoutExpired:
            code, err = -1, "timed out after %d s" % a.timeout
        if code == 0:
            ran.append(rel)
            status = "run"
        elif code == 2:
            key, why = reason(err)
            refused[key].append((rel, why))
            status = "refused %s: %s" % (key, why)
        else:
            failed.append((rel, err.strip().splitlines()[-1] if err.strip() else "exit %d" % code))
            status = "FAILED (%d): %s" % (code, failed[-1][1])
        if a.list:
            print("%-75s %s" % (rel, status), flush=True)

    total = len(ran) + sum(len(v) for v in refused.values()) + len(failed)
    print("\n%d standalone configs: %d run, %d refused, %d failed\n" %
          (total, len(ran), total - len(ran) - len(failed), len(failed)))
    print("| refused by | configs | reason (first seen) |")
    print("|---|---|---|")
    for key, items in sorted(refused.items(), key=lambda kv: -len(kv[1])):
        print("| `%s` | %d | %s |" % (key, len(items), items[0][1].replace("|", "\\|")[:140]))
    for rel, why in failed:
        print("FAILED %s: %s" % (rel, why))
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.exit(main())
