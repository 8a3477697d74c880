#!/usr/bin/env bash
# Show that MPICH's pt2pt/rqfreeb fails on any transport once its last
# message arrives late: builds rqfreeb with a 20 ms pause before rank 0's
# last send (timing that MPI allows), then runs it RUNS times (default 5)
# over libfabric tcp, shm and cxl, 4 ranks, and counts the runs whose
# MPI_Finalize prints "Builtin communicator ... has pending 1 references".
#   tests/conformance/rqfreeb_delay.sh [RUNS]
# Needs the MPICH test suite built (mpich_testsuite.sh pt2pt) and the
# project built (build/src/fabric/libcxl-fi.so).
set -u
RUNS=${1:-5}
REPO=$(cd "$(dirname "$0")/../.." && pwd)
T=$REPO/build-conformance/mpich-testsuite/mpich/mpich-4.0.2/test/mpi
MTEST=$T/util/.libs/libmtest_single.a
[ -f "$T/pt2pt/rqfreeb.c" ] && [ -f "$MTEST" ] || {
	echo "rqfreeb_delay.sh: $T is not built: run tests/conformance/mpich_testsuite.sh pt2pt first" >&2
	exit 3
}
work=$(mktemp -d /dev/shm/rqfreeb-XXXXXX)
trap 'rm -rf "$work"' EXIT
# the pause goes before rank 0's fifth (last) send; nothing else changes
sed -e 's/^\( *\)smsg\[4\] = 14;/\1usleep(20000);\n&/' \
	-e 's/#include <stdlib.h>/&\n#include <unistd.h>/' \
	"$T/pt2pt/rqfreeb.c" >"$work/rqfreeb_delay.c"
grep -q usleep "$work/rqfreeb_delay.c" || {
	echo "rqfreeb_delay.sh: rqfreeb.c changed; cannot insert the pause" >&2
	exit 3
}
"$REPO/.venv/bin/mpicc" -I"$T/include" -o "$work/rqfreeb_delay" \
	"$work/rqfreeb_delay.c" "$MTEST" || exit 3
for prov in tcp shm cxl; do
	bad=0
	for _ in $(seq "$RUNS"); do
		d=$(mktemp -d "$work/run-XXXXXX")
		out=$(CXL_POOL=$d/pool CXL_RUNDIR=$d CXL_POOL_SIZE=256M \
			CXL_JOB=rqfreeb-$$ FI_PROVIDER=$prov \
			FI_PROVIDER_PATH=$REPO/build/src/fabric \
			MPIR_CVAR_CH4_NETMOD=ofi MPIR_CVAR_NOLOCAL=1 \
			timeout 60 "$REPO/.venv/bin/mpiexec" -n 4 \
			"$REPO/tests/mpi/hostwrap.sh" "$work/rqfreeb_delay" 2>&1)
		echo "$out" | grep -q "No Errors" &&
			! echo "$out" | grep -q "pending 1 references" || bad=$((bad + 1))
	done
	echo "rqfreeb with a late last message, over $prov: $bad of $RUNS runs fail"
done
