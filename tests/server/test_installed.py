"""The installed tiercache-server starts with no config argument (it finds
share/tiercache/configs/server.json next to its prefix), serves a client and
stops cleanly on SIGTERM. argv[1]: the install prefix."""
import os
import re
import signal
import socket
import subprocess
import sys

prefix = sys.argv[1]
binary = os.path.join(prefix, "bin", "tiercache-server")
proc = subprocess.Popen([binary, "-p", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd="/")
try:
    line = proc.stdout.readline()
    m = re.search(r"port (\d+) .*config (\S+)\)", line)
    assert m, "unexpected start line %r; stderr: %s" % (line, proc.stderr.read() if proc.poll() is not None else "")
    assert m.group(2).endswith("share/tiercache/configs/server.json"), m.group(2)
    assert os.path.realpath(m.group(2)).startswith(os.path.realpath(prefix)), m.group(2)
    s = socket.create_connection(("127.0.0.1", int(m.group(1))), timeout=10)
    s.sendall(b"set k 0 0 2\r\nhi\r\nget k\r\n")
    data = b""
    while not data.endswith(b"END\r\n"):
        chunk = s.recv(4096)
        assert chunk, data
        data += chunk
    assert data == b"STORED\r\nVALUE k 0 2\r\nhi\r\nEND\r\n", data
    s.close()
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(20) == 0
    print("installed tiercache-server: started from", m.group(2), "served, stopped cleanly")
finally:
    if proc.poll() is None:
        proc.kill()
        proc.wait(5)
