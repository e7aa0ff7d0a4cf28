#!/usr/bin/env bash
# Build the libFuzzer targets with clang++ in their own build directory and
# run each for a bounded time.
#   fuzz/run.sh [SECONDS]          (default 60, or TIERCACHE_FUZZ_SECONDS)
# SECONDS is each target's share of a core: the targets run side by side,
# for SECONDS * targets / cores of wall time when there are fewer cores than
# targets (3 targets on 2 cores: 90 s in all, not 180 s one after another).
# Build dir: build-fuzz (TIERCACHE_FUZZ_BUILD_DIR). The corpus is kept in
# BUILD/corpus/NAME between runs; crashing inputs go to BUILD/artifacts/.
# Exits non-zero if the build fails or a target finds a crash, a leak, a
# timeout or an out-of-memory; the last lines of its log are printed then.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
seconds="${1:-${TIERCACHE_FUZZ_SECONDS:-60}}"
dir="${TIERCACHE_FUZZ_BUILD_DIR:-$root/build-fuzz}"
[[ "$dir" = /* ]] || dir="$root/$dir"
targets=(tiercache_pool_fuzzer tiercache_protocol_fuzzer tiercache_config_fuzzer)

cxx="${FUZZ_CXX:-clang++}"
if ! command -v "$cxx" >/dev/null; then
  echo "fuzz/run.sh: $cxx not found (apt-get install clang libclang-rt-14-dev)" >&2
  exit 1
fi

mkdir -p "$dir"
# Line tables only (-g1, as OSS-Fuzz builds): enough for the crash reports'
# file:line, and a faster build than -g.
cmake -S "$root" -B "$dir" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" \
  -DTIERCACHE_BUILD_FUZZ=ON -DTIERCACHE_BUILD_TESTS=OFF -DTIERCACHE_BUILD_BENCH=OFF -DTIERCACHE_BUILD_TOOLS=OFF \
  >"$dir/configure.log" 2>&1 || { cat "$dir/configure.log" >&2; exit 1; }
cmake --build "$dir" -j"$(nproc)" --target "${targets[@]}"

export ASAN_OPTIONS="${ASAN_OPTIONS:-halt_on_error=1:detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"
failed=0
cores="$(nproc)"
wall=$((cores >= ${#targets[@]} ? seconds : (seconds * ${#targets[@]} + cores - 1) / cores))
pids=()
for t in "${targets[@]}"; do
  corpus="$dir/corpus/$t"
  artifacts="$dir/artifacts/$t/"
  mkdir -p "$corpus" "$artifacts"
  # Per target: input length, and the allocation bound. The config fuzzer
  # is held to 256 MiB in one allocation and 1 GiB of RSS: a config that
  # makes the parser allocate more than that is a finding (issue 9, item 18).
  limits=(-rss_limit_mb=4096 -max_len=320 -len_control=0)
  if [[ "$t" == tiercache_protocol_fuzzer ]]; then
    limits=(-rss_limit_mb=4096 -max_len=4096 -len_control=0)
    if [[ -z "$(ls -A "$corpus")" ]]; then
      # Seeds: one request of each kind, as clients send them.
      printf 'set k 0 0 5\r\nhello\r\nget k\r\n' >"$corpus/seed-set"
      printf 'gets a b c\r\ngat 10 a\r\ncas k 1 2 3 4 noreply\r\n' >"$corpus/seed-get"
      printf 'incr n 5\r\ndecr n 1 noreply\r\ntouch k 10\r\ndelete k 0 noreply\r\nflush_all 5 noreply\r\n' >"$corpus/seed-misc"
      printf 'mg k v f t c s k Oab q\r\nms k 2 T10 F3 MA C9 I\r\nhi\r\nmd k q C1\r\nma k N0 J5 D2 MD v\r\nmn\r\n' >"$corpus/seed-meta"
      printf 'stats tiers\r\nverbosity 1\r\nversion\r\nquit\r\n' >"$corpus/seed-admin"
      printf 'version noreply\r\nincr k x noreply\r\ndelete k 5 noreply\r\nset k 0 0 1 2 noreply\r\nmn x\r\n' >"$corpus/seed-noreply"
      printf 'set a\x01\tb 0 99999999999 1\r\nx\r\nget a\x7f\xff\r\nstats cachedump 1 10\r\n' >"$corpus/seed-keys"
      printf 'cache_memlimit 50\r\ncache_memlimit 8 noreply\r\ncache_memlimit x\r\n' >"$corpus/seed-memlimit"
      printf 'slabs automove 1\r\nslabs automove x noreply\r\nGET / HTTP/1.0\r\n' >"$corpus/seed-slabs-http"
    fi
  elif [[ "$t" == tiercache_config_fuzzer ]]; then
    limits=(-rss_limit_mb=1024 -malloc_limit_mb=256 -max_len=16384)
    if [[ -z "$(ls -A "$corpus")" ]]; then
      # Seeds: every shipped config, and a few shapes near the bounds.
      for f in "$root"/configs/*.json; do cp "$f" "$corpus/seed-$(basename "$f")"; done
      printf '{"tiers":[{"name":"d","kind":"dram","size":"64MiB"}],"pools":[{"name":"a","share":0.5}],"index":{"bucket_power":22}}' >"$corpus/seed-pools"
      printf '{"tiers":[{"name":"d","kind":"dram","size":1e400}]}' >"$corpus/seed-overflow"
      printf '{"workload":[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]}' >"$corpus/seed-deep"
    fi
  elif [[ -z "$(ls -A "$corpus")" ]]; then
    # Seeds: the untouched pool, and each flag alone (see the target's header).
    for f in 00 01 02 03 04 08 09 10 11; do printf "\\x$f" >"$corpus/seed-$f"; done
    # Past the 160-byte header into the records: a changed record with
    # fixed checks, and a cut of half the file.
    { printf '\x03'; head -c 160 /dev/zero; printf '\x01\x00\x00\x00\x01'; } >"$corpus/seed-record"
    printf '\x04\x80\x00\x00' >"$corpus/seed-truncate"
    # libpmemobj's area (flag 32): one flipped byte in its pool header, in
    # the lanes and in the heap's first zone (positions scaled to 24 bits).
    printf '\x20\x00\x10\x00\x01' >"$corpus/seed-pmdk-header"
    printf '\x20\x08\x00\x00\xff' >"$corpus/seed-pmdk-lanes"
    printf '\x20\xf8\x00\x00\x5a\xfc\x00\x00\xa5' >"$corpus/seed-pmdk-heap"
  fi
  log="$dir/$t.log"
  echo "=== fuzz: $t for ${wall}s beside the others (log: $log)"
  "$dir/fuzz/$t" -max_total_time="$wall" -timeout=30 "${limits[@]}" \
    -artifact_prefix="$artifacts" -print_final_stats=1 "$corpus" >"$log" 2>&1 &
  pids+=($!)
done
for i in "${!targets[@]}"; do
  t="${targets[$i]}"
  log="$dir/$t.log"
  rc=0
  wait "${pids[$i]}" || rc=$?
  grep -E '^(stat::number_of_executed_units|stat::new_units_added|Done )' "$log" || true
  if ((rc != 0)); then
    echo "=== fuzz: $t FAILED (exit $rc); last lines of $log:" >&2
    tail -n 40 "$log" >&2
    failed=1
  else
    echo "=== fuzz: $t passed"
  fi
done
exit "$failed"
