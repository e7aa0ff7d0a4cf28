#!/usr/bin/env bash
# Install what is missing, build, and run the whole test suite (ctest).
#   scripts/test.sh [plain] [asan] [tsan] [all]
# With no argument: the plain build only, or the builds listed in
# TIERCACHE_TEST_BUILDS (e.g. "plain asan tsan"). Build directories:
#   plain  build        RelWithDebInfo
#   asan   build-asan   ASan + UBSan (-DTIERCACHE_SANITIZE=address)
#   tsan   build-tsan   TSan (-DTIERCACHE_SANITIZE=thread)
# TIERCACHE_BUILD_DIR renames the base (default: build). Every requested
# build is tested even if an earlier one fails; the exit status is non-zero
# if any failed, and ctest's summary line of each build is printed at the end.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
base="${TIERCACHE_BUILD_DIR:-build}"
[[ "$base" = /* ]] || base="$root/$base"

builds=("$@")
((${#builds[@]})) || read -r -a builds <<<"${TIERCACHE_TEST_BUILDS:-plain}"
for i in "${!builds[@]}"; do
  if [[ "${builds[$i]}" == all ]]; then builds=(plain asan tsan); break; fi
done

# Sanitizer builds: Debug (assert()s on) with line tables only (-g1, enough
# for the reports' file:line); ASan at -O0, TSan at -O1: on 2 cores ASan's
# build plus suite took less time at -O0 (its build is the larger part), and
# TSan's at -O1 (its suite is).
# Only the test binaries (tiercache_tests, tiercache_bench_tests),
# tiercache-server (its protocol tests run against the sanitized server)
# and tiercache-flash-bench (its argument test) are built there (no other tools, no micro-benchmarks), but
# with TIERCACHE_BUILD_BENCH on, since the workload tests need bench/'s
# library and its multi-threaded runner is worth running under TSan.
# One ctest test per GoogleTest suite there (cmake/TiercacheTests.cmake): a
# sanitized test process takes 0.25-0.5 s to start, which per test was a
# third of the ASan run.
sanitizer_flags=(-DTIERCACHE_BUILD_BENCH=ON -DTIERCACHE_TEST_PER_SUITE=ON)
sanitizer_targets="tiercache_tests tiercache_bench_tests tiercache-server tiercache-flash-bench"
export ASAN_OPTIONS="${ASAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"
# tests/tsan-suppressions.txt: why libpmemobj's calls are not intercepted.
export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1:suppressions=$root/tests/tsan-suppressions.txt}"

# Some kernels map memory where TSan (LLVM < 18 runtimes) does not expect it
# ("FATAL: ThreadSanitizer: unexpected memory mapping"); disabling address
# space randomization with `setarch -R` avoids it. Probe once, and only then
# run the TSan build and its tests under setarch (the build runs the test
# binary too, to list its tests).
tsan_prefix() {
  local dir probe out
  dir="$(mktemp -d)"
  probe="$dir/tsan-probe"
  echo 'int main() { return 0; }' >"$dir/probe.cc"
  "${CXX:-c++}" -fsanitize=thread "$dir/probe.cc" -o "$probe"
  if out="$("$probe" 2>&1)"; then
    :
  elif setarch "$(uname -m)" -R "$probe" >/dev/null 2>&1; then
    echo "test.sh: TSan fails here ($(head -n1 <<<"$out")); using setarch -R" >&2
    echo "setarch $(uname -m) -R"
  else
    echo "test.sh: TSan does not run on this machine: $out" >&2
    rm -rf "$dir"
    return 1
  fi
  rm -rf "$dir"
}

bash "$root/scripts/setup.sh"

summary=()
failed=0
for b in "${builds[@]}"; do
  launcher=()
  targets="$sanitizer_targets"
  case "$b" in
    # Line tables only (-g1): the same code as -g (debug info never changes
    # GCC's code generation), stack traces and profiles keep file:line, and
    # the heaviest files compile about a fifth faster. For a debugger's view
    # of locals, configure with -g yourself.
    plain) dir="$base"; cfg=(RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG"); targets="" ;;
    asan) dir="$base-asan"; cfg=(Debug -DTIERCACHE_SANITIZE=address -DCMAKE_CXX_FLAGS_DEBUG="-O0 -g1" "${sanitizer_flags[@]}") ;;
    tsan)
      dir="$base-tsan"; cfg=(Debug -DTIERCACHE_SANITIZE=thread -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" "${sanitizer_flags[@]}")
      prefix="$(tsan_prefix)"
      read -r -a launcher <<<"$prefix"
      ;;
    *) echo "test.sh: unknown build '$b' (plain, asan, tsan, all)" >&2; exit 2 ;;
  esac
  echo "=== test.sh: $b build in $dir"
  rm -f "$dir/ctest.log"
  start=$SECONDS
  TIERCACHE_TARGETS="$targets" "${launcher[@]}" bash "$root/scripts/build.sh" "$dir" "${cfg[@]}"
  built=$((SECONDS - start))
  rc=0
  (cd "$dir" && "${launcher[@]}" ctest --output-on-failure --no-tests=error -j"$(nproc)") 2>&1 |
    tee "$dir/ctest.log" || rc=$?
  line="$(grep -E 'tests passed|No tests were found' "$dir/ctest.log" | tail -n1 || true)"
  summary+=("$b: ${line:-ctest printed no summary (exit $rc)} [build ${built}s, test $((SECONDS - start - built))s]")
  ((rc == 0)) || failed=1
done

echo "=== test.sh summary"
printf '  %s\n' "${summary[@]}"
exit "$failed"
