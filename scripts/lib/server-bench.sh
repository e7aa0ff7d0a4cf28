# Helpers shared by the scripts that drive tiercache-server and memcached
# side by side (server-vs-memcached.sh, server-cpu-vs-memcached.sh).
# Source it; it defines functions only. wait_port names the caller in its
# error through $bench_name (set it before sourcing or calling).

# free_port -> a loopback TCP port nothing listens on right now
free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# cpu_ticks PID -> utime + stime of the process in clock ticks
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# cpu_split PID -> "utime stime background": the process's user and system
# clock ticks, and the ticks of its threads named tc-* (tiercache's
# evictors, promoters, reaper: the work beside the request path)
cpu_split() {
  local bg=0 t
  for t in /proc/"$1"/task/*; do
    [[ "$(cat "$t/comm" 2>/dev/null)" == tc-* ]] && bg=$((bg + $(awk '{print $14 + $15}' "$t/stat" 2>/dev/null || echo 0)))
  done
  echo "$(awk '{print $14, $15}' "/proc/$1/stat") $bg"
}

# wait_port PORT: up to 10 s for something to accept on 127.0.0.1:PORT
wait_port() {
  for _ in $(seq 100); do
    /usr/bin/python3 -c "import socket; socket.create_connection(('127.0.0.1',$1),timeout=1).close()" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "${bench_name:-server-bench}: nothing listens on $1" >&2
  return 1
}

# stats PORT -> "cmd_get cmd_set get_hits" from the server's `stats`
stats() {
  /usr/bin/python3 - "$1" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
s.sendall(b"stats\r\n")
d = b""
while not d.endswith(b"END\r\n"):
    c = s.recv(65536)
    if not c:
        break
    d += c
st = dict(l.split()[1:3] for l in d.decode().splitlines() if l.startswith("STAT"))
print(st["cmd_get"], st["cmd_set"], st["get_hits"])
PY
}
