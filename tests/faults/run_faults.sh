#!/usr/bin/env bash
# The fault suite, as a table: each case N times, optionally under load.
#
#   tests/faults/run_faults.sh [BUILD_DIR]
#
# FAULT_RUNS (default 1): runs per case. FAULT_LOAD=1: a CPU hog (one
# busy loop per core) runs beside every case. The ctest entries fault_*,
# test_fi_corrupt_*, test_fi_stop_* and test_fi_dead_* run each case once in
# scripts/test.sh; this script is the longer mode (docs/reliability.md):
#
#   FAULT_RUNS=10 FAULT_LOAD=1 tests/faults/run_faults.sh build
#
# Prints one line per case (runs, passed, failed, slowest run) and ends
# with "faults: N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/../.."
B=${1:-build}
RUNS=${FAULT_RUNS:-1}
B=$(cd "$B" && pwd)
export FI_PROVIDER_PATH=$B/src/fabric
mpiexec=$PWD/.venv/bin/mpiexec
hogs=()
if [ "${FAULT_LOAD:-0}" = 1 ]; then
	for _ in $(seq "$(nproc)"); do
		(while :; do :; done) &
		hogs+=($!)
	done
fi
trap '[ ${#hogs[@]} -gt 0 ] && kill "${hogs[@]}" 2>/dev/null' EXIT
log=$(mktemp -d /tmp/faults.XXXXXX)
total_pass=0 total_fail=0
printf '%-34s %5s %6s %6s %9s\n' case runs passed failed slowest_s
one() { # one NAME COMMAND...: RUNS runs, a table line
	local name=$1 p=0 f=0 slow=0 t0 dt
	local lf=$log/${name//[^A-Za-z0-9]/_}
	shift
	for r in $(seq "$RUNS"); do
		t0=$(date +%s.%N)
		if timeout -k 5 900 "$@" >"$lf.$r" 2>&1; then
			p=$((p + 1))
		else
			f=$((f + 1))
			echo "--- $name run $r failed:" >&2
			tail -5 "$lf.$r" >&2
		fi
		slow=$(awk -v a="$(date +%s.%N)" -v b="$t0" -v s="$slow" \
			'BEGIN { d = a - b; print (d > s ? d : s) }')
	done
	printf '%-34s %5d %6d %6d %9.1f\n' "$name" "$RUNS" "$p" "$f" "$slow"
	total_pass=$((total_pass + p))
	total_fail=$((total_fail + f))
}
for m in coherent emulated; do
	one "kill -9 mid-transfer ($m)" "$B/tests/test_fi_dead" --mode $m
	one "corrupt live channel ($m)" "$B/tests/test_fi_corrupt" --mode $m
	one "SIGSTOP below, above timeout ($m)" "$B/tests/test_fi_stop" \
		--mode $m
	one "MPI rank killed, stopped ($m)" tests/faults/mpi_kill.sh \
		"$mpiexec" "$B/tests/mpich_mpi_kill" \
		"$B/src/mpi/libcxlmpi-mpich.so" "$B/src/fabric" \
		"$B/tools/cxlpool" "$B/tests/mpich_mpi_pingpong" $m
	one "pool and tables full ($m)" tests/faults/pool_full.sh "$mpiexec" \
		"$B/tests/mpich_mpi_suite" "$B/src/fabric" "$B/tools/cxlpool" \
		"$B/src/shm/libcxlshm.so" $m
	one "pool metadata corrupted live ($m)" tests/faults/live_corrupt.sh \
		"$mpiexec" "$B/tests/mpich_mpi_kill" \
		"$B/tests/mpich_mpi_pingpong" "$B/src/fabric" \
		"$B/tools/cxlpool" $m
done
one "arena corruption, fsck" "$B/tests/test_arena" --mode emulated
one "bad configuration matrix" tests/faults/bad_config.sh "$mpiexec" \
	"$B/tests/mpich_mpi_pingpong" "$B/src/fabric" \
	"$B/src/mpi/libcxlmpi-mpich.so" tests/faults/bad_config.txt docs/env.md
one "two users, one pool" tests/faults/two_users.sh "$B/tools/cxlpool"
one "3 concurrent jobs x3" tests/faults/concurrent_jobs.sh \
	tools/cxlrun/cxlrun "$mpiexec" "$B/tests/mpich_mpi_pingpong" \
	"$B/src/fabric" "$B/tools/cxlpool"
one "tools beside bystanders" tests/cli/test_cxlrun.sh tools/cxlrun/cxlrun \
	"$B/tests/mpich_mpi_pingpong" "$B/src/fabric"
one "cxlvm beside bystanders" tests/cli/test_cxlvm_ownership.sh \
	tools/cxlvm/cxlvm
rm -rf "$log"
echo "faults: $total_pass passed, $total_fail failed"
[ $total_fail = 0 ]
