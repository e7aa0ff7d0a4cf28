#!/usr/bin/env bash
# Three tiercache-server processes behind nutcracker (twemproxy) with ketama
# consistent hashing, all on loopback (docs/server.md, "Scale-out").
#
#   scripts/cluster.sh start [DIR]   start the servers and the proxy; prints the proxy address
#   scripts/cluster.sh stop  [DIR]   stop them (SIGTERM: persistent tiers close cleanly)
#   scripts/cluster.sh test  [DIR]   start, set 100000 keys through the proxy, check that each
#                                    server holds about a third, kill -9 one, restart it on its
#                                    persistent tier, check its keys are served again; stop
#
# Each server has a DRAM tier and a persistent PMEM tier emulated by a pool
# file under /dev/shm, with durable_sets so that an acknowledged set is in
# the pool (a kill -9 loses nothing acknowledged). DIR (default: a new
# temporary directory) holds configs, logs and pids; ports are free ones
# picked at start. Env: TIERCACHE_SERVER (binary, default build/tools/
# tiercache-server), NUTCRACKER (default nutcracker), CLUSTER_KEYS (100000).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
server_bin="${TIERCACHE_SERVER:-$root/build/tools/tiercache-server}"
nutcracker_bin="${NUTCRACKER:-$(command -v nutcracker || echo /usr/sbin/nutcracker)}"
py=/usr/bin/python3   # Debian's python3 has python3-pymemcache
keys="${CLUSTER_KEYS:-100000}"
cmd="${1:-test}"
dir="${2:-}"

free_port() {
  "$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

wait_port() {  # wait_port PORT SECONDS
  local deadline=$((SECONDS + $2))
  until "$py" -c "import socket,sys; socket.create_connection(('127.0.0.1',$1),timeout=1).close()" 2>/dev/null; do
    ((SECONDS < deadline)) || { echo "cluster: nothing listens on port $1 after $2 s" >&2; return 1; }
    sleep 0.2
  done
}

start_server() {  # start_server I
  local i=$1 port
  port=$(cat "$dir/server$i.port")
  "$server_bin" --config "$dir/server$i.json" -p "$port" -t 2 >>"$dir/server$i.log" 2>&1 &
  echo $! >"$dir/server$i.pid"
  wait_port "$port" 60
}

start() {
  [[ -x "$server_bin" ]] || { echo "cluster: $server_bin not built (cmake --build build --target tiercache-server)" >&2; exit 1; }
  [[ -x "$nutcracker_bin" ]] || { echo "cluster: nutcracker not found (apt-get install nutcracker)" >&2; exit 1; }
  mkdir -p "$dir"
  local servers=""
  for i in 1 2 3; do
    local port pool
    port=$(free_port)
    echo "$port" >"$dir/server$i.port"
    pool="/dev/shm/tiercache-cluster-$$-$i.pool"
    echo "$pool" >"$dir/server$i.pool"
    cat >"$dir/server$i.json" <<JSON
{
  "slab_size": "2MiB",
  "tiers": [
    {"name": "dram", "kind": "dram", "size": "16MiB"},
    {"name": "pmem", "kind": "pmem-file", "size": "64MiB", "path": "$pool", "persistent": true}
  ],
  "allocation": {"min_size": 64, "max_size": "2MiB"},
  "index": {"bucket_power": 17},
  "persistence": {"durable_sets": true, "demote_on_shutdown": true},
  "server": {"listen": "127.0.0.1", "threads": 2, "max_item_size": "1MiB"}
}
JSON
    start_server "$i"
    servers+="   - 127.0.0.1:$port:1 server$i"$'\n'
  done
  local proxy_port
  proxy_port=$(free_port)
  echo "$proxy_port" >"$dir/proxy.port"
  cat >"$dir/nutcracker.yml" <<YML
tiercache:
  listen: 127.0.0.1:$proxy_port
  hash: fnv1a_64
  distribution: ketama
  timeout: 2000
  auto_eject_hosts: false
  server_retry_timeout: 500
  server_failure_limit: 1
  servers:
$servers
YML
  "$nutcracker_bin" -c "$dir/nutcracker.yml" -s "$(free_port)" -o "$dir/nutcracker.log" &
  echo $! >"$dir/proxy.pid"
  wait_port "$proxy_port" 30
  echo "cluster: proxy 127.0.0.1:$proxy_port -> servers on ports $(cat "$dir"/server{1,2,3}.port | tr '\n' ' ')(dir $dir)"
}

stop() {
  for f in "$dir"/proxy.pid "$dir"/server{1,2,3}.pid; do
    [[ -f "$f" ]] || continue
    local pid
    pid=$(cat "$f")
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -KILL "$pid" 2>/dev/null || true
    rm -f "$f"
  done
  for f in "$dir"/server{1,2,3}.pool; do
    [[ -f "$f" ]] && rm -f "$(cat "$f")"
  done
  return 0
}

run_test() {
  trap 'stop' EXIT
  start
  local proxy server2
  proxy=$(cat "$dir/proxy.port")
  server2=$(cat "$dir/server2.port")
  # 1. Set the keys through the proxy; count what each server holds.
  "$py" - "$proxy" "$keys" "$(cat "$dir/server1.port")" "$server2" "$(cat "$dir/server3.port")" <<'PY'
import sys
from pymemcache.client.base import Client
proxy, n, ports = int(sys.argv[1]), int(sys.argv[2]), [int(p) for p in sys.argv[3:]]
c = Client(("127.0.0.1", proxy), default_noreply=False, timeout=10, connect_timeout=5)
batch = {}
for i in range(n):
    batch["key:%d" % i] = b"value-%d" % i
    if len(batch) == 500:
        failed = c.set_many(batch)
        assert not failed, "set through the proxy failed for %d keys" % len(failed)
        batch = {}
if batch:
    assert not c.set_many(batch)
counts = []
for p in ports:
    s = Client(("127.0.0.1", p), timeout=10).stats()
    counts.append(s[b"curr_items"])
print("cluster: %d keys set through the proxy; per server: %s" % (n, counts))
assert sum(counts) == n, "servers hold %d items, expected %d" % (sum(counts), n)
for p, k in zip(ports, counts):
    share = k / n
    assert 0.25 <= share <= 0.42, "server on port %d holds %.1f%% of the keys, not about a third" % (p, 100 * share)
# Remember which keys live on server 2: asked directly.
s2 = Client(("127.0.0.1", ports[1]), timeout=10)
mine = [k for k in ("key:%d" % i for i in range(n))]
on2 = []
for i in range(0, n, 200):
    got = s2.get_many(mine[i:i + 200])
    on2.extend(got.keys())
print("cluster: server 2 holds %d keys" % len(on2))
open(__import__("os").environ.get("CLUSTER_KEYFILE", "/dev/null"), "w").write("\n".join(on2))
PY
  echo "cluster: kill -9 server 2 (pid $(cat "$dir/server2.pid"))"
  kill -KILL "$(cat "$dir/server2.pid")"
  wait "$(cat "$dir/server2.pid")" 2>/dev/null || true
  start_server 2
  echo "cluster: server 2 restarted; $(grep -m1 -i 'listening' "$dir/server2.log" | tail -1)"
  # 2. Its keys come back through the proxy, from the recovered pool.
  "$py" - "$proxy" "$server2" "$dir/keys2.txt" <<'PY'
import sys, time
from pymemcache.client.base import Client
proxy, port2, keyfile = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
keys = [k for k in open(keyfile).read().split("\n") if k]
assert len(keys) > 0
direct = Client(("127.0.0.1", port2), timeout=10).stats()
print("cluster: restarted server 2 holds %d items" % direct[b"curr_items"])
c = Client(("127.0.0.1", proxy), default_noreply=False, timeout=10, connect_timeout=5)
deadline = time.time() + 30
while True:  # the proxy reconnects to the server after server_retry_timeout
    try:
        c.get(keys[0])
        break
    except Exception:
        if time.time() > deadline:
            raise
        time.sleep(0.5)
        c = Client(("127.0.0.1", proxy), default_noreply=False, timeout=10, connect_timeout=5)
hits = 0
for i in range(0, len(keys), 200):
    got = c.get_many(keys[i:i + 200])
    for k, v in got.items():
        assert v == b"value-%s" % k.split(":")[1].encode(), (k, v)
    hits += len(got)
print("cluster: %d of server 2's %d keys served through the proxy after kill -9 and restart" % (hits, len(keys)))
assert hits == len(keys)
PY
  echo "cluster: PASSED"
}

if [[ -z "$dir" ]]; then
  if [[ "$cmd" == start || "$cmd" == test ]]; then dir=$(mktemp -d /tmp/tiercache-cluster.XXXXXX); else
    echo "cluster: stop needs the DIR that start printed" >&2; exit 2; fi
fi
export CLUSTER_KEYFILE="$dir/keys2.txt"
case "$cmd" in
  start) start ;;
  stop) stop ;;
  test) run_test ;;
  *) echo "usage: scripts/cluster.sh start|stop|test [DIR]" >&2; exit 2 ;;
esac
