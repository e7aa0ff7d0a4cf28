"""tiercache-server against real memcached clients: pymemcache, libmemcached's
command-line tools and raw sockets for what clients hide (pipelining,
malformed input, exact replies).

Run by ctest (tests/CMakeLists.txt) with Debian's /usr/bin/python3, which has
python3-pymemcache; TIERCACHE_SERVER names the binary. Every server is started
on a free loopback port and stopped by the test.
"""
import os
import signal
import socket
import subprocess
import tempfile
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from server_harness import Server, base_config, recv_until, request, wait_for  # noqa: E402

from pymemcache.client.base import Client  # noqa: E402
from pymemcache.exceptions import MemcacheServerError, MemcacheClientError  # noqa: E402

MAX_ITEM = 1 << 20


def client(server, **kw):
    return Client(server.address, default_noreply=False, connect_timeout=5, timeout=10, **kw)


class Basic(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server(threads=4)

    @classmethod
    def tearDownClass(cls):
        cls.server.__exit__()

    def test_set_get_delete_with_pymemcache(self):
        c = client(self.server)
        self.assertTrue(c.set("alpha", b"one"))
        self.assertEqual(c.get("alpha"), b"one")
        self.assertEqual(c.get_many(["alpha", "missing"]), {"alpha": b"one"})
        self.assertTrue(c.delete("alpha"))
        self.assertIsNone(c.get("alpha"))
        self.assertFalse(c.delete("alpha"))
        c.close()

    def test_binary_safe_values_round_trip(self):
        c = client(self.server)
        value = bytes(range(256)) * 4 + b"\r\nEND\r\n\x00"
        c.set("binary", value)
        self.assertEqual(c.get("binary"), value)
        c.close()

    def test_one_mebibyte_value(self):
        c = client(self.server)
        value = os.urandom(MAX_ITEM)
        self.assertTrue(c.set("big", value))
        self.assertEqual(c.get("big"), value)
        c.close()

    def test_oversized_value_is_refused_and_connection_survives(self):
        with self.server.connect() as s:
            payload = b"set huge 0 0 %d\r\n" % (MAX_ITEM + 1) + b"x" * (MAX_ITEM + 1) + b"\r\n"
            self.assertEqual(request(s, payload), b"SERVER_ERROR object too large for cache\r\n")
            self.assertEqual(request(s, b"get huge\r\n"), b"END\r\n")
            # A length far beyond anything, never sent: refused from the line alone.
            self.assertEqual(request(s, b"set huge 0 0 2000000000\r\n"), b"SERVER_ERROR object too large for cache\r\n")
        with self.server.connect() as s:
            self.assertEqual(request(s, b"version\r\n")[:8], b"VERSION ")

    def test_pipelined_requests_are_answered_in_order(self):
        with self.server.connect() as s:
            n = 500
            payload = b"".join(b"set p%d 0 0 %d\r\n%d\r\n" % (i, len(b"%d" % i), i) for i in range(n))
            payload += b"".join(b"get p%d\r\n" % i for i in range(n))
            payload += b"delete p0\r\nget p0\r\nversion\r\n"
            s.sendall(payload)
            data = b""
            s.settimeout(20)
            while not (b"VERSION " in data and data.endswith(b"\r\n")):
                chunk = s.recv(1 << 20)
                if not chunk:
                    break
                data += chunk
            expected = b"STORED\r\n" * n + b"".join(b"VALUE p%d 0 %d\r\n%d\r\nEND\r\n" % (i, len(b"%d" % i), i) for i in range(n))
            expected += b"DELETED\r\nEND\r\n"
            self.assertTrue(data.startswith(expected), data[:200])

    def test_noreply_sends_nothing(self):
        with self.server.connect() as s:
            reply = request(s, b"set nr 0 0 2 noreply\r\nhi\r\ndelete nothere noreply\r\nget nr\r\n", b"END\r\n")
            self.assertEqual(reply, b"VALUE nr 0 2\r\nhi\r\nEND\r\n")

    def test_malformed_commands_get_memcached_errors(self):
        with self.server.connect() as s:
            self.assertEqual(request(s, b"bogus\r\n"), b"ERROR\r\n")
            self.assertEqual(request(s, b"\r\n"), b"ERROR\r\n")
            self.assertEqual(request(s, b"get\r\n"), b"ERROR\r\n")
            self.assertEqual(request(s, b"set k 0 0 notanumber\r\n"), b"CLIENT_ERROR bad command line format\r\n")
            self.assertEqual(request(s, b"get " + b"k" * 251 + b"\r\n"), b"CLIENT_ERROR bad command line format\r\n")
            # A bad line with a readable length: its 5-byte value ("get x") is
            # discarded, not run as a command; what follows it is.
            s.sendall(b"set " + b"k" * 251 + b" 0 0 5\r\nget x\r\nversion\r\n")
            reply = b""
            while not (b"VERSION" in reply and reply.endswith(b"\r\n")):
                reply += recv_until(s, b"\r\n")
            self.assertTrue(reply.startswith(b"CLIENT_ERROR bad command line format\r\nVERSION "), reply)
            self.assertTrue(request(s, b"version\r\n").startswith(b"VERSION "))
            self.assertEqual(request(s, b"set k 0 0 3\r\nabcde\r\n", b"ERROR\r\n"),
                             b"CLIENT_ERROR bad data chunk\r\nERROR\r\n")
            self.assertEqual(request(s, b"incr k abc\r\n"), b"CLIENT_ERROR invalid numeric delta argument\r\n")
            self.assertEqual(request(s, b"touch k abc\r\n"), b"CLIENT_ERROR invalid exptime argument\r\n")
            self.assertEqual(request(s, b"delete k 5\r\n"),
                             b"CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]\r\n")
            self.assertEqual(request(s, b"mg k v v\r\n"), b"CLIENT_ERROR duplicate flag\r\n")
            self.assertEqual(request(s, b"ms k 2 MX\r\nhi\r\nmn\r\n", b"MN\r\n"),
                             b"CLIENT_ERROR invalid mode for ms M token\r\nMN\r\n")
            self.assertEqual(request(s, b"stats nonsense\r\n"), b"ERROR\r\n")
            # The connection is still good after all of that.
            self.assertEqual(request(s, b"set ok 0 0 2\r\nok\r\nget ok\r\n", b"END\r\n"),
                             b"STORED\r\nVALUE ok 0 2\r\nok\r\nEND\r\n")

    def test_line_too_long_closes_the_connection(self):
        with self.server.connect() as s:
            s.sendall(b"g" * (70 * 1024))
            data = recv_until(s, b"\r\n")
            self.assertEqual(data, b"CLIENT_ERROR line too long\r\n")
            s.settimeout(5)
            try:
                self.assertEqual(s.recv(10), b"")  # closed
            except ConnectionResetError:
                pass  # closed with the rest of the junk unread
        with self.server.connect() as s:
            self.assertTrue(request(s, b"version\r\n").startswith(b"VERSION "))

    def test_version_verbosity_stats(self):
        c = client(self.server)
        self.assertTrue(c.version().startswith(b"1.6"))
        stats = c.stats()
        for name in (b"pid", b"uptime", b"curr_connections", b"cmd_get", b"get_hits", b"curr_items", b"threads"):
            self.assertIn(name, stats)
        before = stats[b"cmd_get"]
        c.get("stat-probe")
        self.assertEqual(c.stats()[b"cmd_get"], before + 1)
        tiers = c.stats("tiers")
        self.assertEqual(tiers[b"tier:0:name"], b"dram")
        self.assertEqual(tiers[b"tier:1:kind"], b"pmem-file")
        # "stats cache": every row of the counter tables, cache and per tier.
        cache = c.stats("cache")
        for name in (b"gets", b"hits", b"demotions", b"alloc_attempts", b"metadata_bytes", b"tier:0:hits", b"tier:1:mapped_bytes"):
            self.assertIn(name, cache)
        slabs = c.stats("slabs")
        self.assertIn(b"active_slabs", slabs)
        items = c.stats("items")
        self.assertTrue(any(k.startswith(b"items:") for k in items))
        with self.server.connect() as s:
            self.assertEqual(request(s, b"verbosity 1\r\n"), b"OK\r\n")
            self.assertEqual(request(s, b"verbosity 0 noreply\r\nmn\r\n"), b"MN\r\n")
        c.close()

    def test_replies_are_written_after_the_client_shuts_down_its_side(self):
        with self.server.connect() as s:
            s.sendall(b"set hc 0 0 2\r\nhi\r\n" + b"get hc\r\n" * 100)
            s.shutdown(socket.SHUT_WR)
            got = b""
            s.settimeout(10)
            while True:
                chunk = s.recv(1 << 16)
                if not chunk:
                    break
                got += chunk
            self.assertEqual(got, b"STORED\r\n" + b"VALUE hc 0 2\r\nhi\r\nEND\r\n" * 100)

    def test_quit_closes(self):
        with self.server.connect() as s:
            s.sendall(b"quit\r\n")
            s.settimeout(5)
            self.assertEqual(s.recv(10), b"")

    def test_meta_commands(self):
        with self.server.connect() as s:
            self.assertEqual(request(s, b"ms mk 5\r\nhello\r\n"), b"HD\r\n")
            self.assertEqual(request(s, b"mg mk v\r\n", b"hello\r\n"), b"VA 5\r\nhello\r\n")
            self.assertEqual(request(s, b"mg mk s k Oabc\r\n"), b"HD s5 kmk Oabc\r\n")
            self.assertEqual(request(s, b"mg missing v\r\n"), b"EN\r\n")
            self.assertEqual(request(s, b"mg missing v q\r\nmn\r\n"), b"MN\r\n")
            self.assertEqual(request(s, b"ms mk 2 q\r\nhi\r\nmn\r\n"), b"MN\r\n")
            self.assertEqual(request(s, b"md mk\r\n"), b"HD\r\n")
            self.assertEqual(request(s, b"md mk\r\n"), b"NF\r\n")
            # q hides HD only: a miss still says NF, as memcached does.
            self.assertEqual(request(s, b"md mk q\r\nmn\r\n", b"MN\r\n"), b"NF\r\nMN\r\n")
            self.assertEqual(request(s, b"ms mk 1\r\nx\r\nmd mk q\r\nmn\r\n", b"MN\r\n"), b"HD\r\nMN\r\n")

    def test_many_concurrent_connections(self):
        errors = []

        def work(t):
            try:
                c = client(self.server)
                for i in range(100):
                    key = "conc-%d-%d" % (t, i)
                    value = (b"%d:%d:" % (t, i)) * (1 + i % 50)
                    c.set(key, value)
                    got = c.get(key)
                    if got != value:
                        errors.append((key, got))
                c.close()
            except Exception as e:  # noqa: BLE001
                errors.append(repr(e))

        threads = [threading.Thread(target=work, args=(t,)) for t in range(64)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        self.assertEqual(errors, [])

    def test_slow_client_does_not_hold_up_others(self):
        c = client(self.server)
        value = os.urandom(256 * 1024)
        c.set("slowvalue", value)
        slow = self.server.connect()
        # 200 gets of 256 KiB = 50 MiB of replies that the slow client does not read.
        slow.sendall(b"get slowvalue\r\n" * 200)
        time.sleep(0.5)
        start = time.time()
        for i in range(50):
            c.set("fast%d" % i, b"v")
            self.assertEqual(c.get("fast%d" % i), b"v")
        self.assertLess(time.time() - start, 10)
        # The slow client gets every reply once it reads.
        want = (b"VALUE slowvalue 0 %d\r\n" % len(value) + value + b"\r\nEND\r\n") * 200
        got = b""
        slow.settimeout(20)
        while len(got) < len(want):
            chunk = slow.recv(1 << 20)
            if not chunk:
                break
            got += chunk
        self.assertEqual(len(got), len(want))
        self.assertTrue(got == want)
        slow.close()
        c.close()

    # ---- TTL, flags and CAS (the lifecycle API, issue 12) ----

    def test_flags_are_stored(self):
        with self.server.connect() as s:
            self.assertEqual(request(s, b"set fl 4294967295 0 1\r\nx\r\n"), b"STORED\r\n")
            self.assertEqual(request(s, b"get fl\r\n", b"END\r\n"), b"VALUE fl 4294967295 1\r\nx\r\nEND\r\n")
            self.assertEqual(request(s, b"mg fl f v\r\n", b"x\r\n"), b"VA 1 f4294967295\r\nx\r\n")

    def test_add_replace_append_prepend(self):
        c = client(self.server)
        c.delete("arap")
        self.assertTrue(c.add("arap", b"mid"))
        self.assertFalse(c.add("arap", b"other"))
        self.assertTrue(c.append("arap", b"-end"))
        self.assertTrue(c.prepend("arap", b"start-"))
        self.assertEqual(c.get("arap"), b"start-mid-end")
        self.assertTrue(c.replace("arap", b"new"))
        self.assertFalse(c.replace("arap-missing", b"x"))
        self.assertFalse(c.append("arap-missing", b"x"))
        self.assertEqual(c.get("arap"), b"new")
        c.close()

    def test_gets_and_cas_conflicts(self):
        c = client(self.server)
        c.set("caskey", b"v1")
        value, token = c.gets("caskey")
        self.assertEqual(value, b"v1")
        self.assertTrue(c.cas("caskey", b"v2", token))
        self.assertFalse(c.cas("caskey", b"v3", token))  # token is stale: EXISTS
        self.assertEqual(c.get("caskey"), b"v2")
        self.assertIsNone(c.cas("cas-missing", b"x", 1))  # NOT_FOUND
        with self.server.connect() as s:
            reply = request(s, b"gets caskey\r\n", b"END\r\n")
            tok = int(reply.split(b"\r\n")[0].split()[4])
            self.assertEqual(request(s, b"ms caskey 2 C%d c\r\nv4\r\n" % tok)[:4], b"HD c")
            self.assertEqual(request(s, b"ms caskey 2 C%d\r\nv5\r\n" % tok), b"EX\r\n")
            self.assertEqual(request(s, b"md caskey C%d\r\n" % tok), b"EX\r\n")
        c.close()

    def test_cas_counter_under_contention_is_exact(self):
        c = client(self.server)
        c.set("counter", b"0")
        c.close()

        def bump():
            cl = client(self.server)
            for _ in range(50):
                while True:
                    v, tok = cl.gets("counter")
                    if cl.cas("counter", b"%d" % (int(v) + 1), tok):
                        break
            cl.close()

        threads = [threading.Thread(target=bump) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        self.assertEqual(client(self.server).get("counter"), b"400")

    def test_incr_decr(self):
        c = client(self.server)
        c.set("num", b"10")
        self.assertEqual(c.incr("num", 5), 15)
        self.assertEqual(c.decr("num", 20), 0)  # stops at 0
        c.set("num", b"18446744073709551615")
        self.assertEqual(c.incr("num", 2), 1)  # wraps at 2^64
        self.assertIsNone(c.incr("num-missing", 1))
        c.set("text", b"abc")
        with self.assertRaises(MemcacheClientError):
            c.incr("text", 1)
        with self.server.connect() as s:
            self.assertEqual(request(s, b"ma num v\r\n", b"\r\n2\r\n"), b"VA 1\r\n2\r\n")
            self.assertEqual(request(s, b"ma num MD D2 v\r\n", b"\r\n0\r\n"), b"VA 1\r\n0\r\n")
            self.assertEqual(request(s, b"ma nope\r\n"), b"NF\r\n")
            self.assertEqual(request(s, b"ma viv N0 J7 v\r\n", b"\r\n7\r\n"), b"VA 1\r\n7\r\n")
        c.close()

    def test_expiry_touch_gat(self):
        c = client(self.server)
        c.set("short", b"x", expire=1)
        with self.server.connect() as s:
            self.assertEqual(request(s, b"set neg 0 -1 1\r\nx\r\nget neg\r\n", b"END\r\n"), b"STORED\r\nEND\r\n")
            # Absolute unix time in the past: expired at once.
            self.assertEqual(request(s, b"set abs 0 %d 1\r\nx\r\nget abs\r\n" % (int(time.time()) - 5), b"END\r\n"),
                             b"STORED\r\nEND\r\n")
            self.assertEqual(request(s, b"set abs2 0 %d 1\r\nx\r\nget abs2\r\n" % (int(time.time()) + 100), b"END\r\n"),
                             b"STORED\r\nVALUE abs2 0 1\r\nx\r\nEND\r\n")
        self.assertEqual(c.get("short"), b"x")
        c.set("touched", b"t", expire=1)
        self.assertTrue(c.touch("touched", 100))
        self.assertFalse(c.touch("no-such-key", 100))
        with self.server.connect() as s:
            self.assertEqual(request(s, b"gat 100 short\r\n", b"END\r\n"), b"VALUE short 0 1\r\nx\r\nEND\r\n")
            self.assertEqual(request(s, b"touch short 1\r\n"), b"TOUCHED\r\n")
            ttl = request(s, b"mg touched t\r\n")
            self.assertTrue(ttl.startswith(b"HD t"), ttl)
            self.assertGreater(int(ttl[4:].strip()), 90)
        time.sleep(2.2)
        self.assertIsNone(c.get("short"))
        self.assertEqual(c.get("touched"), b"t")
        c.close()

    def test_flush_all(self):
        c = client(self.server)
        c.set("f1", b"1")
        c.set("f2", b"2")
        self.assertTrue(c.flush_all())
        self.assertIsNone(c.get("f1"))
        c.set("f3", b"3")
        with self.server.connect() as s:
            self.assertEqual(request(s, b"flush_all 1\r\n"), b"OK\r\n")
        self.assertEqual(c.get("f3"), b"3")
        self.assertTrue(wait_for(lambda: c.get("f3") is None, timeout=5))
        c.close()


class LibmemcachedTools(unittest.TestCase):
    """The libmemcached command-line tools (Debian libmemcached-tools)."""

    @classmethod
    def setUpClass(cls):
        cls.server = Server(threads=2)
        cls.servers = "--servers=127.0.0.1:%d" % cls.server.port

    @classmethod
    def tearDownClass(cls):
        cls.server.__exit__()

    def run_tool(self, *args, input=None, cwd=None):
        return subprocess.run(list(args), input=input, capture_output=True, timeout=60, cwd=cwd)

    def test_memccp_memccat_memcexist_memcrm(self):
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "payload.bin")
            data = os.urandom(300 * 1024)
            with open(path, "wb") as f:
                f.write(data)
            r = self.run_tool("memccp", self.servers, "payload.bin", cwd=d)
            self.assertEqual(r.returncode, 0, r.stderr)
            r = self.run_tool("memccat", self.servers, "payload.bin")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stdout[:len(data)], data)  # memccat adds a newline
            # memcexist asks with "add <key> 0 0 0": NOT_STORED means it exists.
            self.assertEqual(self.run_tool("memcexist", self.servers, "payload.bin").returncode, 0)
            self.assertEqual(self.run_tool("memcrm", self.servers, "payload.bin").returncode, 0)
            self.assertNotEqual(self.run_tool("memccat", self.servers, "payload.bin").returncode, 0)
            self.assertNotEqual(self.run_tool("memcexist", self.servers, "payload.bin").returncode, 0)

    def test_memcstat(self):
        r = self.run_tool("memcstat", self.servers)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(b"curr_connections", r.stdout)
        self.assertIn(b"version", r.stdout)

    def test_stats_report_the_gauges_monitoring_reads(self):
        # memcstat --analyze, memcached-tool and Prometheus' memcached_exporter
        # read "bytes" (memory the items take), accepting_conns and
        # hash_power_level; "bytes" was missing, so --analyze said 0 bytes.
        def general(s):
            lines = request(s, b"stats\r\n", b"END\r\n").decode().split("\r\n")
            return dict(l.split(" ", 2)[1:] for l in lines if l.startswith("STAT "))

        with Server(threads=1) as server, server.connect() as s:
            st = general(s)
            self.assertEqual(st["bytes"], "0")
            self.assertEqual(st["accepting_conns"], "1")
            self.assertEqual(st["hash_power_level"], "16")  # the harness's index.bucket_power
            self.assertEqual(st["hash_is_expanding"], "0")
            self.assertTrue(st["libevent"].startswith("2."), st["libevent"])
            sizes = {b"g1": 10, b"g22": 1000, b"g333": 5000}
            for k, n in sizes.items():
                self.assertEqual(request(s, b"set %s 0 0 %d\r\n%s\r\n" % (k, n, b"v" * n)), b"STORED\r\n")
            st = general(s)
            stored = sum(len(k) + n for k, n in sizes.items())
            used = int(st["bytes"])
            self.assertEqual(st["curr_items"], "3")
            # Key and value plus one item header each, below the slots they sit in.
            self.assertGreater(used, stored)
            self.assertLess(used, stored + 3 * 128)
            r = self.run_tool("memcstat", "--servers=127.0.0.1:%d" % server.port, "--analyze")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn(b"Average Item Size (incl/overhead)  : %d bytes" % (used // 3), r.stdout)
            for k in sizes:
                self.assertEqual(request(s, b"delete %s\r\n" % k), b"DELETED\r\n")
            self.assertEqual(general(s)["bytes"], "0")

    def test_stats_conns_lists_every_socket_and_what_it_is_doing(self):
        # memcached's `stats conns` (it was answered ERROR): per descriptor,
        # in order, the listener, then each client's addresses, state and idle time.
        def conns(s):
            lines = request(s, b"stats conns\r\n", b"END\r\n").decode().split("\r\n")
            table, order = {}, []
            for l in lines:
                if l.startswith("STAT "):
                    fd, field = l.split(" ", 2)[1].split(":", 1)
                    if fd not in table:
                        order.append(int(fd))
                    table.setdefault(fd, {})[field] = l.split(" ", 2)[2]
            self.assertEqual(order, sorted(order))
            return {v["addr"]: v for v in table.values()}

        def name(sock):
            return "tcp:%s:%d" % sock.getsockname()

        with Server(threads=2, args=["-l", "0.0.0.0"]) as server:
            here = "tcp:0.0.0.0:%d" % server.port  # listen_addr is the listener's, as memcached's
            with server.connect() as idle, server.connect() as midvalue, server.connect() as asking:
                self.assertTrue(request(idle, b"version\r\n").startswith(b"VERSION"))
                midvalue.sendall(b"set half 0 0 10\r\nabc")  # 7 bytes of the value still to come
                time.sleep(1.5)
                table = conns(asking)
                self.assertEqual(table[here]["state"], "conn_listening")
                self.assertEqual(table[name(idle)]["state"], "conn_waiting")
                self.assertEqual(table[name(midvalue)]["state"], "conn_nread")
                self.assertEqual(table[name(asking)]["state"], "conn_parse_cmd")
                for sock in (idle, midvalue, asking):
                    self.assertEqual(table[name(sock)]["listen_addr"], here)
                self.assertGreaterEqual(int(table[name(idle)]["secs_since_last_cmd"]), 1)
                self.assertGreaterEqual(int(table[name(midvalue)]["secs_since_last_cmd"]), 1)
                self.assertEqual(table[name(asking)]["secs_since_last_cmd"], "0")
                gone = name(idle)
                idle.close()
                self.assertTrue(wait_for(lambda: gone not in conns(asking)))
                midvalue.sendall(b"defghij\r\n")
                self.assertEqual(recv_until(midvalue, b"\r\n"), b"STORED\r\n")

    def test_memctouch_memcflush(self):
        c = client(self.server)
        c.set("tool-touch", b"x", expire=1)
        r = self.run_tool("memctouch", self.servers, "--expire=100", "tool-touch")
        self.assertEqual(r.returncode, 0, r.stderr)
        time.sleep(1.5)
        self.assertEqual(c.get("tool-touch"), b"x")
        r = self.run_tool("memcflush", self.servers)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIsNone(c.get("tool-touch"))
        c.close()


class Limits(unittest.TestCase):
    def test_more_idle_connections_than_max_conns(self):
        with Server(threads=2, max_conns=4) as server:
            held = [server.connect() for _ in range(4)]
            for s in held:  # all four are being served
                self.assertTrue(request(s, b"version\r\n").startswith(b"VERSION "))
            extra = server.connect()
            self.assertEqual(recv_until(extra, b"\r\n"), b"ERROR Too many open connections\r\n")
            extra.settimeout(5)
            self.assertEqual(extra.recv(10), b"")
            held.pop().close()
            # The freed slot is given to the next client.
            def fresh_works():
                try:
                    with server.connect() as s:
                        return request(s, b"version\r\n").startswith(b"VERSION ")
                except OSError:
                    return False
            self.assertTrue(wait_for(fresh_works, timeout=5))
            for s in held:
                self.assertTrue(request(s, b"version\r\n").startswith(b"VERSION "))
                s.close()
            stats = client(server).stats()
            self.assertGreaterEqual(stats[b"rejected_connections"], 1)

    def test_idle_connections_time_out(self):
        with Server(threads=1, idle_timeout=1) as server:
            s = server.connect()
            self.assertTrue(request(s, b"version\r\n").startswith(b"VERSION "))
            s.settimeout(10)
            start = time.time()
            self.assertEqual(s.recv(10), b"")  # closed by the server
            self.assertLess(time.time() - start, 8)
            # A half-sent request times out too.
            s = server.connect()
            s.sendall(b"set half 0 0 10\r\nabc")
            s.settimeout(10)
            self.assertEqual(s.recv(10), b"")

    def test_sigterm_answers_in_flight_requests_and_exits_cleanly(self):
        server = Server(threads=2)
        try:
            s = server.connect()
            value = b"z" * 200000
            s.sendall(b"set sig 0 0 %d\r\n" % len(value) + value + b"\r\n" + b"get sig\r\n" * 20)
            time.sleep(0.3)
            server.proc.send_signal(signal.SIGTERM)
            want = b"STORED\r\n" + (b"VALUE sig 0 %d\r\n" % len(value) + value + b"\r\nEND\r\n") * 20
            got = recv_until(s, b"END\r\n" * 1, timeout=20)
            while len(got) < len(want):
                chunk = s.recv(1 << 20)
                if not chunk:
                    break
                got += chunk
            self.assertEqual(got, want)
            self.assertEqual(server.proc.wait(20), 0)
            with self.assertRaises(OSError):
                socket.create_connection(server.address, timeout=2).close()
        finally:
            server.stop()

    def test_bad_flags_and_config_are_refused(self):
        from server_harness import SERVER
        r = subprocess.run([SERVER, "-t", "zero"], capture_output=True, timeout=30)
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"-t needs a whole number", r.stderr)
        r = subprocess.run([SERVER, "-t", "0", "-p", "0"], capture_output=True, timeout=30)
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"server.threads: 0 is out of range [1, 256]", r.stderr)
        with Server(threads=1) as probe:
            import json
            cfg = base_config()
            cfg["server"]["max_conn"] = 3
            path = os.path.join(probe.tmp.name, "bad.json")
            with open(path, "w") as f:
                json.dump(cfg, f)
            r = subprocess.run([SERVER, "--config", path], capture_output=True, timeout=30)
            self.assertEqual(r.returncode, 2)
            self.assertIn(b"server.max_conn: unknown key", r.stderr)

    def test_memcached_command_line_flags(self):
        # A memcached command line works as it is: -m sizes tier 0 (DRAM),
        # -P writes the pid file, -I, -c, -F, -R set the server's options, -U 0 is taken (UDP
        # is not served) and -B ascii turns the binary protocol off.
        pidfile = os.path.join(tempfile.mkdtemp(prefix="tiercache-pid-"), "server.pid")
        args = ["-m", "48", "-U", "0", "-I", "512k", "-F", "-R", "20", "-B", "ascii", "-c", "100", "-vv", "-P", pidfile,
                "-o", "modern,maxconns_fast,hashpower=17", "-o", "idle_timeout=600,slab_automove=1"]
        with Server(args=args) as server, server.connect() as s:
            with open(pidfile) as f:
                self.assertEqual(f.read(), "%d\n" % server.proc.pid)
            settings = request(s, b"stats settings\r\n", b"END\r\n").decode()
            self.assertIn("STAT idle_timeout 600\r\n", settings)
            self.assertIn("STAT hash_power_level 17\r\n", request(s, b"stats\r\n", b"END\r\n").decode())
            self.assertIn("STAT item_size_max 524288\r\n", settings)
            self.assertIn("STAT maxconns 100\r\n", settings)
            self.assertIn("STAT reqs_per_event 20\r\n", settings)
            self.assertIn("STAT flush_enabled no\r\n", settings)
            general = request(s, b"stats\r\n", b"END\r\n").decode()
            self.assertIn("STAT limit_maxbytes %d\r\n" % ((48 + 64) << 20), general)  # -m 48 + the 64 MiB tier 1
            self.assertEqual(request(s, b"flush_all\r\n"), b"CLIENT_ERROR flush_all not allowed\r\n")
            self.assertEqual(request(s, b"set k 0 0 1\r\nv\r\n"), b"STORED\r\n")
            self.assertEqual(request(s, b"get k\r\n", b"END\r\n"), b"VALUE k 0 1\r\nv\r\nEND\r\n")
            self.assertEqual(request(s, b"set big 0 0 524289\r\n" + b"x" * 524289 + b"\r\n"),
                             b"SERVER_ERROR object too large for cache\r\n")
        self.assertFalse(os.path.exists(pidfile))  # removed on the clean stop
        os.rmdir(os.path.dirname(pidfile))

    @unittest.skipUnless(os.geteuid() == 0, "dropping privileges needs root")
    def test_user_flag_drops_root_after_start(self):
        import pwd
        nobody = pwd.getpwnam("nobody")
        with Server(args=["-u", "nobody"]) as server:
            with open("/proc/%d/status" % server.proc.pid) as f:
                status = f.read()
            self.assertRegex(status, r"\nUid:\t%d\t%d\t%d\t%d\n" % ((nobody.pw_uid,) * 4))
            self.assertRegex(status, r"\nGid:\t%d\t%d\t%d\t%d\n" % ((nobody.pw_gid,) * 4))
            with server.connect() as s:
                self.assertEqual(request(s, b"set k 0 0 2\r\nab\r\nget k\r\n", b"END\r\n"),
                                 b"STORED\r\nVALUE k 0 2\r\nab\r\nEND\r\n")
        from server_harness import SERVER
        r = subprocess.run([SERVER, "-p", "0", "-u", "no-such-user-here"], capture_output=True, timeout=30)
        self.assertEqual(r.returncode, 1)
        self.assertIn(b"-u no-such-user-here: no such user", r.stderr)

    def test_several_listen_addresses_on_one_port(self):
        # memcached's repeated -l (or a comma list): every address is served, on one port.
        try:
            socket.socket(socket.AF_INET6).bind(("::1", 0))
        except OSError:
            self.skipTest("no IPv6 loopback")
        with Server(args=["-l", "127.0.0.1", "-l", "::1"]) as server:
            with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
                self.assertEqual(request(s, b"set k 0 0 2\r\nv4\r\n"), b"STORED\r\n")
            with socket.create_connection(("::1", server.port), timeout=10) as s:
                self.assertEqual(request(s, b"get k\r\n", b"END\r\n"), b"VALUE k 0 2\r\nv4\r\nEND\r\n")
        from server_harness import SERVER
        r = subprocess.run([SERVER, "-p", "0", "-l", "127.0.0.1,nowhere"], capture_output=True, timeout=30)
        self.assertEqual(r.returncode, 2)
        self.assertIn(b'server.listen: "nowhere" is not an IPv4 or IPv6 address', r.stderr)

    def test_extstore_path_option_opens_the_flash_store(self):
        # memcached's -o ext_path=FILE:SIZE (extstore): here the flash store behind the last tier.
        d = tempfile.mkdtemp(prefix="tiercache-ext-")
        path = os.path.join(d, "extstore")
        try:
            cfg = base_config()
            cfg["tiers"] = [dict(cfg["tiers"][0], size="8MiB")]  # DRAM only: the victims go to flash
            with Server(config=cfg, args=["-o", "ext_path=%s:64m" % path]) as server, server.connect() as s:
                self.assertEqual(os.path.getsize(path), 64 << 20)
                values = [os.urandom(4000) for _ in range(4096)]  # 16 MB through 8 MiB of DRAM
                for i, v in enumerate(values):
                    self.assertEqual(request(s, b"set e%d 0 0 4000\r\n%s\r\n" % (i, v)), b"STORED\r\n")
                cache = request(s, b"stats cache\r\n", b"END\r\n").decode()
                inserts = int(cache.split("STAT flash_inserts ")[1].split("\r\n")[0])
                self.assertGreater(inserts, 0)
                # The first keys left DRAM long ago: read back from the file, byte for byte.
                self.assertEqual(request(s, b"get e0\r\n", b"END\r\n"),
                                 b"VALUE e0 0 4000\r\n" + values[0] + b"\r\nEND\r\n")
                cache = request(s, b"stats cache\r\n", b"END\r\n").decode()
                self.assertNotIn("STAT flash_hits 0\r\n", cache)
        finally:
            import shutil
            shutil.rmtree(d)

    def test_memcached_flags_without_a_counterpart_are_refused(self):
        from server_harness import SERVER
        for args, why in ((["-d"], b"memcached's -d is not taken: it runs in the foreground only"),
                          (["-s", "/tmp/mc.sock"], b"memcached's -s is not taken: it serves TCP only"),
                          (["-P"], b"-P needs a file"),
                          (["-o", "no_lru_crawler"], b"-o no_lru_crawler: the reaper and the eviction policy always run"),
                          (["-o", "modern,track_sizes"], b"-o track_sizes: no counterpart here"),
                          (["-o", "hashpower=big"], b"-o hashpower=big: needs a whole number"),
                          (["-o", "hashpower=40"], b"index.bucket_power: 40 is out of range"),
                          (["-o", "slab_automove=3"], b"-o slab_automove=3: takes 0, 1 or 2"),
                          (["-o", "ext_path=/var/tmp/ext"], b"-o ext_path=/var/tmp/ext: needs FILE:SIZE"),
                          (["-o", "ext_threads=4"], b"-o ext_threads=4: extstore's tuning has no counterpart"),
                          (["-o"], b"-o needs options"),
                          (["-C"], b"memcached's -C is not taken: CAS tokens are always kept"),
                          (["-U", "11211"], b"-U 11211: UDP is not served"),
                          (["-B", "text"], b"-B text: takes ascii, binary or auto"),
                          (["-I", "2z"], b"-I needs a size in bytes (or with a k, m, g or t suffix), got '2z'"),
                          (["-m", "lots"], b"-m needs a whole number, got 'lots'")):
            r = subprocess.run([SERVER, *args], capture_output=True, timeout=30)
            self.assertEqual(r.returncode, 2, args)
            self.assertIn(b"tiercache-server: " + why, r.stderr, args)
        r = subprocess.run([SERVER, "-V"], capture_output=True, timeout=30)
        self.assertEqual((r.returncode, r.stdout), (0, b"tiercache-server 1.6.21-tiercache-0.1.0\n"))


if __name__ == "__main__":
    unittest.main(verbosity=2)
