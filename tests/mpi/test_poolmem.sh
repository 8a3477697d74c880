#!/usr/bin/env bash
# libcxlmpi end to end: tests/mpi/mpi_poolmem.c on 2 emulated hosts
# (tools/cxlrun), with libcxlmpi preloaded, in the coherent and the
# non-coherent mode, under MPICH and Open MPI:
#   - every value the program checks is right ("poolmem: N checks, 0 bad");
#   - under MPICH, windows over MPI_Alloc_mem memory are libcxlmpi's direct
#     windows: its RMA is done by libcxlmpi (CXLMPI_STATS puts > 0) and the
#     MPI library issues none (FI_CXL_STATS direct_rma = 0);
#   - with CXLMPI_DIRECT_RMA=0 the MPI library does the RMA, and the
#     provider does it directly in the pool (direct_rma > 0);
#   - without libcxlmpi, neither (the same program, the ordinary path);
#   - under Open MPI the same with libcxlmpi, and with CXLMPI_DIRECT_RMA=0
#     its osc/rdma over btl/ofi does direct RMA through the provider.
#
# and tests/mpi/mpi_shwin.c under MPICH, coherent and emulated (and Open MPI,
# emulated): a shared
# window across the 2 hosts (MPI_Win_allocate_shared), loads and stores
# through MPI_Win_shared_query pointers, producer/consumer with
# MPI_Win_sync; MPI_Win_allocate in the pool with direct RMA.
#
#   test_poolmem.sh CXLRUN PROVIDER_DIR MPICH_PROG MPICH_LIB MPICH_SHWIN [OMPI_PROG OMPI_LIB OMPI_SHWIN]
set -uo pipefail
CXLRUN=$1 PROVDIR=$2 MPROG=$3 MLIB=$4 SHWIN=$5 OPROG=${6:-} OLIB=${7:-} OSHWIN=${8:-}
export CXLRUN_DIR
CXLRUN_DIR=$(mktemp -d /tmp/poolmem-test.XXXXXX)
out=$(mktemp /tmp/poolmem-out.XXXXXX)
trap 'rm -f "$out"; rm -rf "$CXLRUN_DIR"' EXIT
pass=0 fail=0
check() {
	if eval "$1"; then pass=$((pass + 1)); else
		fail=$((fail + 1))
		echo "FAIL: $2" >&2
		tail -15 "$out" >&2
	fi
}
direct() { grep -oE 'direct_rma [0-9]+' "$out" | awk '{s += $2} END {print s + 0}'; }
libputs() { grep -oE 'CXLMPI_STATS rank [0-9]+: puts [0-9]+' "$out" | awk '{s += $5} END {print s + 0}'; }

# ranks of an ASan build need the sanitizer runtimes first
pre=${CXL_MPI_PRELOAD:+$CXL_MPI_PRELOAD:}
asan=()
[ -n "${CXL_MPI_PRELOAD:-}" ] && asan=(--env "ASAN_OPTIONS=detect_leaks=0:abort_on_error=1")

run() { # mpi prog lib mode
	local lib=()
	[ -n "$3" ] && lib=(--env "LD_PRELOAD=$pre$3")
	[ -z "$3" ] && [ -n "$pre" ] && lib=(--env "LD_PRELOAD=${pre%:}")
	"$CXLRUN" --mpi "$1" -t cxl -H 2 -n 2 --stats --coherence "$4" \
		--provider-dir "$PROVDIR" "${lib[@]}" "${asan[@]}" \
		--env CXLMPI_STATS=1 ${5:+--env "$5"} -- "$2" >"$out" 2>&1
}

for mode in coherent emulated; do
	run mpich "$MPROG" "$MLIB" $mode
	check "grep -q 'poolmem: [0-9]* checks, 0 bad' '$out'" "mpich $mode with libcxlmpi: bad values"
	check "[ \$(libputs) -gt 0 ]" "mpich $mode with libcxlmpi: no direct window"
	check "[ \$(direct) = 0 ]" "mpich $mode with libcxlmpi: RMA by the MPI library on a direct window"
	run mpich "$MPROG" "$MLIB" $mode CXLMPI_DIRECT_RMA=0
	check "grep -q 'poolmem: [0-9]* checks, 0 bad' '$out'" "mpich $mode, CXLMPI_DIRECT_RMA=0: bad values"
	check "[ \$(direct) -gt 0 ]" "mpich $mode, CXLMPI_DIRECT_RMA=0: no direct RMA by the provider"
	check "[ \$(libputs) = 0 ]" "mpich $mode, CXLMPI_DIRECT_RMA=0: a direct window all the same"
done
for mode in coherent emulated; do
	run mpich "$SHWIN" "$MLIB" $mode
	check "grep -q 'shwin: 12 checks, 0 bad' '$out'" "mpich $mode: shared window across hosts"
	check "[ \$(libputs) -gt 0 ]" "mpich $mode: MPI_Win_allocate window is not a direct window"
done
run mpich "$MPROG" "" coherent
check "grep -q 'poolmem: [0-9]* checks, 0 bad' '$out'" "mpich without libcxlmpi: bad values"
check "[ \$(direct) = 0 ]" "mpich without libcxlmpi: direct RMA without pool windows"
check "[ \$(libputs) = 0 ]" "mpich without libcxlmpi: libcxlmpi statistics"
if [ -n "$OPROG" ]; then
	run ompi "$OPROG" "$OLIB" emulated
	check "grep -q 'poolmem: [0-9]* checks, 0 bad' '$out'" "ompi emulated with libcxlmpi: bad values"
	check "[ \$(libputs) -gt 0 ]" "ompi emulated with libcxlmpi: no direct window"
	# Open MPI's own one-sided (osc/rdma over btl/ofi) on pool memory:
	# the provider does it directly in the pool
	run ompi "$OPROG" "$OLIB" emulated CXLMPI_DIRECT_RMA=0
	check "grep -q 'poolmem: [0-9]* checks, 0 bad' '$out'" "ompi emulated, CXLMPI_DIRECT_RMA=0: bad values"
	check "[ \$(direct) -gt 0 ]" "ompi emulated, CXLMPI_DIRECT_RMA=0: no direct RMA by the provider"
	if [ -n "$OSHWIN" ]; then
		run ompi "$OSHWIN" "$OLIB" emulated
		check "grep -q 'shwin: 12 checks, 0 bad' '$out'" "ompi emulated: shared window across hosts"
	fi
fi
echo "test_poolmem: $pass passed, $fail failed"
[ $fail = 0 ]
