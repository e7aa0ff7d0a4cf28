#!/usr/bin/env bash
# Install the Debian 12 packages needed to build, test and benchmark
# tiercache. Only what is missing is installed, so a second run makes no apt
# call at all. Runs apt-get as root, through sudo when not root. Also gives
# /dev/shm huge pages (see shm_huge_pages).
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libhwloc-dev hwloc libmemkind-dev libpmemobj-dev libpmem2-dev libpmempool-dev
  nlohmann-json3-dev libxxhash-dev
  liburing-dev              # the flash store's io_uring engine (flash/io_engine.cc)
  fio                       # scripts/flash-vs-fio.sh, the flash I/O baseline
  libgtest-dev libgmock-dev libbenchmark-dev
  clang libclang-rt-14-dev  # clang's sanitizer runtimes
  clang-format              # scripts/check-format.sh (CI), git clang-format
  gnuplot-nox               # plots of tiercache-bench sweep
  valgrind                  # callgrind instruction counts in docs/benchmarks.md
  ccache                    # CMAKE_CXX_COMPILER_LAUNCHER=ccache (CONTRIBUTING.md)
  libevent-dev              # tiercache-server's event loop
  memcached python3-pymemcache python3-pylibmc libmemcached-tools nutcracker  # server tests (pylibmc: binary protocol), cluster and comparison scripts
)

if [[ $EUID -eq 0 ]]; then
  as_root=()
elif command -v sudo >/dev/null; then
  as_root=(sudo)
else
  as_root=(false)  # nothing can be done as root: say so where it matters
fi

# Emulated PMEM (pmem-file tiers and PMDK pools) lives on /dev/shm. Debian
# mounts it without huge pages, so those tiers run on 4 KiB pages and miss
# the TLB on most accesses, which costs several times the tail latency under
# a hypervisor. huge=within_size gives 2 MiB pages to
# files of 2 MiB and more only, so small shared-memory files are unchanged.
# Until the next boot; the tier warns when it gets 4 KiB pages.
shm_huge_pages() {
  local opts huge
  # The last line is the mount on top when several are stacked.
  opts=$(findmnt -n -o FSTYPE,OPTIONS --target /dev/shm 2>/dev/null | tail -n 1) || return 0
  [[ $opts == tmpfs* ]] || return 0
  if [[ $opts == *huge=* && $opts != *huge=never* ]]; then
    huge=${opts##*huge=}
    echo "setup: /dev/shm has huge pages (huge=${huge%%,*})"
  elif "${as_root[@]}" mount -o remount,huge=within_size /dev/shm 2>/dev/null; then
    echo "setup: /dev/shm remounted with huge=within_size (2 MiB pages for emulated PMEM)"
  else
    echo "setup: could not remount /dev/shm with huge=within_size; emulated PMEM stays on 4 KiB pages" >&2
  fi
}

missing=()
for p in "${packages[@]}"; do
  # "ii " = wanted install, currently installed.
  if [[ "$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null)" != "ii "* ]]; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "setup: all ${#packages[@]} packages present"
  shm_huge_pages
  exit 0
fi

if [[ ${as_root[0]:-} == false ]]; then
  echo "setup: missing ${missing[*]}; run as root or install sudo" >&2
  exit 1
fi

echo "setup: installing ${missing[*]}"
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}"
shm_huge_pages
