#!/usr/bin/env bash
# Runs one lit suite and prints its counts as "N passed, N failed".
lit="$1"; shift
out=$(mktemp)
trap 'rm -f "$out"' EXIT
/usr/bin/python3 "$lit" -v "$@" 2>&1 | tee "$out"
rc=${PIPESTATUS[0]}
passed=$(grep -cE '^PASS: ' "$out")
failed=$(grep -cE '^(FAIL|XPASS|UNRESOLVED|TIMEOUT): ' "$out")
echo "lit: $passed passed, $failed failed"
exit "$rc"
