#!/usr/bin/env bash
# A rank killed (SIGKILL) or stopped (SIGSTOP, never resumed) in the middle
# of point-to-point, large transfers, a collective, a pool window and
# stream operations: a real 3-rank MPICH job with libcxlmpi, 3 emulated
# hosts on one pool file.
#
#   mpi_kill.sh MPIEXEC MPI_KILL_PROG LIBCXLMPI PROVIDER_DIR CXLPOOL \
#               PINGPONG_PROG [MODE] [OPS...]
#
# For each signal and operation (tests/faults/mpi_kill.c):
#  - the job ends within a bound: the launcher's reaction for SIGKILL;
#    for SIGSTOP every surviving rank ends within the peer timeout
#    (CXL_PEER_TIMEOUT_MS 2 s;
#    CXLMPI_SYNC_TIMEOUT_MS 5 s for windows) plus 15 s, after which the
#    test SIGKILLs the stopped rank (hydra may wait for it);
#  - its output names the cause (the signal, or the timeout and the rank);
#  - no rank saw a wrong result before;
#  - cxlpool gc on each host leaves no object of the job, cxlpool fsck
#    is clean, and a next job (a verified ping-pong) passes on the pool.
# Prints one line per case; exits 1 if any check failed.
set -u
MPIEXEC=$1 PROG=$2 LIB=$3 PROVDIR=$4 CXLPOOL=$5 NEXT=$6
MODE=${7:-emulated}
shift 6
[ $# -gt 0 ] && shift
OPS=${*:-p2p large allreduce window stream}
here=$(cd "$(dirname "$0")/.." && pwd)
hostwrap=$here/mpi/hostwrap.sh
cases=0
. "$(dirname "$0")/mpijob.sh"

# bound SIG OP: seconds from the signal to the end of the job
bound() {
	if [ "$1" = KILL ]; then
		echo 15
	elif [ "$2" = window ]; then
		echo 20
	else
		echo 17
	fi
}

# cause SIG OP: what the job's output must say
cause() {
	case $1:$2 in
	KILL:*) echo 'signal 9|BAD TERMINATION' ;;
	STOP:window) echo 'rank 2 did not arrive within 5000 ms \(CXLMPI_SYNC_TIMEOUT_MS\)' ;;
	STOP:stream) echo 'rank 2 has shown no heartbeat.*CXL_PEER_TIMEOUT_MS' ;;
	STOP:*) echo 'has not shown a heartbeat for [0-9]+ ms \(CXL_PEER_TIMEOUT_MS\)' ;;
	esac
}

# MPICH's own shared memory segments of a killed job stay in /dev/shm
# (mpich_shm_*): remove those made since MARKER that no process maps.
mpich_segments_clean() {
	local f
	for f in $(find /dev/shm -maxdepth 1 -name 'mpich_shm_*' -user "$(id -u)" \
		-newer "$1" 2>/dev/null); do
		grep -qF "$f" /proc/[0-9]*/maps 2>/dev/null || rm -f "$f"
	done
}

# survivors_gone DIR: every rank but the stopped one (2) is gone, or a
# zombie nobody reaps yet
survivors_gone() {
	local r p
	for r in 0 1; do
		p=$(cat "$1/pid.$r" 2>/dev/null) || continue
		case $(ps -o stat= -p "$p" 2>/dev/null) in
		'' | Z*) ;;
		*) return 1 ;;
		esac
	done
	return 0
}

one() { # one SIG OP
	local sig=$1 op=$2 d m t0 dt rc out ok pid left r
	cases=$((cases + 1))
	d=$(mktemp -d /dev/shm/cxltest-kill-XXXXXX)
	touch "$d/marker"
	# shellcheck disable=SC2046
	env $(pool_job_env "$d" "kill-$$-$op" 3) CXL_POOL_SIZE=256M \
		CXL_ARENA_CAPACITY=8192 CXL_PEER_TIMEOUT_MS=2000 \
		CXLMPI_SYNC_TIMEOUT_MS=5000 \
		LD_PRELOAD="${CXL_MPI_PRELOAD:+$CXL_MPI_PRELOAD:}$LIB" \
		timeout -k 5 120 "$MPIEXEC" -n 3 "$hostwrap" "$PROG" "$op" \
		"$d" >"$d/out" 2>&1 &
	m=$!
	for _ in $(seq 600); do
		[ -f "$d/ready.0" ] && [ -f "$d/ready.1" ] && [ -f "$d/ready.2" ] && break
		kill -0 $m 2>/dev/null || break
		sleep 0.1
	done
	if ! [ -f "$d/ready.2" ]; then
		bad "$sig $op: the job did not get going: $(tail -5 "$d/out")"
		kill $m 2>/dev/null
		wait $m
		rm -rf "$d"
		return
	fi
	pid=$(cat "$d/pid.2")
	t0=$(date +%s.%N)
	kill -"$sig" "$pid"
	if [ "$sig" = STOP ]; then
		# The survivors must fail, name the cause and end within the
		# bound. A stopped rank ends only by SIGKILL, which hydra does
		# not always send (it may wait for the rank after its SIGTERM):
		# once the survivors are gone, or the bound has passed, the test
		# sends it, as a batch system's job teardown would.
		while kill -0 $m 2>/dev/null && ! survivors_gone "$d" &&
			awk -v d="$(seconds_since "$t0")" \
				-v b="$(bound "$sig" "$op")" \
				'BEGIN { exit !(d <= b) }'; do
			sleep 0.1
		done
		dt=$(seconds_since "$t0")
		kill -KILL "$pid" 2>/dev/null
		wait $m
		rc=$?
	else
		wait $m
		rc=$?
		dt=$(seconds_since "$t0")
	fi
	# mpiexec returns when the first rank aborts; the others may still be
	# on their way out, and gc rightly keeps a live process's objects:
	# wait (<= 10 s) until every rank is gone or a zombie nobody reaps yet
	for r in 0 1 2; do
		[ -f "$d/pid.$r" ] || continue
		for _ in $(seq 200); do
			case $(ps -o stat= -p "$(cat "$d/pid.$r")" 2>/dev/null) in
			'' | Z*) break ;;
			esac
			sleep 0.05
		done
		case $(ps -o stat= -p "$(cat "$d/pid.$r")" 2>/dev/null) in
		'' | Z*) ;;
		*) bad "$sig $op: rank $r still runs 10 s after the job ended" ;;
		esac
	done
	mpich_segments_clean "$d/marker"
	out=$(cat "$d/out")
	ok=1
	if awk -v d="$dt" -v b="$(bound "$sig" "$op")" 'BEGIN { exit !(d > b) }'; then
		bad "$sig $op: the job took ${dt} s to end (bound $(bound "$sig" "$op") s)"
		ok=0
	fi
	if [ "$sig" = KILL ] && { [ $rc = 124 ] || [ $rc = 137 ]; }; then
		bad "$sig $op: the job hung (killed by timeout, rc $rc)"
		ok=0
	fi
	if ! grep -Eq "$(cause "$sig" "$op")" <<<"$out"; then
		bad "$sig $op: the output does not name the cause /$(cause "$sig" "$op")/: $(tail -5 <<<"$out")"
		ok=0
	fi
	if grep -q "wrong result" <<<"$out"; then
		bad "$sig $op: a wrong result: $(grep "wrong result" <<<"$out" | head -3)"
		ok=0
	fi
	# the pool, for the next job: reclaim on every host, then check
	for h in 0 1 2; do
		CXL_POOL=$d/pool CXL_RUNDIR=$d CXL_HOST_KEY=testhost-$h \
			"$CXLPOOL" gc >/dev/null 2>&1 ||
			bad "$sig $op: cxlpool gc on host $h failed"
	done
	left=$(CXL_POOL=$d/pool CXL_RUNDIR=$d CXL_HOST_KEY=testhost-0 \
		"$CXLPOOL" ls 2>&1 | grep -c "kill-$$-$op")
	if [ "$left" != 0 ]; then
		bad "$sig $op: $left object(s) of the job left after cxlpool gc"
		ok=0
	fi
	if ! CXL_POOL=$d/pool CXL_RUNDIR=$d CXL_HOST_KEY=testhost-0 \
		"$CXLPOOL" fsck >"$d/fsck" 2>&1; then
		bad "$sig $op: cxlpool fsck: $(cat "$d/fsck")"
		ok=0
	fi
	# shellcheck disable=SC2046
	if ! env $(pool_job_env "$d" "next-$$" 3) timeout -k 5 120 \
		"$MPIEXEC" -n 2 "$hostwrap" "$NEXT" 1048576 >"$d/next" 2>&1; then
		bad "$sig $op: the next job on the pool failed: $(grep -av "^\[\|^=\|^ *$" "$d/next" | tail -12)"
		ok=0
	fi
	printf '%-5s %-10s ended after %5s s (rc %3d)  %s\n' "$sig" "$op" \
		"$dt" "$rc" "$([ $ok = 1 ] && echo ok || echo FAILED)"
	mpich_segments_clean "$d/marker"
	rm -rf "$d"
}

if [ ! -x "$MPIEXEC" ]; then
	echo "mpi_kill.sh: $MPIEXEC is missing: run scripts/setup.sh" >&2
	exit 1
fi
for sig in KILL STOP; do
	for op in $OPS; do
		one $sig "$op"
	done
done
echo "mpi_kill: $cases cases ($MODE), $fails failed check(s)"
[ $fails = 0 ]
