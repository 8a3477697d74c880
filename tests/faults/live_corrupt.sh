#!/usr/bin/env bash
# Pool metadata corrupted under a live MPI job (random bytes written with
# plain file writes, as a buggy or hostile process with the pool mapped
# could):
#  - header: the first 128 bytes of the pool header;
#  - host table: every line of an unused host slot (its bakery ticket,
#    status and identity);
#  - index: the whole first level of the hash index.
# For each: the live job (2 ranks on 2 emulated hosts, a checked
# point-to-point loop, tests/faults/mpi_kill.c) goes on with correct
# results for 2 s; a new job fails within 60 s (CXL_LOCK_TIMEOUT_MS is
# 3 s here) and names the damage and its fix, or, for the index, may pass
# with verified results (lookups check every slot against the object
# table); after the fix ('cxlpool format', 'cxlpool gc --dead-host N',
# 'cxlpool fsck --repair') the next job passes.
#
#   live_corrupt.sh MPIEXEC MPI_KILL_PROG PINGPONG_PROG PROVIDER_DIR CXLPOOL \
#                   [MODE]
set -u
MPIEXEC=$1 PROG=$2 NEXT=$3 PROVDIR=$4 CXLPOOL=$5 MODE=${6:-emulated}
here=$(cd "$(dirname "$0")/.." && pwd)
. "$(dirname "$0")/mpijob.sh"

# corrupt POOL WHAT: random bytes over a region named by the header
corrupt() {
	python3 - "$1" "$2" <<'EOF'
import os, struct, sys
path, what = sys.argv[1], sys.argv[2]
with open(path, "r+b") as f:
    h = f.read(4096)
    max_hosts, = struct.unpack_from("<I", h, 48)
    host_off, hash_off = struct.unpack_from("<Q", h, 80)[0], struct.unpack_from("<Q", h, 96)[0]
    level0_buckets, = struct.unpack_from("<Q", h, 136)
    if what == "header":
        off, n = 0, 128
    elif what == "hosts":
        off, n = host_off + (max_hosts - 1) * 256, 256  # the last slot
    else:
        off, n = hash_off, min(level0_buckets * 8, 1 << 20)
    f.seek(off)
    f.write(os.urandom(n))
EOF
}

env_for() { # env_for DIR JOB: the variables of a job on DIR's pool
	echo "$(pool_job_env "$1" "$2" 2)" CXL_LOCK_TIMEOUT_MS=3000
}

# next DIR OUT: a 2-rank verified ping-pong on the pool, at most 60 s
next_job() {
	# shellcheck disable=SC2046
	env $(env_for "$1" "next-$$") timeout -k 5 60 "$MPIEXEC" -n 2 \
		"$here/mpi/hostwrap.sh" "$NEXT" 1048576 >"$2" 2>&1
}

one() { # one WHAT PATTERN FIX...
	local what=$1 pat=$2 d m t0 dt rc outcome
	shift 2
	d=$(mktemp -d /dev/shm/cxltest-live-XXXXXX)
	CXL_POOL=$d/pool "$CXLPOOL" format --size 256M --capacity 8192 \
		--max-hosts 8 --max-procs 64 >/dev/null || bad "$what: format"
	# shellcheck disable=SC2046
	env $(env_for "$d" "live-$$") timeout -k 5 120 "$MPIEXEC" -n 2 \
		"$here/mpi/hostwrap.sh" "$PROG" p2p "$d" >"$d/live" 2>&1 &
	m=$!
	for _ in $(seq 600); do
		[ -f "$d/ready.0" ] && [ -f "$d/ready.1" ] && break
		sleep 0.1
	done
	[ -f "$d/ready.1" ] || bad "$what: the live job did not start: $(tail -3 "$d/live")"
	corrupt "$d/pool" "$what"
	sleep 2
	kill -0 $m 2>/dev/null || bad "$what: the live job ended: $(tail -5 "$d/live")"
	t0=$(date +%s.%N)
	next_job "$d" "$d/during"
	rc=$?
	dt=$(seconds_since "$t0")
	kill -TERM $m 2>/dev/null
	wait $m
	grep -q "wrong result" "$d/live" && bad "$what: the live job saw a wrong result"
	{ [ $rc = 124 ] || [ $rc = 137 ]; } && bad "$what: the new job hung"
	if [ $rc = 0 ]; then
		# damage that no lookup depends on may be read past (the
		# index: every slot is checked against the object table)
		if [ "$what" != index ] || ! grep -q ' 0 bad' "$d/during"; then
			bad "$what: a new job passed on a damaged pool"
		fi
		outcome="new job passed (verified) in $dt s"
	else
		grep -Eaq "$pat" "$d/during" ||
			bad "$what: the new job does not name /$pat/: $(grep -av '^\[' "$d/during" | tail -4)"
		outcome="new job refused in $dt s"
	fi
	if [ "$what" = index ] && CXL_POOL=$d/pool CXL_RUNDIR=$d \
		CXL_HOST_KEY=testhost-0 "$CXLPOOL" fsck >/dev/null 2>&1; then
		bad "index: cxlpool fsck found nothing wrong"
	fi
	# the fix the message gave
	for h in 0 1; do
		CXL_POOL=$d/pool CXL_RUNDIR=$d CXL_HOST_KEY=testhost-$h \
			CXL_LOCK_TIMEOUT_MS=3000 "$CXLPOOL" gc >/dev/null 2>&1
	done
	CXL_POOL=$d/pool CXL_RUNDIR=$d CXL_HOST_KEY=testhost-0 \
		CXL_LOCK_TIMEOUT_MS=3000 "$CXLPOOL" "$@" >"$d/fix" 2>&1 || bad "$what: cxlpool $*: $(cat "$d/fix")"
	next_job "$d" "$d/after" ||
		bad "$what: the next job after 'cxlpool $*' failed: $(tail -4 "$d/after")"
	printf '%-7s live job unharmed; %s; after cxlpool %s: %s\n' \
		"$what" "$outcome" "$*" "$(grep -q ' 0 bad' "$d/after" && echo passed || echo FAILED)"
	rm -rf "$d"
}

one header 'header|format' format --size 256M --force
one hosts 'host 7.*cxlpool gc --dead-host 7' gc --dead-host 7
one index 'fsck --repair|index' fsck --repair
echo "live_corrupt: 3 cases ($MODE), $fails failed check(s)"
[ $fails = 0 ]
