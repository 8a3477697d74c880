#!/usr/bin/env bash
# A group-shared pool works for every member of its group, whoever came
# first: the run files (host lock, claim lock, the emulator's line locks)
# take the pool's mode and group. Needs root (it makes two users and a
# group, and removes only those it made); exits 77 without it.
#
#   two_users.sh CXLPOOL
#
# For each first user (u1, then root), on a fresh pool file that is
# chgrp'ed to the group and chmod 660, in the flush and emulated modes:
# the first user's `cxlpool info`, then u2's, must succeed; a third user
# outside the group must be refused by the pool file itself.
set -uo pipefail
CXLPOOL=$1
[ "$(id -u)" = 0 ] || {
	echo "two_users: not root: skipped"
	exit 77
}
pass=0 fail=0
check() {
	if eval "$1"; then pass=$((pass + 1)); else
		fail=$((fail + 1))
		echo "FAIL: $2" >&2
	fi
}
. "$(dirname "$0")/users.sh"
users_make
dir=$(mktemp -d /dev/shm/cxlt-users.XXXXXX)
rundir=$(mktemp -d /tmp/cxlt-run.XXXXXX)
chmod 1777 "$rundir" # like /dev/shm: sticky, every user may create
chgrp cxltg "$dir" && chmod 2770 "$dir"
cleanup() {
	rm -rf "$dir" "$rundir"
	users_remove
}
trap cleanup EXIT
for mode in flush emulated; do
	for first in cxltu1 root; do
		pool=$dir/pool-$mode-$first
		rm -f "$rundir"/cxlshm-*
		CXL_POOL=$pool "$CXLPOOL" format --size 256M >/dev/null
		chgrp cxltg "$pool" && chmod 660 "$pool"
		for u in "$first" cxltu2; do
			out=$(as "$u" env CXL_POOL="$pool" CXL_RUNDIR="$rundir" \
				CXL_COHERENCE=$mode "$CXLPOOL" info 2>&1)
			check "[ $? = 0 ]" "$mode, $first first: cxlpool info as $u failed: $out"
		done
		out=$(as cxltu3 env CXL_POOL="$pool" CXL_RUNDIR="$rundir" \
			CXL_COHERENCE=$mode "$CXLPOOL" info 2>&1)
		check "[ $? != 0 ]" "$mode: a user outside the group attached the pool"
		for f in "$rundir"/cxlshm-*; do
			m=$(stat -c '%a %G' "$f")
			check "[ '$m' = '660 cxltg' ]" "$mode, $first first: run file $f has mode and group '$m', not the pool's '660 cxltg'"
		done
	done
done
echo "two_users: $pass passed, $fail failed"
[ $fail = 0 ]
