#!/usr/bin/env python3
"""Print tiercache/baseline throughput ratios from tiercache-microbench JSON.

    build/bench/tiercache-microbench --benchmark_out=micro.json --benchmark_out_format=json
    python3 bench/ratios.py micro.json [--markdown]

Benchmarks are named BM_<Op>/<impl>/real_time/threads:<n>; each tiercache
figure is divided by the baseline figure of the same op and thread count
from the same file (so from the same run). With repetitions, the median
aggregate is used when present.

A second table shows BM_FindHit per implementation: ops/s at 1 and 2
threads, the 1 -> 2 thread scaling, and each figure at 2 threads over the
two plain maps' (plain-map-read: unlocked, read-only; plain-map-shared-lock:
1024 maps under shared locks) from the same file.
"""
import json
import re
import sys

NAME = re.compile(r"^BM_(?P<op>[^/]+)/(?P<impl>[^/]+)(?P<rest>(/[^/]+)*?)/threads:(?P<threads>\d+)(_(?P<agg>\w+))?$")


def load(path):
    with open(path) as f:
        doc = json.load(f)
    rows = {}
    for b in doc.get("benchmarks", []):
        m = NAME.match(b.get("name", ""))
        if not m or b.get("error_occurred"):
            continue
        agg = b.get("aggregate_name") or m.group("agg")
        if b.get("run_type") == "aggregate" and agg != "median":
            continue
        key = (m.group("op"), int(m.group("threads")), m.group("impl"))
        # A median aggregate wins over single iterations of the same name.
        if key in rows and b.get("run_type") != "aggregate":
            continue
        rows[key] = b.get("items_per_second")
    return doc.get("context", {}), rows


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(argv) >= 2 else 2
    markdown = "--markdown" in argv[2:]
    context, rows = load(argv[1])
    ops = sorted({(op, t) for (op, t, _) in rows}, key=lambda k: (order(k[0]), k[1]))
    header = ["operation", "threads", "tiercache ops/s", "baseline ops/s", "tiercache / baseline"]
    lines = []
    for op, t in ops:
        tc, base = rows.get((op, t, "tiercache")), rows.get((op, t, "baseline"))
        ratio = f"{tc / base:.2f}x" if tc and base else "n/a"
        lines.append([op, str(t), fmt(tc), fmt(base), ratio])
    emit(header, lines, markdown)
    find_hit_table(rows, markdown)
    if context:
        print(f"\n{context.get('num_cpus', '?')} CPUs at {context.get('mhz_per_cpu', '?')} MHz, "
              f"library build {context.get('library_build_type', '?')}, run {context.get('date', '?')}")
    return 0


PLAIN = ["plain-map-read", "plain-map-shared-lock"]


def find_hit_table(rows, markdown):
    impls = sorted({i for (op, _, i) in rows if op == "FindHit"}, key=lambda i: (i in PLAIN, i))
    if not impls:
        return
    header = ["FindHit impl", "1 thread ops/s", "2 threads ops/s", "2t / 1t"] + [f"2t / {p} 2t" for p in PLAIN]
    lines = []
    for impl in impls:
        one, two = rows.get(("FindHit", 1, impl)), rows.get(("FindHit", 2, impl))
        line = [impl, fmt(one), fmt(two), f"{two / one:.2f}x" if one and two else "n/a"]
        for p in PLAIN:
            base = rows.get(("FindHit", 2, p))
            line.append(f"{two / base:.2f}" if two and base else "n/a")
        lines.append(line)
    print()
    emit(header, lines, markdown)


def emit(header, lines, markdown):
    if markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "|".join("---" for _ in header) + "|")
        for l in lines:
            print("| " + " | ".join(l) + " |")
    else:
        widths = [max(len(r[i]) for r in [header] + lines) for i in range(len(header))]
        for r in [header] + lines:
            print("  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))))


def order(op):
    known = ["FindHit", "FindMiss", "Set", "AllocateInsert"]
    return known.index(op) if op in known else len(known)


def fmt(v):
    return f"{v:,.0f}" if v else "n/a"


if __name__ == "__main__":
    sys.exit(main(sys.argv))
