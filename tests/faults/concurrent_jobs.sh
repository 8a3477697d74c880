#!/usr/bin/env bash
# Several jobs of several users on one pool at once: two cxlrun jobs of
# root (2 emulated hosts each, namespaces) and plain mpiexec jobs of two
# users of the pool's group (cxltu1, cxltu2; tests/faults/users.sh), all
# on the same pool file (chgrp cxltg, chmod 660), each a verified 2-rank
# ping-pong. Not root: one plain job of this user instead. Every job must
# pass within its time limit, the arena must check clean afterwards
# (cxlpool fsck), and cxlpool gc must leave no object of theirs.
#
#   concurrent_jobs.sh CXLRUN MPIEXEC PINGPONG PROVIDER_DIR CXLPOOL
#
# FAULT_TRIALS (default 3) sets the number of trials.
set -uo pipefail
CXLRUN=$1 MPIEXEC=$2 PROG=$3 PROVDIR=$4 CXLPOOL=$5
TRIALS=${FAULT_TRIALS:-3}
work=$(mktemp -d /tmp/cxlt-jobs.XXXXXX)
export CXLRUN_DIR=$work/runs
pool=/dev/shm/cxlt-jobs-$$.pool
# cxlpool rm also removes the pool's run files (the plain jobs' are in
# /dev/shm)
rm_pool() { CXL_POOL=$pool "$CXLPOOL" rm --force >/dev/null 2>&1 || rm -f "$pool"; }
trap '[ -n "${KEEP_WORK:-}" ] || rm -rf "$work"; rm_pool' EXIT
pass=0 fail=0
bad() {
	fail=$((fail + 1))
	echo "FAIL: $*" >&2
}
# ranks of an ASan build need the sanitizer runtimes (CMake passes them)
envs=() pre=()
if [ -n "${CXL_MPI_PRELOAD:-}" ]; then
	envs=(--env "LD_PRELOAD=$CXL_MPI_PRELOAD"
		--env "ASAN_OPTIONS=detect_leaks=0:abort_on_error=1")
	pre=("LD_PRELOAD=$CXL_MPI_PRELOAD" "ASAN_OPTIONS=detect_leaks=0")
fi
CXL_POOL=$pool "$CXLPOOL" format --size 1G >/dev/null || exit 1
plain_users=("$(id -un)")
if [ "$(id -u)" = 0 ]; then
	. "$(dirname "$0")/users.sh"
	users_make
	trap '[ -n "${KEEP_WORK:-}" ] || rm -rf "$work"; rm_pool; users_remove' EXIT
	chgrp cxltg "$pool" && chmod 660 "$pool"
	plain_users=(cxltu1 cxltu2)
else
	as() {
		shift
		"$@"
	}
fi
for t in $(seq "$TRIALS"); do
	pids=()
	for j in a b; do
		timeout -k 5 120 "$CXLRUN" --pool "$pool" -H 2 -n 2 \
			--provider-dir "$PROVDIR" "${envs[@]}" -- "$PROG" >"$work/$t-$j.out" 2>&1 &
		pids+=($!)
	done
	jobs=(a b)
	for u in "${plain_users[@]}"; do
		as "$u" env CXL_POOL="$pool" CXL_JOB="plain-$t-$u" FI_PROVIDER=cxl \
			FI_PROVIDER_PATH="$PROVDIR" MPIR_CVAR_CH4_NETMOD=ofi "${pre[@]}" \
			timeout -k 5 120 "$MPIEXEC" -n 2 "$PROG" >"$work/$t-$u.out" 2>&1 &
		pids+=($!)
		jobs+=("$u")
	done
	k=0
	for j in "${jobs[@]}"; do
		wait "${pids[$k]}"
		rc=$?
		k=$((k + 1))
		if [ $rc != 0 ]; then
			bad "trial $t, job $j: exit $rc: $(tail -4 "$work/$t-$j.out")"
		elif ! grep -q 'pingpong: .* 0 bad' "$work/$t-$j.out"; then
			bad "trial $t, job $j: ping-pong did not verify"
		else
			pass=$((pass + 1))
		fi
	done
	out=$(CXL_POOL=$pool "$CXLPOOL" fsck 2>&1)
	if [ $? = 0 ]; then pass=$((pass + 1)); else bad "trial $t: fsck: $out"; fi
done
CXL_POOL=$pool "$CXLPOOL" gc >/dev/null
left=$(CXL_POOL=$pool "$CXLPOOL" ls | grep -c -E 'cxlrun-|plain-')
if [ "$left" = 0 ]; then pass=$((pass + 1)); else
	bad "$left object(s) of the finished jobs left after gc: $(CXL_POOL=$pool "$CXLPOOL" ls)"
fi
echo "concurrent_jobs: $pass passed, $fail failed"
[ $fail = 0 ]
