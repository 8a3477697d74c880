#!/usr/bin/env bash
# Several jobs on one pool at once: two cxlrun jobs (2 emulated hosts
# each, namespaces as root) and one plain mpiexec job, all on the same
# pool file, each a verified 2-rank ping-pong. Every job must pass within
# its time limit, the arena must check clean afterwards (cxlpool fsck),
# and cxlpool gc must leave no object of theirs.
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
trap '[ -n "${KEEP_WORK:-}" ] || rm -rf "$work"; rm -f "$pool"' EXIT
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
for t in $(seq "$TRIALS"); do
	pids=()
	for j in a b; do
		timeout -k 5 120 "$CXLRUN" --pool "$pool" -H 2 -n 2 \
			--provider-dir "$PROVDIR" "${envs[@]}" -- "$PROG" >"$work/$t-$j.out" 2>&1 &
		pids+=($!)
	done
	env CXL_POOL="$pool" CXL_JOB="plain-$t" FI_PROVIDER=cxl \
		FI_PROVIDER_PATH="$PROVDIR" MPIR_CVAR_CH4_NETMOD=ofi "${pre[@]}" \
		timeout -k 5 120 "$MPIEXEC" -n 2 "$PROG" >"$work/$t-c.out" 2>&1 &
	pids+=($!)
	k=0
	for j in a b c; do
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
