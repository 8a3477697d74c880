#!/usr/bin/env bash
# cxlvm removes only what it created: a directory of CXLVM_DIR that it did
# not make survives `down` and a refused `up`, and so does a file at the
# path of a cluster's default pool. Boots no guest.
#
#   test_cxlvm_ownership.sh CXLVM
set -uo pipefail
CXLVM=$1
export CXLVM_DIR
CXLVM_DIR=$(mktemp -d /tmp/cxlvm-own.XXXXXX)
trap 'rm -rf "$CXLVM_DIR"' EXIT
pass=0 fail=0
check() {
	if eval "$1"; then pass=$((pass + 1)); else
		fail=$((fail + 1))
		echo "FAIL: $2" >&2
	fi
}
mkdir "$CXLVM_DIR/own1"
echo data >"$CXLVM_DIR/own1/file"
"$CXLVM" --name own1 down >"$CXLVM_DIR.down" 2>&1
check "[ -f '$CXLVM_DIR/own1/file' ]" "down removed a directory cxlvm did not create"
check "grep -q 'left .* alone' '$CXLVM_DIR.down'" "down did not say it left the directory alone: $(cat "$CXLVM_DIR.down")"
timeout 120 "$CXLVM" --name own1 up --guests 1 >"$CXLVM_DIR.up" 2>&1
rc=$?
check "[ $rc != 0 ]" "up took over a directory it did not create"
check "[ -f '$CXLVM_DIR/own1/file' ]" "a refused up removed a directory cxlvm did not create"
check "grep -qE 'exists and is not a cxlvm cluster|needs root' '$CXLVM_DIR.up'" "up did not say why: $(cat "$CXLVM_DIR.up")"
rm -f "$CXLVM_DIR.down" "$CXLVM_DIR.up"
echo "test_cxlvm_ownership: $pass passed, $fail failed"
[ $fail = 0 ]
