"""Starts tiercache-server on a free loopback port for a test and stops it.

Every server is started with port 0 (the kernel picks a free one, which the
server prints on stdout), a bounded start-up wait and a bounded stop: SIGTERM,
then SIGKILL after a few seconds, so a test never leaves a process behind.
"""
import json
import os
import re
import signal
import socket
import subprocess
import tempfile
import time

SERVER = os.environ.get("TIERCACHE_SERVER", "tiercache-server")
SOURCE_DIR = os.environ.get("TIERCACHE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))


def base_config(**server):
    """configs/server.json, small tiers, with the given "server" options."""
    with open(os.path.join(SOURCE_DIR, "configs", "server.json")) as f:
        cfg = json.load(f)
    cfg["tiers"][0]["size"] = "32MiB"
    cfg["tiers"][1]["size"] = "64MiB"
    cfg["index"]["bucket_power"] = 16
    cfg["server"].update(server)
    return cfg


class Server:
    def __init__(self, args=(), config=None, preexec_fn=None, **server_opts):
        self.tmp = tempfile.TemporaryDirectory(prefix="tiercache-server-test-")
        cfg = config if config is not None else base_config(**server_opts)
        self.config_path = os.path.join(self.tmp.name, "server.json")
        with open(self.config_path, "w") as f:
            json.dump(cfg, f)
        self.stderr_path = os.path.join(self.tmp.name, "stderr.log")
        self.stderr = open(self.stderr_path, "w")
        cmd = [SERVER, "--config", self.config_path, "-p", "0", *args]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self.stderr, text=True,
                                     preexec_fn=preexec_fn)
        line = self._readline(timeout=30)
        m = re.search(r"port (\d+)", line or "")
        if not m:
            self.stop()
            raise RuntimeError("tiercache-server did not start: %r; stderr: %s" % (line, self.log()))
        self.port = int(m.group(1))
        self.address = ("127.0.0.1", self.port)

    def _readline(self, timeout):
        import selectors
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        if not sel.select(timeout):
            return None
        return self.proc.stdout.readline()

    def log(self):
        if not self.stderr.closed:
            self.stderr.flush()
        with open(self.stderr_path) as f:
            return f.read()

    def stop(self, sig=signal.SIGTERM, timeout=15):
        """Stops the server; returns its exit code (killed after timeout)."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.proc.stdout.close()
        self.stderr.close()
        return self.proc.returncode

    def connect(self, timeout=10):
        s = socket.create_connection(self.address, timeout=timeout)
        return s

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        # A clean stop exits 0; a sanitizer report (ASan, LSan, UBSan, TSan)
        # or a crash does not, and fails the test that used this server.
        rc = self.stop()
        log = self.log() if rc != 0 else ""
        self.tmp.cleanup()
        if rc != 0 and (not exc or exc[0] is None):
            raise AssertionError("tiercache-server exited with %s; stderr:\n%s" % (rc, log[-4000:]))


def recv_until(sock, terminator, limit=64 << 20, timeout=10):
    """Reads until the bytes received end with `terminator`."""
    sock.settimeout(timeout)
    data = b""
    while not data.endswith(terminator):
        chunk = sock.recv(1 << 20)
        if not chunk:
            break
        data += chunk
        if len(data) > limit:
            raise AssertionError("reply larger than %d bytes" % limit)
    return data


def request(sock, payload, terminator=b"\r\n", timeout=10):
    sock.sendall(payload)
    return recv_until(sock, terminator, timeout=timeout)


def cpu_seconds(pid):
    """User plus system CPU time of a process so far."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_bytes(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS for %d" % pid)


def wait_for(pred, timeout=10, step=0.05):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return True
        time.sleep(step)
    return pred()
