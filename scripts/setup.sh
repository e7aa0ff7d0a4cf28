#!/usr/bin/env bash
# Install the Debian 12 packages needed to build, test and benchmark
# tiercache. Only what is missing is installed, so a second run makes no apt
# call at all. Runs apt-get as root, through sudo when not root.
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libhwloc-dev hwloc libmemkind-dev libpmemobj-dev libpmem2-dev libpmempool-dev
  nlohmann-json3-dev libxxhash-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  clang libclang-rt-14-dev  # clang's sanitizer runtimes
  gnuplot-nox               # plots in docs/benchmarks.md
  valgrind                  # callgrind instruction counts in docs/benchmarks.md
  ccache                    # CMAKE_CXX_COMPILER_LAUNCHER=ccache (CONTRIBUTING.md)
  libevent-dev              # tiercache-server's event loop
  memcached python3-pymemcache libmemcached-tools nutcracker  # server tests, cluster and comparison scripts
)

missing=()
for p in "${packages[@]}"; do
  # "ii " = wanted install, currently installed.
  if [[ "$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null)" != "ii "* ]]; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi

if [[ $EUID -eq 0 ]]; then
  as_root=()
elif command -v sudo >/dev/null; then
  as_root=(sudo)
else
  echo "setup: missing ${missing[*]}; run as root or install sudo" >&2
  exit 1
fi

echo "setup: installing ${missing[*]}"
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}"
