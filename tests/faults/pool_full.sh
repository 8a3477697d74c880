#!/usr/bin/env bash
# Pool and object-table exhaustion under a real 4-rank MPICH job.
#
#   pool_full.sh MPIEXEC SUITE_PROG PROVIDER_DIR CXLPOOL LIBCXLSHM [MODE]
#
#  - heap: a job (tests/faults/pool_hog.py) fills the heap with 1 MiB
#    objects on another emulated host and is killed (SIGKILL), leaving
#    them behind (no rank of the job can tell that it died);
#  - table: the same with 64-byte objects until the object table is full;
#  - endpoints: FI_CXL_MAX_EPS=2 for a job of 4 ranks.
# Each time the MPI job must end within 60 s, not pass, and name the
# variable to change (CXL_POOL_SIZE, CXL_ARENA_CAPACITY, FI_CXL_MAX_EPS)
# on stderr; then, after 'cxlpool gc' (heap, table) or with the default
# (endpoints), the same job must pass on the same pool, and cxlpool fsck
# must find it clean.
set -u
MPIEXEC=$1 SUITE=$2 PROVDIR=$3 CXLPOOL=$4 LIBSHM=$5 MODE=${6:-emulated}
here=$(cd "$(dirname "$0")/.." && pwd)
. "$(dirname "$0")/mpijob.sh"

job() { # job DIR OUT [VAR=VALUE...]: the suite, 4 ranks on 2 hosts
	local d=$1 out=$2
	shift 2
	# shellcheck disable=SC2046
	env $(pool_job_env "$d" "suite-$$" 2) "$@" timeout -k 5 60 \
		"$MPIEXEC" -n 4 "$here/mpi/hostwrap.sh" "$SUITE" >"$out" 2>&1
}

one() { # one CASE PATTERN
	local c=$1 pat=$2 d hog t0 dt rc fix=()
	d=$(mktemp -d /dev/shm/cxltest-full-XXXXXX)
	export CXL_POOL=$d/pool CXL_RUNDIR=$d CXL_POOL_SIZE=64M \
		CXL_ARENA_CAPACITY=2048 CXL_MAX_HOSTS=8 CXL_MAX_PROCS=64 \
		CXL_COHERENCE=$MODE
	CXL_HOST_KEY=testhost-0 "$CXLPOOL" format "$d/pool" --size 64M \
		--capacity 2048 --max-hosts 8 --max-procs 64 >/dev/null ||
		bad "$c: cxlpool format failed"
	case $c in
	heap | table)
		# (a sanitized libcxlshm needs its runtimes preloaded)
		LD_PRELOAD=${CXL_MPI_PRELOAD:-} \
			ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0 \
			CXL_JOB=hog-$$ CXL_HOST_KEY=testhost-9 python3 \
			"$here/faults/pool_hog.py" "$LIBSHM" "$c" "$d/hog" &
		hog=$!
		for _ in $(seq 300); do
			[ -s "$d/hog" ] && break
			sleep 0.1
		done
		kill -KILL $hog
		wait $hog 2>/dev/null
		;;
	endpoints) fix=(FI_CXL_MAX_EPS=2) ;;
	esac
	t0=$(date +%s.%N)
	job "$d" "$d/out" "${fix[@]}"
	rc=$?
	dt=$(seconds_since "$t0")
	[ $rc = 0 ] && bad "$c: the job passed on a full pool ($(cat "$d/hog" 2>/dev/null))"
	{ [ $rc = 124 ] || [ $rc = 137 ]; } && bad "$c: the job hung"
	grep -Eq "$pat" "$d/out" ||
		bad "$c: stderr does not name $pat (rc $rc): $(grep -v '^\[' "$d/out" | tail -8)"
	# what the next job needs: the crashed job's objects reclaimed
	for h in 0 1 9; do
		CXL_HOST_KEY=testhost-$h "$CXLPOOL" gc >/dev/null 2>&1 ||
			bad "$c: cxlpool gc on host $h failed"
	done
	job "$d" "$d/next" || bad "$c: the next job failed: $(tail -4 "$d/next")"
	CXL_HOST_KEY=testhost-0 "$CXLPOOL" fsck >"$d/fsck" 2>&1 ||
		bad "$c: cxlpool fsck: $(cat "$d/fsck")"
	printf '%-10s failed in %4s s naming %-20s next job: %s\n' "$c" "$dt" \
		"$pat" "$(grep -q 'passed, 0 failed' "$d/next" && echo passed || echo FAILED)"
	"$CXLPOOL" rm "$d/pool" --force >/dev/null 2>&1
	rm -rf "$d"
}

if [ ! -x "$MPIEXEC" ]; then
	echo "pool_full.sh: $MPIEXEC is missing: run scripts/setup.sh" >&2
	exit 1
fi
one heap CXL_POOL_SIZE
one table CXL_ARENA_CAPACITY
one endpoints FI_CXL_MAX_EPS
echo "pool_full: 3 cases ($MODE), $fails failed check(s)"
[ $fails = 0 ]
