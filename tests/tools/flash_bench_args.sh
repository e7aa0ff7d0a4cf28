#!/usr/bin/env bash
# tiercache-flash-bench: a bad argument exits 2 with a message naming it;
# a tiny run of each mode prints its result line. Speed is not checked.
#
#   tests/tools/flash_bench_args.sh PATH-TO-tiercache-flash-bench
set -uo pipefail
bench="$1"
work=$(mktemp -d "${TMPDIR:-/var/tmp}/flash-bench-args.XXXXXX")
trap 'rm -rf "$work"' EXIT
failed=0

# expect_error EXPECTED-TEXT ARGS...: exit code 2 and the text on stderr.
expect_error() {
  local want="$1" rc
  shift
  "$bench" "$@" >"$work/out" 2>"$work/err"
  rc=$?
  if [[ $rc -ne 2 ]] || ! grep -qF -- "$want" "$work/err"; then
    echo "FAIL: $* -> rc $rc, stderr: $(head -1 "$work/err") (wanted rc 2 and '$want')"
    failed=1
  fi
}
f="$work/flash.dat"
expect_error "unknown mode 'bogus'" bogus --file "$f"
expect_error "--file: required" read --size 1MiB
expect_error "--qd: not a positive number: '0'" read --file "$f" --qd 0
expect_error "--qd: not a whole number in 1..1024: '2000'" read --file "$f" --qd 2000
expect_error "--size: unknown unit 'X'" read --file "$f" --size 4X
expect_error "--size: must be a positive multiple of 4 KiB" read --file "$f" --size 5000
expect_error "--seconds: missing value" read --file "$f" --seconds
expect_error "--engine: 'aio' is not auto, io_uring or threads" read --file "$f" --engine aio
expect_error "--region-size: must be a multiple of 4 KiB" write --file "$f" --size 1MiB --region-size 1MiB
expect_error "--threads: not a positive number: ''" store --file "$f" --threads 1,,2
expect_error "--threads: not a positive number: '0'" store --file "$f" --threads 1,1x0
expect_error "--threads: not a whole number in 1..1024: '4000'" store --file "$f" --threads 4000x2
expect_error "unknown option --depth" read --file "$f" --depth 4
[[ -e "$f" ]] && { echo "FAIL: a rejected command created $f"; failed=1; }

# expect_line MODE-KEY ARGS...: exit 0 and a result line with that key.
expect_line() {
  local key="$1"
  shift
  if ! "$bench" "$@" >"$work/out" 2>"$work/err" || ! grep -q "$key" "$work/out"; then
    echo "FAIL: $* -> $(cat "$work/out" "$work/err")"
    failed=1
  fi
}
small=(--file "$f" --size 2MiB --region-size 256KiB --seconds 0.05 --qd 4 --engine auto)
expect_line "mode=write .* mb_s=" write "${small[@]}"
expect_line "mode=read .* iops=" read "${small[@]}"
expect_line "mode=store-read .*threads=2 batch=1 " store "${small[@]}" --value-size 200 --threads 1,2,1x4
grep -q "mode=store-read .*threads=1 batch=4 .*lookups=[1-9]" "$work/out" || {
  echo "FAIL: no batched lookups: $(cat "$work/out")"
  failed=1
}
grep -q "mode=store-fill .*write_amp=1\.[0-9]" "$work/out" || { echo "FAIL: no write_amp: $(cat "$work/out")"; failed=1; }
[[ $failed -eq 0 ]] && echo "flash_bench_args: ok"
exit $failed
