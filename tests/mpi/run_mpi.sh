#!/usr/bin/env bash
# Run an MPI program over the cxl provider on a private pool, with MPICH
# (hydra's mpiexec, ch4:ofi) or Open MPI (mpirun, pml cm + mtl ofi).
#   run_mpi.sh mpich|ompi MPIEXEC PROVIDER_DIR MODE RANKS HOSTS PROGRAM [ARGS...]
# Ranks go to HOSTS emulated hosts (CXL_HOST_KEY = testhost-(rank % HOSTS),
# ids from the pool). The run is
# bounded (CXL_MPI_TIMEOUT, 300 s) and its pool is removed afterwards.
# CXL_MPI_LIB, if set, is preloaded into every rank (libcxlmpi).
# CXL_MPI_PASS_LINE, if set, is an extended regex: the run passes if a
# line of its output matches it, whatever the launcher's status (a test
# whose ranks end without MPI_Finalize on purpose, after a rank's death).
set -u
FLAVOR=$1 MPIEXEC=$2 PROVDIR=$3 MODE=$4 NP=$5 HOSTS=$6
shift 6
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d /dev/shm/cxltest-mpi-XXXXXX)
trap 'rm -rf "$dir"' EXIT
if [ ! -x "$MPIEXEC" ]; then
	echo "run_mpi.sh: $MPIEXEC is missing: run scripts/setup.sh (it installs the pinned MPI wheels into .venv and .venv-ompi)" >&2
	exit 1
fi
export CXL_POOL=$dir/pool CXL_RUNDIR=$dir CXL_POOL_SIZE=256M \
	CXL_ARENA_CAPACITY=8192 CXL_JOB=mpi-$$ CXL_COHERENCE=$MODE \
	CXL_TEST_HOSTS=$HOSTS FI_PROVIDER=cxl FI_PROVIDER_PATH=$PROVDIR \
	MPIR_CVAR_CH4_NETMOD=ofi MPIR_CVAR_NOLOCAL=1 MPIR_CVAR_DEBUG_SUMMARY=1
if [ -n "${CXL_MPI_PRELOAD:-}" ]; then
	export LD_PRELOAD=$CXL_MPI_PRELOAD
	export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1
fi
if [ -n "${CXL_MPI_LIB:-}" ]; then
	if [ ! -f "$CXL_MPI_LIB" ]; then
		echo "run_mpi.sh: CXL_MPI_LIB=$CXL_MPI_LIB does not exist: build libcxlmpi (ninja -C build)" >&2
		exit 1
	fi
	# the sanitizer runtimes, if any, must stay first
	export LD_PRELOAD=${LD_PRELOAD:+$LD_PRELOAD:}$CXL_MPI_LIB
fi
out=$dir/out
case $FLAVOR in
mpich)
	timeout "${CXL_MPI_TIMEOUT:-300}" "$MPIEXEC" -n "$NP" \
		"$here/hostwrap.sh" "$@" >"$out" 2>&1
	rc=$?
	# the transport really was cxl
	if ! grep -q "libfabric provider: cxl" "$out"; then
		echo "run_mpi.sh: MPICH did not select the cxl provider" >&2
		rc=1
	fi
	;;
ompi)
	# pml cm is forced and mtl ofi may only use cxl: if cxl cannot be
	# used, MPI_Init fails, so a passing run went through cxl
	export OMPI_MCA_opal_common_ofi_provider_include=cxl
	# PRRTE's session directories in the run's own directory: in /tmp, one
	# left by a killed job stops a later launcher given its PID (cxlrun
	# does the same; docs/cxlrun.md)
	mkdir "$dir/prte"
	timeout "${CXL_MPI_TIMEOUT:-300}" "$MPIEXEC" --allow-run-as-root \
		--prtemca prte_tmpdir_base "$dir/prte" \
		--oversubscribe -np "$NP" --mca pml cm --mca mtl ofi \
		--mca btl self,ofi --mca osc ^ucx \
		"$here/hostwrap.sh" "$@" >"$out" 2>&1
	rc=$?
	;;
*)
	echo "run_mpi.sh: unknown MPI flavor '$FLAVOR' (mpich or ompi)" >&2
	exit 2
	;;
esac
if [ -n "${CXL_MPI_PASS_LINE:-}" ] && [ "$rc" -ne 124 ]; then
	# the launcher's status reflects the death the test caused
	pass=0
	grep -aqE "$CXL_MPI_PASS_LINE" "$out" || pass=1
	[ "$FLAVOR" = mpich ] && ! grep -q "libfabric provider: cxl" "$out" && pass=1
	rc=$pass
fi
grep -a -v -E '^(====|[A-Za-z_]+: |  |MPIDI|MPIR|MPID|sizeof|tx_|rx_|max_|Required|provider:|libfabric provider)' "$out" | head -50
# libcxlmpi's own diagnostics (the filter above hides "name: " lines)
grep -a -E '^libcxlmpi: ' "$out" | head -10
grep -a -E 'passed, [0-9]+ failed|bad' "$out" | tail -2
exit $rc
