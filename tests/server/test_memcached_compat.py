"""tiercache-server as memcached's own tools and tests see it.

libmemcached's memccapable (-a: the ASCII protocol checks) and memcaslap (a
load generator whose keys hold control bytes) from Debian's
libmemcached-tools run against the real server; raw sockets then cover what
pymemcache's integration suite and memcached's t/*.t files found (those two
suites are not packaged, see scripts/memcached-t-suite.sh): memcached's
noreply and token-count rules, its key bytes, TTLs that incr, append and
touch must keep, touch keeping the CAS token, a failed set removing the old
value, flush_all ordering and durability, huge exptimes, long multigets.
The key dumps (lru_crawler metadump / mgdump) are checked raw and through
memcached-tool (Debian's memcached package ships it).
"""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from server_harness import Server, base_config, recv_until, request  # noqa: E402

MAX_ITEM = 1 << 20


def stat(server, name):
    with server.connect() as s:
        reply = request(s, b"stats\r\n", b"END\r\n").decode()
    m = re.search(r"STAT %s (\d+)" % name, reply)
    return int(m.group(1))


def quiet(sock, wait=0.3):
    """Whatever arrives within `wait` seconds (b"" when nothing does)."""
    sock.settimeout(wait)
    data = b""
    try:
        while True:
            chunk = sock.recv(1 << 16)
            if not chunk:
                break
            data += chunk
    except socket.timeout:
        pass
    return data


@unittest.skipUnless(shutil.which("memccapable") and shutil.which("memcaslap"), "libmemcached-tools not installed")
class LibmemcachedTestTools(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server(threads=2)

    @classmethod
    def tearDownClass(cls):
        cls.server.__exit__()

    def assert_memccapable_all_pass(self, mode):
        r = subprocess.run(["memccapable", "-h", "127.0.0.1", "-p", str(self.server.port), mode],
                           capture_output=True, timeout=120)
        out = r.stdout.decode(errors="replace")
        failed = [line for line in out.splitlines() if "[FAIL]" in line or "[skip]" in line]
        self.assertEqual(failed, [], out)
        self.assertEqual(len(re.findall(r"\[pass\]", out)), 27, out)
        self.assertIn("All tests passed", out)
        self.assertEqual(r.returncode, 0, out)

    def test_memccapable_ascii_all_pass(self):
        self.assert_memccapable_all_pass("-a")

    def test_memcaslap_runs_clean(self):
        before = stat(self.server, "protocol_errors")
        r = subprocess.run(["memcaslap", "-s", "127.0.0.1:%d" % self.server.port, "-t", "3s", "-c", "8", "-T", "1"],
                           capture_output=True, timeout=60)
        out = (r.stdout + r.stderr).decode(errors="replace")
        self.assertEqual(r.returncode, 0, out)
        sets = int(re.search(r"cmd_set: (\d+)", out).group(1))
        gets = int(re.search(r"cmd_get: (\d+)", out).group(1))
        self.assertGreater(sets, 100, out)
        self.assertGreater(gets, 100, out)
        self.assertEqual(int(re.search(r"get_misses: (\d+)", out).group(1)), 0, out)
        self.assertNotRegex(out.lower(), r"error|unexpected|fail", out)
        # Its keys hold control bytes: every one of its sets was once refused.
        self.assertEqual(stat(self.server, "protocol_errors"), before)

    def test_memccapable_binary_all_pass(self):
        # libmemcached's binary protocol checks: every opcode it knows, quiet
        # variants, CAS, incr/decr with initial values, stat, quit.
        self.assert_memccapable_all_pass("-b")

    def test_binary_tools_copy_and_read_back(self):
        data = bytes(range(256)) * 100 + b"\r\nEND\r\n"
        path = os.path.join(self.server.tmp.name, "binary-value")
        with open(path, "wb") as f:
            f.write(data)
        servers = "--servers=127.0.0.1:%d" % self.server.port
        r = subprocess.run(["memccp", "--binary", servers, path], capture_output=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        r = subprocess.run(["memccat", "--binary", servers, "binary-value"], capture_output=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout[:len(data)], data)
        # The text protocol sees the same item.
        with self.server.connect() as s:
            got = request(s, b"get binary-value\r\n", b"END\r\n")
            self.assertTrue(got.startswith(b"VALUE binary-value 0 %d\r\n" % len(data)), got[:80])

    def test_binary_client_gets_an_error_not_a_timeout_with_the_protocol_off(self):
        # -B ascii: libmemcached's --binary tools once waited out their 4 s
        # poll for a reply that never came (the header has no newline); the
        # "not supported" response comes at once, and libmemcached reports an
        # unknown status as a read failure.
        with Server(threads=1, args=["-B", "ascii"]) as server:
            path = os.path.join(server.tmp.name, "binary-value")
            with open(path, "wb") as f:
                f.write(b"hello\n")
            r = subprocess.run(["memccp", "--binary", "--servers=127.0.0.1:%d" % server.port, path],
                               capture_output=True, timeout=60)
            err = (r.stdout + r.stderr).decode(errors="replace")
            self.assertNotEqual(r.returncode, 0, err)
            self.assertIn("UNKNOWN READ FAILURE", err)
            self.assertNotIn("TIMEOUT", err)


def binary(opcode, opaque=0, extras=b"", key=b"", value=b"", cas=0):
    import struct
    body = extras + key + value
    return struct.pack(">BBHBBHIIQ", 0x80, opcode, len(key), len(extras), 0, 0, len(body), opaque, cas) + body


def read_binary(sock, count=1, timeout=10, stats=False):
    """count binary responses: (opcode, status, opaque, cas, extras, key, value) each;
    with stats, up to the empty one that ends a stat's list."""
    import struct
    out, data = [], b""
    sock.settimeout(timeout)
    while (len(out) < count) if not stats else (not out or out[-1][5] != b""):
        while len(data) < 24 or len(data) < 24 + struct.unpack(">I", data[8:12])[0]:
            chunk = sock.recv(1 << 20)
            if not chunk:
                raise AssertionError("closed after %d responses" % len(out))
            data += chunk
        magic, op, keylen, extlen, _, status, body, opaque, cas = struct.unpack(">BBHBBHIIQ", data[:24])
        assert magic == 0x81, data[:24]
        b = data[24:24 + body]
        out.append((op, status, opaque, cas, b[:extlen], b[extlen:extlen + keylen], b[extlen + keylen:]))
        data = data[24 + body:]
    assert data == b"", data
    return out


class BinaryProtocol(unittest.TestCase):
    """memcached's binary protocol on raw sockets: what clients rely on, byte for byte."""

    @classmethod
    def setUpClass(cls):
        cls.server = Server(threads=2)

    @classmethod
    def tearDownClass(cls):
        cls.server.__exit__()

    def test_quiet_requests_answer_only_hits_and_errors_before_the_noop(self):
        import struct
        value = b"v\r\nget x\r\n" + bytes(range(256)) * 40  # ASCII line ends inside: no framing by them
        with self.server.connect() as s:
            s.sendall(binary(0x11, 1, struct.pack(">II", 0xdeadbeef, 0), b"bq", value) +  # setq: silent
                      binary(0x09, 2, key=b"bq") +           # getq hit
                      binary(0x09, 3, key=b"bq-missing") +   # getq miss: silent
                      binary(0x0d, 4, key=b"bq-missing") +   # getkq miss: silent
                      binary(0x12, 5, struct.pack(">II", 0, 0), b"bq", b"x") +  # addq on an existing key: error
                      binary(0x0a, 6))                       # noop
            (get, add, noop) = read_binary(s, 3)
            self.assertEqual(get[:2], (0x09, 0))
            self.assertEqual((get[2], get[4], get[5], get[6]), (2, struct.pack(">I", 0xdeadbeef), b"", value))
            self.assertNotEqual(get[3], 0)  # the item's CAS
            self.assertEqual(add[:3], (0x12, 0x02, 5))
            self.assertEqual(add[6], b"Data exists for key.")
            self.assertEqual(noop[:3], (0x0a, 0, 6))
            # The text protocol sees the binary set, flags and all.
            self.assertEqual(request(s, b"get bq\r\n", b"END\r\n"),
                             b"VALUE bq %d %d\r\n%s\r\nEND\r\n" % (0xdeadbeef, len(value), value))

    def test_counted_as_the_commands_they_are(self):
        # Carried out as meta commands, but counted as gets, sets, deletes
        # and incrs (they once also counted in cmd_meta).
        import struct
        with Server(threads=1) as server, server.connect() as s:
            def general():
                lines = request(s, b"stats\r\n", b"END\r\n").decode().split("\r\n")
                return {l.split(" ")[1]: l.split(" ")[2] for l in lines if l.startswith("STAT ")}
            before = general()
            s.sendall(binary(0x01, 1, struct.pack(">II", 0, 0), b"bc", b"1") + binary(0x00, 2, key=b"bc") +
                      binary(0x00, 3, key=b"bc-none") + binary(0x05, 4, struct.pack(">QQI", 1, 0, 0), b"bc") +
                      binary(0x04, 5, key=b"bc"))
            self.assertEqual([r[1] for r in read_binary(s, 5)], [0, 0, 0x01, 0, 0])
            after = general()
            for name, more in (("cmd_meta", 0), ("cmd_get", 2), ("get_hits", 1), ("get_misses", 1), ("cmd_set", 1),
                               ("incr_hits", 1), ("delete_hits", 1)):
                self.assertEqual(int(after[name]) - int(before[name]), more, name)
            # Each text meta command counts once, ms and mn included.
            self.assertEqual(request(s, b"ms bc 1\r\n1\r\nmg bc v\r\nma bc\r\nmd bc\r\nmn\r\n", b"MN\r\n"),
                             b"HD\r\nVA 1\r\n1\r\nHD\r\nHD\r\nMN\r\n")
            self.assertEqual(int(general()["cmd_meta"]) - int(after["cmd_meta"]), 5)

    def test_misses_cas_and_store_modes(self):
        import struct
        extras = struct.pack(">II", 3, 0)
        with self.server.connect() as s:
            s.sendall(binary(0x00, 1, key=b"bm-none") + binary(0x0c, 2, key=b"bm-none"))
            (get, getk) = read_binary(s, 2)
            self.assertEqual(get[1:2] + get[5:], (0x01, b"", b"Not found"))
            self.assertEqual(getk[1:2] + getk[5:], (0x01, b"bm-none", b""))  # K: the key names the miss
            s.sendall(binary(0x03, 3, extras, b"bm", b"r") + binary(0x0e, 4, key=b"bm", value=b"a"))
            (replace, append) = read_binary(s, 2)
            self.assertEqual((replace[1], append[1]), (0x01, 0x05))  # replace: not found; append: not stored
            s.sendall(binary(0x01, 5, extras, b"bm", b"one"))
            (stored,) = read_binary(s)
            self.assertEqual(stored[1], 0)
            cas = stored[3]
            self.assertNotEqual(cas, 0)
            s.sendall(binary(0x01, 6, extras, b"bm", b"two", cas=cas + 1000) +  # a stale token
                      binary(0x01, 7, extras, b"bm-none", b"x", cas=5) +        # a token for no item
                      binary(0x01, 8, extras, b"bm", b"two", cas=cas) +
                      binary(0x0f, 9, key=b"bm", value=b">") + binary(0x0c, 10, key=b"bm"))
            stale, none, swapped, prepend, got = read_binary(s, 5)
            self.assertEqual((stale[1], none[1], swapped[1], prepend[1]), (0x02, 0x01, 0, 0))
            self.assertEqual((got[4], got[5], got[6]), (struct.pack(">I", 3), b"bm", b">two"))
            self.assertEqual(got[3], prepend[3])  # the CAS the prepend answered is the item's
            s.sendall(binary(0x04, 11, key=b"bm", cas=cas) + binary(0x04, 12, key=b"bm") + binary(0x04, 13, key=b"bm"))
            self.assertEqual([r[1] for r in read_binary(s, 3)], [0x02, 0, 0x01])

    def test_incr_decr_initial_values_and_errors(self):
        import struct

        def arith(op, opaque, key, delta, initial, exptime):
            return binary(op, opaque, struct.pack(">QQI", delta, initial, exptime), key)

        with self.server.connect() as s:
            s.sendall(arith(0x05, 1, b"bn", 5, 10, 0xffffffff) +  # no item made for all-ones expiration
                      arith(0x05, 2, b"bn", 5, 10, 0) +           # made with the initial value
                      arith(0x05, 3, b"bn", 5, 10, 0) +
                      arith(0x06, 4, b"bn", 100, 0, 0) +          # decr stops at 0
                      arith(0x05, 5, b"bn", 2 ** 64 - 1, 0, 0))   # 0 + (2^64 - 1)
            rs = read_binary(s, 5)
            self.assertEqual(rs[0][1], 0x01)
            self.assertEqual([struct.unpack(">Q", r[6])[0] for r in rs[1:]], [10, 15, 0, 2 ** 64 - 1])
            self.assertTrue(all(r[1] == 0 and r[3] != 0 for r in rs[1:]))
            s.sendall(binary(0x01, 6, struct.pack(">II", 0, 0), b"bn-text", b"abc") + arith(0x05, 7, b"bn-text", 1, 0, 0))
            (_, bad) = read_binary(s, 2)
            self.assertEqual((bad[1], bad[6]), (0x06, b"Non-numeric server-side value for incr or decr"))
            self.assertEqual(request(s, b"get bn\r\n", b"END\r\n"),
                             b"VALUE bn 0 20\r\n%d\r\nEND\r\n" % (2 ** 64 - 1))

    def test_bad_requests_are_answered_and_the_stream_stays_in_step(self):
        import struct
        with self.server.connect() as s:
            # A get with extras, a set without them, a 300-byte key, an unknown opcode.
            s.sendall(binary(0x00, 1, b"\0\0\0\0", b"k") + binary(0x01, 2, key=b"k", value=b"v") +
                      binary(0x00, 3, key=b"k" * 300) + binary(0x42, 4) + binary(0x0b, 5))
            rs = read_binary(s, 5)
            self.assertEqual([(r[0], r[1], r[2]) for r in rs[:4]], [(0x00, 0x04, 1), (0x01, 0x04, 2), (0x00, 0x04, 3),
                                                                    (0x42, 0x81, 4)])
            self.assertEqual(rs[4][6], b"1.6.21-tiercache-0.1.0")
            # A body larger than the connection reads whole: refused, and its bytes skipped.
            big = b"x" * (5 << 20)
            s.sendall(binary(0x01, 6, struct.pack(">II", 0, 0), b"huge", big) + binary(0x0a, 7))
            (too_large, noop) = read_binary(s, 2, timeout=30)
            self.assertEqual((too_large[1], too_large[6]), (0x03, b"Too large."))
            self.assertEqual(noop[:3], (0x0a, 0, 7))
            # A header and body sent byte by byte.
            for b in binary(0x01, 8, struct.pack(">II", 0, 0), b"slow", b"value"):
                s.sendall(bytes([b]))
            self.assertEqual(read_binary(s)[0][1], 0)

    def test_touch_gat_stat_flush_and_quit(self):
        import struct
        with Server(threads=1) as server, server.connect() as s:
            s.sendall(binary(0x01, 1, struct.pack(">II", 9, 1), b"bt", b"val") +
                      binary(0x1c, 2, struct.pack(">I", 100), b"bt") +   # touch: flags, no value
                      binary(0x23, 3, struct.pack(">I", 100), b"bt") +   # gatk
                      binary(0x1c, 4, struct.pack(">I", 100), b"bt-none"))
            (_, touch, gatk, miss) = read_binary(s, 4)
            self.assertEqual((touch[1], touch[4], touch[6]), (0, struct.pack(">I", 9), b""))
            self.assertEqual((gatk[1], gatk[5], gatk[6]), (0, b"bt", b"val"))
            self.assertEqual(miss[1], 0x01)
            ttl = request(s, b"mg bt t\r\n").decode()
            self.assertRegex(ttl, r"^HD t(99|100)\r\n$")  # the touch's TTL, not the set's 1 s
            s.sendall(binary(0x10, 5, key=b"settings"))
            stats = read_binary(s, stats=True)
            names = {r[5]: r[6] for r in stats[:-1]}
            self.assertEqual(names[b"binding_protocol"], b"auto-negotiate")
            self.assertEqual(names[b"maxconns"], b"%d" % json.load(open(server.config_path))["server"]["max_conns"])
            s.sendall(binary(0x10, 6, key=b"no-such-group"))
            self.assertEqual(read_binary(s)[0][1], 0x01)
            s.sendall(binary(0x18, 7) + binary(0x00, 8, key=b"bt"))  # flushq: silent
            self.assertEqual(read_binary(s)[0][1:3], (0x01, 8))
            s.sendall(binary(0x07, 9))
            self.assertEqual(read_binary(s)[0][:3], (0x07, 0, 9))
            s.settimeout(5)
            self.assertEqual(s.recv(10), b"")  # closed after the quit's response

    def test_pylibmc_binary(self):
        try:
            import pylibmc
        except ImportError:
            self.skipTest("python3-pylibmc not installed")
        mc = pylibmc.Client(["127.0.0.1:%d" % self.server.port], binary=True, behaviors={"cas": True})
        values = {"pb-%d" % i: os.urandom(i * 37) for i in range(1, 60)}
        self.assertEqual(mc.set_multi(values), [])
        self.assertEqual(mc.get_multi(list(values) + ["pb-none"]), values)
        self.assertFalse(mc.add("pb-1", b"x"))
        self.assertEqual(mc.incr("pb-n", 1) if mc.set("pb-n", "41") else None, 42)
        v, cas = mc.gets("pb-2")
        self.assertTrue(mc.cas("pb-2", b"new", cas))
        self.assertFalse(mc.cas("pb-2", b"newer", cas))
        self.assertTrue(mc.delete("pb-2"))
        self.assertIsNone(mc.get("pb-2"))
        mc.disconnect_all()


MEMCACHED_TOOL = "/usr/share/memcached/scripts/memcached-tool"


class KeyDumps(unittest.TestCase):
    """lru_crawler metadump / mgdump, and memcached-tool's dump and keys built on them."""

    def setUp(self):
        self.server = Server(threads=1)

    def tearDown(self):
        self.server.__exit__()

    def metadump(self, s, classes=b"all"):
        lines = request(s, b"lru_crawler metadump " + classes + b"\r\n", b"END\r\n").split(b"\n")
        self.assertEqual(lines[-2:], [b"END\r", b""])
        return [dict(f.split(b"=", 1) for f in line.split(b" ")) for line in lines[:-2]]

    @unittest.skipUnless(os.path.exists(MEMCACHED_TOOL) and shutil.which("perl"), "memcached-tool not installed")
    def test_memcached_tool_dump_reads_back_every_item(self):
        items = {b"plain": (3, b"value"), b"ctl\x01key": (0, bytes(range(256))), b"pct%20": (7, b"x\r\ny"),
                 b"ttl-key": (9, b"expires")}
        with self.server.connect() as s:
            for k, (flags, v) in items.items():
                ttl = b"100" if k == b"ttl-key" else b"0"
                self.assertEqual(request(s, b"set %s %d %s %d\r\n%s\r\n" % (k, flags, ttl, len(v), v)), b"STORED\r\n")
        started = time.time()
        r = subprocess.run(["perl", MEMCACHED_TOOL, "127.0.0.1:%d" % self.server.port, "dump"],
                           capture_output=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        out, got = r.stdout, {}
        while out:
            m = re.match(rb"add (\S+) (\d+) (\d+) (\d+)\r\n", out)
            self.assertIsNotNone(m, out[:200])
            n = int(m.group(4))
            value = out[m.end():m.end() + n]
            self.assertEqual(out[m.end() + n:m.end() + n + 2], b"\r\n")
            got[m.group(1)] = (int(m.group(2)), value, int(m.group(3)))
            out = out[m.end() + n + 2:]
        self.assertEqual({k: v[:2] for k, v in got.items()}, items)
        self.assertEqual(got[b"plain"][2], 0)
        self.assertAlmostEqual(got[b"ttl-key"][2], started + 100, delta=3)  # exp: a unix time
        r = subprocess.run(["perl", MEMCACHED_TOOL, "127.0.0.1:%d" % self.server.port, "keys"],
                           capture_output=True, timeout=60)
        self.assertEqual(sorted(re.findall(rb"^key=(\S+) ", r.stdout, re.M)),
                         sorted([b"plain", b"ctl%01key", b"pct%2520", b"ttl-key"]))

    def test_metadump_fields_classes_and_mgdump(self):
        with self.server.connect() as s:
            self.assertEqual(request(s, b"set small 5 0 2\r\nab\r\n"), b"STORED\r\n")
            self.assertEqual(request(s, b"set big 6 0 5000\r\n" + b"b" * 5000 + b"\r\n"), b"STORED\r\n")
            self.assertEqual(request(s, b"ms YmluAGtleQ== 1 b\r\nz\r\n"), b"HD\r\n")  # the key "bin\0key"
            self.assertEqual(request(s, b"get small\r\n", b"END\r\n"), b"VALUE small 5 2\r\nab\r\nEND\r\n")
            lines = {d[b"key"]: d for d in self.metadump(s)}
            self.assertEqual(set(lines), {b"small", b"big", b"bin%00key"})
            small, big = lines[b"small"], lines[b"big"]
            self.assertEqual((small[b"exp"], small[b"fetch"], small[b"flags"], small[b"size"]), (b"-1", b"yes", b"5", b"7"))
            self.assertEqual((big[b"fetch"], big[b"flags"], big[b"size"]), (b"no", b"6", b"5003"))
            self.assertNotEqual(small[b"cas"], big[b"cas"])
            self.assertLessEqual(abs(int(small[b"la"]) - time.time()), 3)
            self.assertNotEqual(small[b"cls"], big[b"cls"])
            # A class list picks that class's items only ("stats slabs" numbering).
            self.assertEqual([d[b"key"] for d in self.metadump(s, big[b"cls"])], [b"big"])
            both = sorted({big[b"cls"], small[b"cls"]})
            self.assertEqual(len(self.metadump(s, b",".join(both))), 3 if lines[b"bin%00key"][b"cls"] in both else 2)
            self.assertEqual(self.metadump(s, b"hash"), self.metadump(s, b"all"))
            mg = request(s, b"lru_crawler mgdump all\r\n", b"EN\r\n")
            self.assertEqual(sorted(mg.split(b"\r\n")), sorted([b"mg small", b"mg big", b"mg YmluAGtleQ== b", b"EN", b""]))
            for line in mg.split(b"\r\n")[:-2]:  # each line is a request that finds its item
                self.assertEqual(request(s, line + b" v\r\n").split(b" ")[0], b"VA")
            # memcached's answers to the rest of lru_crawler.
            for line, reply in ((b"lru_crawler metadump 0", b"BADCLASS invalid class id"),
                                (b"lru_crawler mgdump 1,x", b"BADCLASS invalid class id"),
                                (b"lru_crawler metadump", b"ERROR"), (b"lru_crawler bogus", b"ERROR"),
                                (b"lru_crawler crawl all", b"OK"), (b"lru_crawler tocrawl 100", b"OK"),
                                (b"lru_crawler sleep 2000000", b"CLIENT_ERROR sleep must be one second or less"),
                                (b"lru_crawler tocrawl x", b"CLIENT_ERROR bad command line format"),
                                (b"lru_crawler enable", b"OK"),
                                (b"lru_crawler disable", b"ERROR failed to stop lru crawler thread")):
                self.assertEqual(request(s, line + b"\r\n"), reply + b"\r\n", line)

    def test_a_large_dump_streams_while_the_worker_serves_others(self):
        # One worker. The dump (14 MB) is far larger than the 4 MiB a
        # connection may queue plus what the kernel buffers for a client
        # with a small receive buffer: it goes out as the client reads, and
        # the other connection is answered meanwhile.
        n = 150000
        with self.server.connect() as s:
            s.sendall(b"".join(b"set dump-key-with-a-long-name-%06d 0 0 1 noreply\r\nv\r\n" % i for i in range(n)))
            self.assertEqual(request(s, b"mn\r\n"), b"MN\r\n")
        dumper = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        dumper.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 16)
        dumper.connect(self.server.address)
        with dumper, self.server.connect() as other:
            dumper.sendall(b"lru_crawler metadump all\r\nmn\r\n")
            first = dumper.recv(1 << 16)
            self.assertTrue(first.startswith(b"key=dump-key-with-a-long-name-"), first[:100])
            time.sleep(0.5)  # the dump fills its queue and waits for this client
            self.assertEqual(request(other, b"mn\r\n"), b"MN\r\n")
            rest = recv_until(dumper, b"END\r\nMN\r\n")
            lines = (first + rest).split(b"\n")
            self.assertEqual(lines[-3:], [b"END\r", b"MN\r", b""])
            keys = [re.match(rb"key=(\S+) exp=-1 la=\d+ cas=\d+ fetch=no cls=\d+ size=\d+ flags=0$", line).group(1)
                    for line in lines[:-3]]
            self.assertEqual(len(keys), n)
            self.assertEqual(set(keys), {b"dump-key-with-a-long-name-%06d" % i for i in range(n)})
        self.assertGreater(len(first + rest), 12 << 20)


class MemcachedSemantics(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server(threads=2)

    @classmethod
    def tearDownClass(cls):
        cls.server.__exit__()

    def test_commands_that_take_no_noreply_still_answer(self):
        with self.server.connect() as s:
            self.assertTrue(request(s, b"version noreply\r\n").startswith(b"VERSION "))
            self.assertEqual(request(s, b"mn noreply\r\n"), b"MN\r\n")
            self.assertEqual(request(s, b"verbosity\r\n"), b"ERROR\r\n")
            self.assertEqual(request(s, b"verbosity 1 noreply\r\nmn\r\n"), b"MN\r\n")

    def test_binary_requests_are_answered_not_supported_in_step_with_the_protocol_off(self):
        import struct
        message = b"binary protocol turned off here (-B ascii): use the ASCII or meta protocol"

        def binary(opcode, opaque, extras=b"", key=b"", value=b""):
            body = extras + key + value
            return struct.pack(">BBHBBHIIQ", 0x80, opcode, len(key), len(extras), 0, 0, len(body), opaque, 0) + body

        def response(opcode, opaque):
            return struct.pack(">BBHBBHIIQ", 0x81, opcode, 0, 0, 0, 0x83, len(message), opaque, 0) + message

        server = Server(threads=1, args=["-B", "ascii"])
        self.addCleanup(server.__exit__)
        before = stat(server, "protocol_errors")
        with server.connect() as s:
            # A set whose value holds the ASCII line end, a quiet get, then ASCII on the same connection.
            value = b"v\r\nget bin-k\r\n" + bytes(range(256)) * 40
            s.sendall(binary(0x01, 0x11223344, struct.pack(">II", 7, 0), b"bin-k", value) + binary(0x09, 7, key=b"bin-k"))
            expected = response(0x01, 0x11223344) + response(0x09, 7)
            self.assertEqual(request(s, b"mn\r\n", b"MN\r\n"), expected + b"MN\r\n")
            # A header in two parts is answered once it is whole.
            head = binary(0x0b, 0xabcdef01)
            s.sendall(head[:10])
            self.assertEqual(quiet(s), b"")
            self.assertEqual(request(s, head[10:] + b"mn\r\n", b"MN\r\n"), response(0x0b, 0xabcdef01) + b"MN\r\n")
            # Nothing was stored by the binary set.
            self.assertEqual(request(s, b"get bin-k\r\n", b"END\r\n"), b"END\r\n")
        self.assertEqual(stat(server, "protocol_errors"), before + 3)

    def test_http_request_is_hung_up_on(self):
        # memcached's t/malicious-commands.t: no reply, the connection closes.
        for line in (b"GET / HTTP/1.0", b"PUT /asdf/asd/fasdfasdf/sadf HTTP/1.1", b"DELETE HTTP/1.1"):
            with self.server.connect() as s:
                s.sendall(line + b"\r\n")
                s.settimeout(5)
                self.assertEqual(s.recv(24), b"", line)

    def test_slabs_automove(self):
        # memcached's t/strtol-testing.t.
        with self.server.connect() as s:
            self.assertEqual(request(s, b"slabs automove invalid\r\n"), b"CLIENT_ERROR bad command line format\r\n")
            self.assertEqual(request(s, b"verbosity invalid\r\n"), b"CLIENT_ERROR bad command line format\r\n")
            self.assertEqual(request(s, b"slabs automove 1\r\n"), b"OK\r\n")
            self.assertEqual(request(s, b"slabs automove 0 noreply\r\nmn\r\n"), b"MN\r\n")

    def test_noreply_errors_send_nothing(self):
        # A client that asked for no reply must get none, or it reads the
        # error as the answer to its next request.
        with self.server.connect() as s:
            s.sendall(b"incr nr-k abc noreply\r\ntouch nr-k x noreply\r\ndelete nr-k 5 noreply\r\n"
                      b"set nr-k 0 x 1 noreply\r\nz\r\nset nr-k 0 0 1 noreply\r\nzXY"
                      b"set nr-big 0 0 %d noreply\r\n" % (MAX_ITEM + 1) + b"x" * (MAX_ITEM + 1) + b"\r\n"
                      b"set nr-s 0 0 1\r\ns\r\nincr nr-s 1 noreply\r\n")
            self.assertEqual(quiet(s, 1.0), b"STORED\r\n")
            self.assertEqual(request(s, b"mn\r\n"), b"MN\r\n")

    def test_keys_with_control_bytes_as_memcached_and_strict_mode(self):
        keys = [b"a\x01b", b"t\tab", b"c\rr", b"d\x7f", b"\x80\xff"]
        with self.server.connect() as s:
            for k in keys:
                self.assertEqual(request(s, b"set " + k + b" 3 0 1\r\nv\r\n"), b"STORED\r\n", k)
                self.assertEqual(request(s, b"get " + k + b"\r\n", b"END\r\n"), b"VALUE " + k + b" 3 1\r\nv\r\nEND\r\n")
        with Server(threads=1, strict_keys=True) as strict:
            with strict.connect() as s:
                self.assertEqual(request(s, b"set a\x01b 0 0 1\r\nv\r\nmn\r\n", b"MN\r\n"),
                                 b"CLIENT_ERROR bad command line format\r\nMN\r\n")
                self.assertEqual(request(s, b"set ab 0 0 1\r\nv\r\n"), b"STORED\r\n")

    def test_flush_all_can_be_disabled(self):
        # memcached -F (its t/flush-all.t): refused, nothing flushed; noreply silences the refusal.
        with Server(threads=1, flush_all_enabled=False) as server, server.connect() as s:
            self.assertEqual(request(s, b"set fa 0 0 2\r\nhi\r\n"), b"STORED\r\n")
            self.assertEqual(request(s, b"flush_all\r\n"), b"CLIENT_ERROR flush_all not allowed\r\n")
            self.assertEqual(request(s, b"flush_all 0 noreply\r\nmn\r\n"), b"MN\r\n")
            self.assertEqual(request(s, b"get fa\r\n", b"END\r\n"), b"VALUE fa 0 2\r\nhi\r\nEND\r\n")

    def test_gat_with_a_past_exptime_returns_the_value_once(self):
        # memcached answers with the value, which is expired from then on (its t/expirations.t).
        with self.server.connect() as s:
            self.assertEqual(request(s, b"set gatpast 0 0 2\r\nhi\r\n"), b"STORED\r\n")
            self.assertEqual(request(s, b"gat -1 gatpast\r\n", b"END\r\n"), b"VALUE gatpast 0 2\r\nhi\r\nEND\r\n")
            self.assertEqual(request(s, b"get gatpast\r\n", b"END\r\n"), b"END\r\n")

    def test_debugtime_only_with_debug_commands(self):
        with self.server.connect() as s:
            self.assertEqual(request(s, b"debugtime 10\r\n"), b"ERROR\r\n")
        # memcached-debug's clock shift: moving by the TTL expires the item, as there.
        with Server(threads=1, debug_commands=True) as server, server.connect() as s:
            self.assertEqual(request(s, b"set dt 0 3 2\r\nhi\r\nset dt2 0 0 2\r\nho\r\n", b"STORED\r\nSTORED\r\n"),
                             b"STORED\r\nSTORED\r\n")
            self.assertEqual(request(s, b"debugtime 2\r\n"), b"OK\r\n")
            self.assertEqual(request(s, b"get dt\r\n", b"END\r\n"), b"VALUE dt 0 2\r\nhi\r\nEND\r\n")
            self.assertEqual(request(s, b"debugtime 1\r\n"), b"OK\r\n")
            self.assertEqual(request(s, b"get dt\r\n", b"END\r\n"), b"END\r\n")
            self.assertEqual(request(s, b"get dt2\r\n", b"END\r\n"), b"VALUE dt2 0 2\r\nho\r\nEND\r\n")
            # An absolute exptime is read on the moved clock too.
            at = int(time.time()) + 2
            self.assertEqual(request(s, b"set dt3 0 %d 2\r\nhi\r\n" % at), b"STORED\r\n")
            self.assertEqual(request(s, b"get dt3\r\n", b"END\r\n"), b"END\r\n")
            self.assertEqual(request(s, b"debugtime x\r\n"), b"ERROR\r\n")

    def test_reclaimed_counts_dead_items_taken_back(self):
        # memcached's t/issue_183.t: a set over a flushed item reclaims it.
        with Server(threads=1) as server, server.connect() as s:
            self.assertEqual(request(s, b"set rk 0 0 1\r\n1\r\n"), b"STORED\r\n")
            self.assertEqual(stat(server, "reclaimed"), 0)
            self.assertEqual(request(s, b"flush_all\r\n"), b"OK\r\n")
            self.assertEqual(request(s, b"set rk 0 0 1\r\n1\r\n"), b"STORED\r\n")
            self.assertEqual(stat(server, "reclaimed"), 1)

    def test_mem_requested_and_class_reclaimed(self):
        # memcached's t/issue_42.t and t/issue_163.t: per class, the bytes its items
        # take (48-byte header + key + value here) in stats slabs and stats items,
        # and its dead items taken back in stats items.
        cfg = base_config(threads=1, debug_commands=True)
        cfg["allocation"].update({"min_size": 96, "growth_factor": 1.25})
        with Server(config=cfg) as server, server.connect() as s:
            def slab_stat(kind, name):
                reply = request(s, b"stats %s\r\n" % kind.encode(), b"END\r\n").decode()
                m = re.search(r"STAT %s (\d+)\r\n" % re.escape(name), reply)
                return int(m.group(1)) if m else None
            for i in range(10):
                self.assertEqual(request(s, b"set key%d 0 0 10\r\nBBBBBBBBBB\r\n" % i), b"STORED\r\n")
            self.assertEqual(slab_stat("items", "items:1:mem_requested"), 10 * (48 + 4 + 10))
            self.assertEqual(slab_stat("slabs", "1:mem_requested"), 10 * (48 + 4 + 10))
            self.assertEqual(slab_stat("items", "items:1:reclaimed"), 0)
            self.assertEqual(request(s, b"set key0 0 1 10\r\nBBBBBBBBBB\r\n"), b"STORED\r\n")
            self.assertEqual(request(s, b"debugtime 2\r\n"), b"OK\r\n")
            self.assertEqual(request(s, b"set key0 0 0 12\r\nBBBBBBBBBBBB\r\n"), b"STORED\r\n")
            self.assertEqual(slab_stat("items", "items:1:reclaimed"), 1)
            self.assertEqual(slab_stat("slabs", "1:mem_requested"), 10 * (48 + 4 + 10) + 2)
            for i in range(10):
                self.assertEqual(request(s, b"delete key%d\r\n" % i), b"DELETED\r\n")
            self.assertEqual(slab_stat("slabs", "1:mem_requested"), 0)

    def test_meta_get_hit_before_no_bump_and_last_access(self):
        # memcached's t/metaget.t: h is whether the item was read before this
        # request (any get reads it), u reads without marking it, l is the
        # seconds since the last access; a new set starts unfetched.
        with Server(threads=1) as server, server.connect() as s:
            self.assertEqual(request(s, b"ms hf 3 T100\r\nhit\r\n"), b"HD\r\n")
            self.assertEqual(request(s, b"mg hf s u h\r\n"), b"HD s3 h0\r\n")
            self.assertEqual(request(s, b"mg hf s h\r\n"), b"HD s3 h0\r\n")
            self.assertEqual(request(s, b"mg hf h u\r\n"), b"HD h1\r\n")
            self.assertEqual(request(s, b"ms hf 3 T100\r\nhit\r\n"), b"HD\r\n")
            self.assertEqual(request(s, b"get hf\r\n", b"END\r\n"), b"VALUE hf 0 3\r\nhit\r\nEND\r\n")
            self.assertEqual(request(s, b"mg hf h\r\n"), b"HD h1\r\n")
            self.assertEqual(request(s, b"ms la 2 T100\r\nla\r\n"), b"HD\r\n")
            self.assertEqual(request(s, b"mg la l\r\n"), b"HD l0\r\n")
            time.sleep(1.1)
            self.assertEqual(request(s, b"mg la l u\r\n"), b"HD l1\r\n")
            self.assertEqual(request(s, b"mg la l\r\n"), b"HD l1\r\n")  # as it was before this read
            self.assertEqual(request(s, b"mg la l\r\n"), b"HD l0\r\n")

    def test_without_cas_a_flush_is_whole_seconds(self):
        # memcached -C (t/flush-all.t's last check): flush_all goes by the second, so a
        # value stored in the same second after it is lost; with CAS (the default) the
        # flush orders exactly and the value stays.
        for use_cas, expect in ((True, b"VALUE f 0 3\r\nnew\r\nEND\r\n"), (False, b"END\r\n")):
            with Server(threads=1, use_cas=use_cas) as server, server.connect() as s:
                for _ in range(5):  # the same second, unless it turned in between: try again
                    start = int(time.time())
                    self.assertEqual(request(s, b"flush_all 0\r\n"), b"OK\r\n")
                    self.assertEqual(request(s, b"set f 0 0 3\r\nnew\r\n"), b"STORED\r\n")
                    got = request(s, b"get f\r\n", b"END\r\n")
                    if int(time.time()) == start:
                        break
                self.assertEqual(got, expect, use_cas)
                # A second later stores stick again; a delayed flush is unchanged.
                time.sleep(1.05)
                self.assertEqual(request(s, b"set f 0 0 3\r\nnew\r\n"), b"STORED\r\n")
                self.assertEqual(request(s, b"get f\r\n", b"END\r\n"), b"VALUE f 0 3\r\nnew\r\nEND\r\n")

    def test_stats_sizes_answers_as_memcached_with_the_histogram_off(self):
        # memcached-tool's "sizes" mode reads it; it was ERROR.
        with self.server.connect() as s:
            self.assertEqual(request(s, b"stats sizes\r\n", b"END\r\n"), b"STAT sizes_status disabled\r\nEND\r\n")

    def test_stats_reset_zeroes_counters_not_gauges(self):
        with Server(threads=1) as server, server.connect() as s:
            self.assertEqual(request(s, b"set sr 0 0 1\r\n1\r\nget sr\r\n", b"END\r\n"),
                             b"STORED\r\nVALUE sr 0 1\r\n1\r\nEND\r\n")
            self.assertEqual(stat(server, "get_hits"), 1)
            self.assertEqual(request(s, b"stats reset\r\n"), b"RESET\r\n")
            self.assertEqual(stat(server, "get_hits"), 0)
            self.assertEqual(stat(server, "total_items"), 0)
            self.assertEqual(stat(server, "curr_items"), 1)
            request(s, b"get sr\r\n", b"END\r\n")
            self.assertEqual(stat(server, "get_hits"), 1)

    def test_slab_class_ids_follow_the_ladder(self):
        # memcached's classes (96, 120, ... bytes, growth 1.25): a 10-byte value is in
        # class 1, a 66560-byte one in class 31, whichever classes hold items (its
        # t/issue_22.t and t/issue_163.t name them); ids used to count the non-empty classes.
        cfg = base_config(threads=1)
        cfg["allocation"].update({"min_size": 96, "growth_factor": 1.25})
        with Server(config=cfg) as server, server.connect() as s:
            value = b"B" * 66560
            self.assertEqual(request(s, b"set big 0 0 66560\r\n" + value + b"\r\nset small 0 0 10\r\n0123456789\r\n",
                                     b"STORED\r\nSTORED\r\n"), b"STORED\r\nSTORED\r\n")
            items = request(s, b"stats items\r\n", b"END\r\n").decode()
            self.assertIn("STAT items:1:number 1\r\n", items)
            self.assertIn("STAT items:31:number 1\r\n", items)
            slabs = request(s, b"stats slabs\r\n", b"END\r\n").decode()
            self.assertIn("STAT 1:chunk_size 96\r\n", slabs)
            self.assertIn("STAT 31:chunk_size 82792\r\n", slabs)
            self.assertIn(b"ITEM big [66560 b;", request(s, b"stats cachedump 31 0\r\n", b"END\r\n"))

    def test_reqs_per_event_gives_way_and_keeps_order(self):
        # memcached -R (its t/issue_61.t): a pipeline past the limit is carried out over
        # several turns of the worker's loop, counted in conn_yields, replies in order.
        with Server(threads=1, reqs_per_event=1) as server:
            with server.connect() as s:
                batch = b"".join(b"set y%d 0 0 1\r\n%d\r\n" % (i, i % 10) for i in range(6))
                self.assertEqual(request(s, batch + b"get y5\r\n", b"END\r\n"),
                                 b"STORED\r\n" * 6 + b"VALUE y5 0 1\r\n5\r\nEND\r\n")
            self.assertGreaterEqual(stat(server, "conn_yields"), 5)
            with server.connect() as s:
                # A client that shuts down its side right after a pipeline is still owed every reply.
                s.sendall(b"".join(b"get y%d\r\n" % i for i in range(6)))
                s.shutdown(socket.SHUT_WR)
                reply = recv_until(s, b"VALUE y5 0 1\r\n5\r\nEND\r\n")
                self.assertEqual(reply.count(b"END\r\n"), 6)

    def test_meta_base64_keys(self):
        # The b flag (memcached's t/metaget.t): the token is the base64 form of the key;
        # k echoes the token; a classic get of the token misses.
        tesuto = b"44OG44K544OI"
        with self.server.connect() as s:
            self.assertEqual(request(s, b"ms " + tesuto + b" 2 b\r\npo\r\n"), b"HD\r\n")
            self.assertEqual(request(s, b"mg " + tesuto + b" v\r\n"), b"EN\r\n")
            self.assertEqual(request(s, b"mg " + tesuto + b" b v k\r\n", b"po\r\n"),
                             b"VA 2 k" + tesuto + b"\r\npo\r\n")
            self.assertEqual(request(s, b"ma YmluY250 b N0 J5 v\r\n", b"5\r\n"), b"VA 1\r\n5\r\n")
            self.assertEqual(request(s, b"get bincnt\r\n", b"END\r\n"), b"VALUE bincnt 0 1\r\n5\r\nEND\r\n")
            self.assertEqual(request(s, b"md YmluY250 b q\r\nmn\r\n", b"MN\r\n"), b"MN\r\n")
            self.assertEqual(request(s, b"get bincnt\r\n", b"END\r\n"), b"END\r\n")
            self.assertEqual(request(s, b"mg a2V5= b v\r\n"), b"CLIENT_ERROR error decoding key\r\n")
            self.assertEqual(request(s, b"ms a2V5= 2 b\r\nxx\r\nmn\r\n", b"MN\r\n"),
                             b"CLIENT_ERROR error decoding key\r\nMN\r\n")

    def test_meta_leases(self):
        # memcached's recache leases (its t/metaget.t): W = this client won the
        # token, Z = the win was handed out already, X = the item is stale.
        def flags(reply):
            return reply.split(b"\r\n")[0].split(b" ")
        with self.server.connect() as s:
            first = flags(request(s, b"mg lease s c v N30 t\r\n", b"\r\n\r\n"))
            self.assertEqual(first[:3], [b"VA", b"0", b"s0"])
            self.assertIn(b"W", first)
            self.assertNotIn(b"Z", first)
            again = flags(request(s, b"mg lease s c v N30\r\n", b"\r\n\r\n"))
            self.assertIn(b"Z", again)
            self.assertNotIn(b"W", again)
            cas = [f for f in first if f.startswith(b"c")][0][1:]
            self.assertEqual(request(s, b"ms lease 2 C5000 T120\r\nnu\r\n"), b"EX\r\n")
            self.assertEqual(request(s, b"ms lease 2 C" + cas + b" T120\r\nmu\r\n"), b"HD\r\n")
            plain = flags(request(s, b"mg lease s v N30\r\n", b"mu\r\n"))
            self.assertEqual(plain, [b"VA", b"2", b"s2"])
            # R: less TTL left than the token asks wins once.
            self.assertIn(b"W", flags(request(s, b"mg lease v R130\r\n", b"mu\r\n")))
            later = flags(request(s, b"mg lease v R130\r\n", b"mu\r\n"))
            self.assertIn(b"Z", later)
            self.assertNotIn(b"W", later)
            # md I: stale, a new token, the next reader wins; ms I with an older token
            # stores the value still stale, keeping the TTL and the token sent.
            self.assertEqual(request(s, b"set inv 0 0 3\r\nmoo\r\n"), b"STORED\r\n")
            self.assertEqual(request(s, b"md inv I T30\r\n"), b"HD\r\n")
            got = flags(request(s, b"mg inv t c v\r\n", b"moo\r\n"))
            self.assertIn(b"X", got)
            self.assertIn(b"W", got)
            self.assertEqual(request(s, b"ms inv 1 T90 C0\r\nf\r\n"), b"EX\r\n")
            self.assertEqual(request(s, b"ms inv 1 I T90 C1\r\nf\r\n"), b"HD\r\n")
            got = flags(request(s, b"mg inv t c v\r\n", b"f\r\n"))
            self.assertIn(b"X", got)
            self.assertIn(b"Z", got)
            self.assertNotIn(b"W", got)
            self.assertLessEqual(int([f for f in got if f.startswith(b"t")][0][1:]), 30)
            cas = [f for f in got if f.startswith(b"c")][0][1:]
            self.assertEqual(request(s, b"ms inv 1 T90 C" + cas + b"\r\ng\r\n"), b"HD\r\n")
            self.assertEqual(flags(request(s, b"mg inv v\r\n", b"g\r\n")), [b"VA", b"1"])
            self.assertEqual(request(s, b"md nosuch I\r\n"), b"NF\r\n")

    def test_meta_debug(self):
        with self.server.connect() as s:
            self.assertEqual(request(s, b"set medbg 5 0 2\r\nhi\r\n"), b"STORED\r\n")
            self.assertEqual(request(s, b"me nosuchkey\r\n"), b"EN\r\n")
            cas = int(request(s, b"mg medbg c\r\n").split(b" c")[1])
            # memcached's fields in its order (t/metaget.t, memcached's proto_text.c), then
            # tiercache's; the mg above read the item, so it was fetched.
            self.assertRegex(request(s, b"me medbg\r\n"),
                             rb"^ME medbg exp=-1 la=[0-9] cas=%d fetch=yes cls=1 size=7 flags=5 value=2 tier=0\r\n$" % cas)
            self.assertRegex(request(s, b"me bWVkYmc= b\r\n"),
                             rb"^ME bWVkYmc= exp=-1 la=[0-9] cas=%d fetch=yes cls=1 size=7 flags=5 value=2 tier=0\r\n$" % cas)

    def test_ms_failure_returns_a_zero_cas(self):
        with self.server.connect() as s:
            self.assertEqual(request(s, b"ms mscas 2\r\nbo\r\n"), b"HD\r\n")
            cas = int(request(s, b"mg mscas c\r\n").split(b" c")[1])
            self.assertEqual(request(s, b"ms mscas 2 c C%d\r\nio\r\n" % (cas + 10)), b"EX c0\r\n")
            self.assertRegex(request(s, b"ms mscas 2 c C%d\r\nio\r\n" % cas), rb"^HD c\d+\r\n$")
            self.assertEqual(request(s, b"ms mscas 2 c ME\r\nio\r\n"), b"NS c0\r\n")

    def test_failed_set_removes_the_old_value(self):
        with self.server.connect() as s:
            self.assertEqual(request(s, b"set stale 0 0 3\r\nold\r\n"), b"STORED\r\n")
            payload = b"set stale 0 0 %d\r\n" % (MAX_ITEM + 1) + b"x" * (MAX_ITEM + 1) + b"\r\n"
            self.assertEqual(request(s, payload), b"SERVER_ERROR object too large for cache\r\n")
            self.assertEqual(request(s, b"get stale\r\n", b"END\r\n"), b"END\r\n")
            # add/replace/append failing leave it alone, as in memcached.
            self.assertEqual(request(s, b"set kept 0 0 3\r\nold\r\n"), b"STORED\r\n")
            payload = b"replace kept 0 0 %d\r\n" % (MAX_ITEM + 1) + b"x" * (MAX_ITEM + 1) + b"\r\n"
            self.assertEqual(request(s, payload), b"SERVER_ERROR object too large for cache\r\n")
            self.assertEqual(request(s, b"get kept\r\n", b"END\r\n"), b"VALUE kept 0 3\r\nold\r\nEND\r\n")

    def ttl(self, s, key):
        reply = request(s, b"mg " + key + b" t\r\n")
        self.assertTrue(reply.startswith(b"HD t"), reply)
        return int(reply[4:].strip())

    def test_incr_and_append_keep_the_ttl(self):
        with self.server.connect() as s:
            self.assertEqual(request(s, b"set cnt 0 100 1\r\n0\r\nset app 0 100 1\r\na\r\n", b"STORED\r\nSTORED\r\n"),
                             b"STORED\r\nSTORED\r\n")
            for i in range(6):
                time.sleep(0.25)
                self.assertEqual(request(s, b"incr cnt 1\r\n"), b"%d\r\n" % (i + 1))
                self.assertEqual(request(s, b"append app 0 0 1\r\nb\r\n"), b"STORED\r\n")
            # Each rewrite used to push the deadline out by a rounding.
            self.assertLessEqual(self.ttl(s, b"cnt"), 100)
            self.assertLessEqual(self.ttl(s, b"app"), 100)
            self.assertGreaterEqual(self.ttl(s, b"cnt"), 97)

    def test_touch_keeps_the_cas_token(self):
        with self.server.connect() as s:
            self.assertEqual(request(s, b"set tc 0 0 1\r\nx\r\n"), b"STORED\r\n")
            cas = request(s, b"gets tc\r\n", b"END\r\n").split(b"\r\n")[0].split()[4]
            self.assertEqual(request(s, b"touch tc 100\r\n"), b"TOUCHED\r\n")
            after = request(s, b"gets tc\r\n", b"END\r\n").split(b"\r\n")[0].split()[4]
            self.assertEqual(after, cas)
            self.assertEqual(request(s, b"cas tc 0 0 1 " + cas + b"\r\ny\r\n"), b"STORED\r\n")

    def test_gat_then_mg_reports_the_new_ttl(self):
        with self.server.connect() as s:
            self.assertEqual(request(s, b"set g 0 100 1\r\n0\r\n"), b"STORED\r\n")
            self.assertEqual(request(s, b"gat 1000 g\r\n", b"END\r\n"), b"VALUE g 0 1\r\n0\r\nEND\r\n")
            ttl = self.ttl(s, b"g")
            self.assertTrue(990 < ttl <= 1000, ttl)
            self.assertEqual(request(s, b"gats 500 g\r\n", b"END\r\n").split(b"\r\n")[1], b"0")
            self.assertTrue(490 < self.ttl(s, b"g") <= 500)

    def test_huge_exptimes_do_not_wrap_to_expired(self):
        with self.server.connect() as s:
            for exptime in (b"2147483648", b"99999999999", b"9223372036854775807"):
                self.assertEqual(request(s, b"set huge 0 " + exptime + b" 1\r\nh\r\nget huge\r\n", b"END\r\n"),
                                 b"STORED\r\nVALUE huge 0 1\r\nh\r\nEND\r\n", exptime)
            self.assertEqual(request(s, b"touch huge 99999999999\r\nget huge\r\n", b"END\r\n"),
                             b"TOUCHED\r\nVALUE huge 0 1\r\nh\r\nEND\r\n")
            self.assertEqual(request(s, b"set neg 0 -9223372036854775808 1\r\nh\r\nget neg\r\n", b"END\r\n"),
                             b"STORED\r\nEND\r\n")

    def test_a_later_flush_replaces_a_delayed_one(self):
        with self.server.connect() as s:
            self.assertEqual(request(s, b"flush_all 2\r\n"), b"OK\r\n")
            self.assertEqual(request(s, b"flush_all\r\n"), b"OK\r\n")
            self.assertEqual(request(s, b"set survivor 0 0 1\r\nx\r\n"), b"STORED\r\n")
            time.sleep(3.2)
            self.assertEqual(request(s, b"get survivor\r\n", b"END\r\n"), b"VALUE survivor 0 1\r\nx\r\nEND\r\n")

    def test_long_multiget_line(self):
        # memcached's t/getset.t sends 187 KB of keys in one get.
        with self.server.connect() as s:
            self.assertEqual(request(s, b"set foobarbaz 0 0 2\r\nhi\r\n"), b"STORED\r\n")
            n = 18725
            reply = request(s, b"get " + b"foobarbaz " * n + b"\r\n", b"END\r\n", timeout=30)
            self.assertEqual(reply, b"VALUE foobarbaz 0 2\r\nhi\r\n" * n + b"END\r\n")

    def test_stats_cachedump(self):
        with self.server.connect() as s:
            self.assertEqual(request(s, b"set dumped 0 0 5\r\nhello\r\n"), b"STORED\r\n")
            slabs = request(s, b"stats slabs\r\n", b"END\r\n").decode()
            ids = sorted({int(m) for m in re.findall(r"STAT (\d+):used_chunks [1-9]", slabs)})
            found = b""
            for i in ids:
                found += request(s, b"stats cachedump %d 0\r\n" % i, b"END\r\n")
            self.assertRegex(found, rb"ITEM dumped \[5 b; 0 s\]\r\n")
            self.assertEqual(request(s, b"stats cachedump 1 1\r\n", b"END\r\n")[-5:], b"END\r\n")
            self.assertEqual(request(s, b"stats cachedump x\r\n"), b"CLIENT_ERROR bad command line format\r\n")


class SlabsFollowTheSizes(unittest.TestCase):
    def test_slabs_taken_by_large_values_come_back_for_small_ones(self):
        # Once large values had filled the tiers, small ones kept one slab
        # per tier for good (8% of them readable); memcached's slab automove
        # gives the pages back. configs/server.json rebalances by marginal hits.
        with Server(threads=2) as server, server.connect() as s:
            big = b"x" * 100000
            for i in range(1200):
                s.sendall(b"set big%d 0 0 %d noreply\r\n" % (i, len(big)) + big + b"\r\n")
            self.assertEqual(request(s, b"mn\r\n"), b"MN\r\n")
            n = 120000
            kept = 0
            deadline = time.time() + 40
            while time.time() < deadline:
                for i in range(n):
                    s.sendall(b"set small%d 0 0 100 noreply\r\n" % i + b"y" * 100 + b"\r\n")
                    if i % 2000 == 0:
                        request(s, b"mn\r\n")
                request(s, b"mn\r\n")
                sample = range(0, n, 100)
                kept = sum(b"VALUE" in request(s, b"get small%d\r\n" % i, b"END\r\n") for i in sample)
                if kept >= 0.95 * len(sample):
                    break
                time.sleep(1)
            self.assertGreaterEqual(kept, 0.95 * len(range(0, n, 100)))


class FlushAndRestart(unittest.TestCase):
    def test_flushed_items_do_not_come_back_after_a_restart(self):
        pool = "/dev/shm/tiercache-flush-restart-%d.pool" % os.getpid()
        cfg = base_config()
        cfg["tiers"][1].update({"path": pool, "persistent": True})
        cfg["persistence"] = {"durable_sets": True}
        try:
            with Server(config=cfg) as server:
                with server.connect() as s:
                    for i in range(50):
                        self.assertEqual(request(s, b"set fr%d 0 0 3\r\nold\r\n" % i), b"STORED\r\n")
                    self.assertEqual(request(s, b"flush_all\r\n"), b"OK\r\n")
                    self.assertEqual(request(s, b"set after 0 0 3\r\nnew\r\n"), b"STORED\r\n")
            with Server(config=cfg) as server:
                with server.connect() as s:
                    keys = b" ".join(b"fr%d" % i for i in range(50))
                    self.assertEqual(request(s, b"get " + keys + b" after\r\n", b"END\r\n"),
                                     b"VALUE after 0 3\r\nnew\r\nEND\r\n")
        finally:
            if os.path.exists(pool):
                os.unlink(pool)


if __name__ == "__main__":
    unittest.main(verbosity=2)
