#!/usr/bin/env bash
# Fails when C++ lines changed since a base commit are not formatted as
# .clang-format says. Only changed lines are checked (`git clang-format
# --diff`): the tree as a whole predates the rule, and reformatting it would
# collide with every branch in flight.
#
#   scripts/check-format.sh [BASE]
#
# BASE: a commit; default: the baseline below, the last commit before the
# rule, so every change after it is checked (the working tree included,
# staged or not). To fix what it reports: `git clang-format BASE`.
# Move the baseline forward only to a commit whose changes pass.
set -euo pipefail

baseline=357e2f0
cd "$(dirname "${BASH_SOURCE[0]}")/.."
base="${1:-$baseline}"

command -v git-clang-format >/dev/null || command -v clang-format >/dev/null || {
  echo "check-format: clang-format is not installed (scripts/setup.sh installs it)" >&2
  exit 2
}
if ! git rev-parse -q --verify "$base^{commit}" >/dev/null; then
  # A shallow clone may lack the baseline: then there is nothing to compare with.
  echo "check-format: base $base is not in this clone (shallow?); fetch more history" >&2
  exit 2
fi

out="$(git clang-format --diff --extensions cc,h,cpp,hpp "$base" 2>&1)" || true
case "$out" in
  *"no modified files to format"* | *"did not modify any files"* | "")
    echo "check-format: lines changed since $(git rev-parse --short "$base") are formatted"
    exit 0 ;;
esac
echo "$out"
echo "check-format: the lines above are not formatted (.clang-format); run: git clang-format $base" >&2
exit 1
