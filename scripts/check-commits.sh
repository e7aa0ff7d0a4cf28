#!/usr/bin/env bash
# Reports commit subjects longer than 72 characters in the commits after a
# base (git's own tools and most viewers cut a subject there).
#
#   scripts/check-commits.sh [BASE] [--report-only]
#
# BASE defaults to the baseline below: the history up to it has long
# subjects and is left as it is; every commit after it must comply. Exits 1
# when one does not, unless --report-only. Merge commits are checked too.
set -euo pipefail

baseline=357e2f0
limit=72
cd "$(dirname "${BASH_SOURCE[0]}")/.."
base="$baseline"
report_only=0
for arg in "$@"; do
  case "$arg" in
    --report-only) report_only=1 ;;
    -*) echo "check-commits: unknown option '$arg'" >&2; exit 2 ;;
    *) base="$arg" ;;
  esac
done
if ! git rev-parse -q --verify "$base^{commit}" >/dev/null; then
  echo "check-commits: base $base is not in this clone (shallow?); fetch more history" >&2
  exit 2
fi

bad=0
checked=0
while IFS=$'\t' read -r hash subject; do
  checked=$((checked + 1))
  len=${#subject}
  if ((len > limit)); then
    bad=$((bad + 1))
    echo "$hash: subject of $len characters (at most $limit): $subject"
  fi
done < <(git log --format='%h%x09%s' "$base..HEAD")

echo "check-commits: $checked commits after $(git rev-parse --short "$base"), $bad with a subject over $limit characters"
((bad == 0 || report_only)) || exit 1
