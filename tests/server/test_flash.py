"""tiercache-server over a flash store: gets that miss memory are read from
flash without blocking the worker (server/pending_reads.h). A small DRAM
tier over a real flash file (under /var/tmp, or TIERCACHE_FLASH_TEST_DIR);
the first keys written end up on flash only.

Run by ctest with Debian's /usr/bin/python3; TIERCACHE_SERVER names the binary.
"""
import os
import random
import signal
import socket
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from server_harness import Server, base_config, recv_until, request, wait_for  # noqa: E402

FLASH_DIR = os.environ.get("TIERCACHE_FLASH_TEST_DIR") or "/var/tmp"
VALUE_SIZE = 2000
KEYS = 12000  # 24 MB of values over 8 MiB of DRAM: the first keys are on flash only
FLASH_KEYS = 4000  # the first ones, surely evicted to flash


def value_of(key):
    return random.Random(key).randbytes(VALUE_SIZE)  # binary, \r\n included


def key(i):
    return b"fk%d" % i


def flash_config(tmpdir, threads=2):
    cfg = base_config(threads=threads, max_item_size="256KiB")
    cfg["slab_size"] = "1MiB"
    cfg["tiers"] = [{"name": "dram", "kind": "dram", "size": "8MiB"}]
    cfg["allocation"] = {"min_size": 64, "max_size": "1MiB", "growth_factor": 1.25}
    cfg["background_eviction"] = {"enabled": False}
    cfg["promotion"] = {"enabled": False}
    del cfg["rebalance"]
    cfg["flash"] = {"path": os.path.join(tmpdir, "flash.bin"), "size": "96MiB", "region_size": "1MiB",
                    "discard_contents": True}
    return cfg


def stat(sock, name):
    reply = request(sock, b"stats\r\n", b"END\r\n")
    for line in reply.split(b"\r\n"):
        parts = line.split(b" ")
        if len(parts) == 3 and parts[1] == name:
            return int(parts[2])
    raise AssertionError("no STAT %r in %r" % (name, reply[:500]))


def recv_exact(sock, n, timeout=30):
    sock.settimeout(timeout)
    got = bytearray()
    while len(got) < n:
        chunk = sock.recv(n - len(got))
        if not chunk:
            break
        got += chunk
    return bytes(got)


def expect_get(keys):
    return b"".join(b"VALUE %s 0 %d\r\n" % (k, VALUE_SIZE) + value_of(k) + b"\r\n" for k in keys) + b"END\r\n"


class FlashServer(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="tiercache-srvflash-", dir=FLASH_DIR)
        self.server = Server(config=flash_config(self.tmp.name))
        with self.server.connect() as s:
            for start in range(0, KEYS, 500):
                s.sendall(b"".join(b"set %s 0 0 %d noreply\r\n" % (key(i), VALUE_SIZE) + value_of(key(i)) + b"\r\n"
                                   for i in range(start, min(KEYS, start + 500))))
            # Generous: a sanitizer build on a loaded machine stores 24 MB slowly.
            self.assertTrue(request(s, b"version\r\n", timeout=120).startswith(b"VERSION "))
            self.dram_key = b"dram"
            self.set_dram_key(s)

    def set_dram_key(self, s):
        """(Re)writes the key in DRAM (slab moves may have dropped it since)."""
        k = self.dram_key
        self.assertEqual(request(s, b"set %s 0 0 %d\r\n" % (k, VALUE_SIZE) + value_of(k) + b"\r\n"), b"STORED\r\n")

    def tearDown(self):
        self.server.__exit__(None, None, None)
        self.tmp.cleanup()

    def test_a_get_of_a_key_on_flash_returns_it_byte_for_byte_through_the_async_path(self):
        with self.server.connect() as s:
            before = stat(s, b"flash_async_reads")
            k = key(7)
            self.assertTrue(request(s, b"get %s\r\n" % k, b"END\r\n") == expect_get([k]))
            self.assertEqual(stat(s, b"flash_async_reads"), before + 1)
            # Promoted to DRAM by the read: the next get is a memory hit.
            self.assertTrue(request(s, b"gets %s\r\n" % k, b"END\r\n").startswith(b"VALUE %s 0 %d " % (k, VALUE_SIZE)))
            self.assertEqual(stat(s, b"flash_async_reads"), before + 1)
            # mg parks the same way.
            k = key(8)
            self.assertTrue(request(s, b"mg %s v k s\r\n" % k, b"\r\n" + value_of(k) + b"\r\n") ==
                            b"VA %d k%s s%d\r\n" % (VALUE_SIZE, k, VALUE_SIZE) + value_of(k) + b"\r\n")
            self.assertEqual(stat(s, b"flash_async_reads"), before + 2)
            self.assertEqual(request(s, b"mg fk-absent v\r\n"), b"EN\r\n")

    def test_read_modify_writes_see_keys_that_live_only_on_flash(self):
        with self.server.connect() as s:
            # add of a key on flash: it exists, so NOT_STORED, value unchanged.
            self.assertEqual(request(s, b"add %s 0 0 1\r\nx\r\n" % key(20)), b"NOT_STORED\r\n")
            self.assertTrue(request(s, b"get %s\r\n" % key(20), b"END\r\n") == expect_get([key(20)]))
            # replace and append find it.
            self.assertEqual(request(s, b"replace %s 0 0 3\r\nnew\r\n" % key(21)), b"STORED\r\n")
            self.assertEqual(request(s, b"get %s\r\n" % key(21), b"END\r\n"), b"VALUE %s 0 3\r\nnew\r\nEND\r\n" % key(21))
            self.assertEqual(request(s, b"append %s 0 0 2\r\n++\r\n" % key(22)), b"STORED\r\n")
            got = request(s, b"get %s\r\n" % key(22), b"END\r\n")
            self.assertTrue(got == b"VALUE %s 0 %d\r\n" % (key(22), VALUE_SIZE + 2) + value_of(key(22)) + b"++\r\nEND\r\n")
            self.assertEqual(request(s, b"touch %s 100\r\n" % key(23)), b"TOUCHED\r\n")

    def test_pipelined_requests_after_a_flash_read_answer_in_order(self):
        with self.server.connect() as s:
            fk, dk = key(11), self.dram_key
            want = expect_get([fk]) + expect_get([dk]) + b"MN\r\n"
            got = request(s, b"get %s\r\nget %s\r\nmn\r\n" % (fk, dk), b"MN\r\n")
            self.assertTrue(got == want, got[:200])
            # mg on flash, then a DRAM mg, a set and a get of what it set, in one write.
            fk = key(12)
            got = request(s, b"mg %s v\r\nmg %s s\r\nset new 0 0 2\r\nhi\r\nget new\r\nmn\r\n" % (fk, dk), b"MN\r\n")
            want = (b"VA %d\r\n" % VALUE_SIZE + value_of(fk) + b"\r\n" + b"HD s%d\r\n" % VALUE_SIZE + b"STORED\r\n" +
                    b"VALUE new 0 2\r\nhi\r\nEND\r\n" + b"MN\r\n")
            self.assertTrue(got == want, got[:200])
            # A multiget across batches of 16, keys on flash and in DRAM mixed, in the order asked.
            self.set_dram_key(s)
            keys = [key(i) for i in range(100, 140)] + [dk] + [key(i) for i in range(140, 150)]
            before = stat(s, b"flash_async_reads")
            s.sendall(b"get " + b" ".join(keys) + b" absent\r\nversion\r\n")
            want = expect_get(keys)
            got = recv_exact(s, len(want))
            self.assertTrue(got == want, got[:200])
            self.assertTrue(recv_until(s, b"\r\n").startswith(b"VERSION "))
            self.assertGreaterEqual(stat(s, b"flash_async_reads") - before, 3)

    def test_many_connections_read_flash_concurrently(self):
        errors = []
        before = 0
        with self.server.connect() as s:
            before = stat(s, b"flash_async_reads")

        def client(n):
            try:
                with self.server.connect() as c:
                    mine = [key(i) for i in range(n * 100, n * 100 + 100)]
                    for i in range(0, len(mine), 5):
                        batch = mine[i:i + 5]
                        # One single get and one multiget per round, pipelined.
                        c.sendall(b"get %s\r\nget %s\r\n" % (batch[0], b" ".join(batch[1:])))
                        want = expect_get(batch[:1]) + expect_get(batch[1:])
                        got = recv_exact(c, len(want))
                        if got != want:
                            errors.append("client %d: bad reply for %r" % (n, batch))
                            return
            except Exception as e:  # noqa: BLE001
                errors.append("client %d: %r" % (n, e))

        threads = [threading.Thread(target=client, args=(n,)) for n in range(32)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        self.assertEqual(errors, [])
        with self.server.connect() as s:
            self.assertGreater(stat(s, b"flash_async_reads") - before, 32)

    def test_clients_closing_while_their_reads_are_in_flight(self):
        for n in range(60):
            c = self.server.connect()
            keys = [key(i) for i in range(2000 + n * 30, 2000 + n * 30 + 30)]
            c.sendall(b"get " + b" ".join(keys) + b"\r\nmg %s v\r\n" % key(3900 + n))
            if n % 2:
                c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")  # RST
            c.close()
        with self.server.connect() as s:
            self.assertTrue(wait_for(lambda: stat(s, b"curr_connections") == 1, timeout=20))
            # Still serving, flash and DRAM.
            k = key(9)
            self.assertTrue(request(s, b"get %s %s\r\n" % (k, self.dram_key), b"END\r\n") ==
                            expect_get([k, self.dram_key]))

    def test_stopping_with_reads_in_flight_exits_cleanly(self):
        socks = []
        for n in range(8):
            c = self.server.connect()
            c.sendall(b"get " + b" ".join(key(i) for i in range(3000 + n * 100, 3000 + n * 100 + 100)) + b"\r\n")
            socks.append(c)
        self.server.proc.send_signal(signal.SIGTERM)
        self.assertEqual(self.server.proc.wait(30), 0)
        for c in socks:
            c.close()


class MemoryOnly(unittest.TestCase):
    def test_without_flash_no_read_goes_async(self):
        with Server(threads=1) as server:
            with server.connect() as s:
                self.assertEqual(request(s, b"set a 0 0 1\r\nx\r\n"), b"STORED\r\n")
                self.assertEqual(request(s, b"get a b\r\nmg a v\r\n", b"VA 1\r\nx\r\n"),
                                 b"VALUE a 0 1\r\nx\r\nEND\r\nVA 1\r\nx\r\n")
                self.assertEqual(stat(s, b"flash_async_reads"), 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
