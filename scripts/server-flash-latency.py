#!/usr/bin/python3
"""Does a flash read hold up the other clients of its worker?

Starts tiercache-server (one worker) with an 8 MiB DRAM tier over a flash
file, fills it so most keys live on flash only, then runs READERS clients
doing 16-key multigets of random keys (mostly flash reads) while one probe
client times `get` of a key kept in DRAM. Prints the probe's latency
percentiles and the readers' keys per second.

  scripts/server-flash-latency.py build/tools/tiercache-server [seconds] [flash dir]
"""
import json
import os
import random
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time

SERVER = sys.argv[1]
SECONDS = float(sys.argv[2]) if len(sys.argv) > 2 else 10
FLASH_DIR = sys.argv[3] if len(sys.argv) > 3 else "/var/tmp"
KEYS, VALUE, READERS = 40000, 4000, 4
SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def recv_until(s, end):
    data = b""
    while not data.endswith(end):
        chunk = s.recv(1 << 20)
        if not chunk:
            raise RuntimeError("closed")
        data += chunk
    return data


def main():
    tmp = tempfile.TemporaryDirectory(prefix="tiercache-flashlat-", dir=FLASH_DIR)
    with open(os.path.join(SOURCE, "configs", "server.json")) as f:
        cfg = json.load(f)
    cfg.update({"slab_size": "1MiB", "tiers": [{"name": "dram", "kind": "dram", "size": "8MiB"}],
                "allocation": {"min_size": 64, "max_size": "1MiB", "growth_factor": 1.25},
                "background_eviction": {"enabled": False}, "promotion": {"enabled": False},
                "flash": {"path": os.path.join(tmp.name, "flash.bin"), "size": "256MiB", "region_size": "1MiB",
                          "discard_contents": True}})
    cfg.pop("rebalance", None)
    cfg["server"].update({"threads": 1, "max_item_size": "256KiB"})
    path = os.path.join(tmp.name, "server.json")
    with open(path, "w") as f:
        json.dump(cfg, f)
    proc = subprocess.Popen([SERVER, "--config", path, "-p", "0"], stdout=subprocess.PIPE, text=True)
    port = int(re.search(r"port (\d+)", proc.stdout.readline()).group(1))
    try:
        s = socket.create_connection(("127.0.0.1", port))
        value = b"v" * VALUE
        for start in range(0, KEYS, 500):
            s.sendall(b"".join(b"set k%d 0 0 %d noreply\r\n" % (i, VALUE) + value + b"\r\n"
                               for i in range(start, min(KEYS, start + 500))))
        s.sendall(b"version\r\n")
        recv_until(s, b"\r\n")
        stop = threading.Event()
        done = [0] * READERS

        def reader(n):
            rng = random.Random(n)
            c = socket.create_connection(("127.0.0.1", port))
            while not stop.is_set():
                keys = [b"k%d" % rng.randrange(KEYS - 4000) for _ in range(16)]
                c.sendall(b"get " + b" ".join(keys) + b"\r\n")
                recv_until(c, b"END\r\n")
                done[n] += 16

        threads = [threading.Thread(target=reader, args=(n,)) for n in range(READERS)]
        for t in threads:
            t.start()
        s.sendall(b"set hot 0 0 5\r\nhello\r\n")
        recv_until(s, b"\r\n")
        lat = []
        t0 = time.time()
        while time.time() - t0 < SECONDS:
            a = time.perf_counter()
            s.sendall(b"get hot\r\n")
            recv_until(s, b"END\r\n")
            lat.append(time.perf_counter() - a)
            time.sleep(0.001)
        stop.set()
        for t in threads:
            t.join()
        elapsed = time.time() - t0
        s.sendall(b"stats\r\n")
        stats = recv_until(s, b"END\r\n")
        m = re.search(rb"STAT flash_async_reads (\d+)", stats)
        lat.sort()
        pct = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] * 1e6  # noqa: E731
        print("probe get (DRAM key) us: p50 %.0f p90 %.0f p99 %.0f max %.0f (%d probes)" %
              (pct(0.5), pct(0.9), pct(0.99), lat[-1] * 1e6, len(lat)))
        print("readers: %.0f keys/s over %.1f s; flash_async_reads %s" %
              (sum(done) / elapsed, elapsed, m.group(1).decode() if m else "n/a"))
    finally:
        proc.terminate()
        proc.wait(30)


if __name__ == "__main__":
    main()
