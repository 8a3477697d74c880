#!/usr/bin/env bash
# One-sided communication end to end: tests/mpi/mpi_rma.c (put, get,
# accumulate, get_accumulate, fetch_and_op, compare_and_swap and strided
# datatypes under fence, PSCW, lock, lock_all + flush and request-based
# operations; an exclusive-lock counter under contention; a dynamic
# window) on emulated hosts (tools/cxlrun), coherent and non-coherent:
#   - with libcxlmpi, under MPICH on 2 hosts x 1 rank and 4 hosts x 1 rank,
#     and under Open MPI on 2 hosts x 2 ranks: every check holds, the RMA
#     is libcxlmpi's (CXLMPI_STATS puts > 0) and the MPI library issues
#     none through the provider (FI_CXL_STATS direct_rma = 0);
#   - with libcxlmpi and CXLMPI_ALLOC_MEM=0 (a pool configured, but no
#     pool memory from libcxlmpi): the MPI library's RMA, same checks;
#   - without libcxlmpi (the MPI libraries' own RMA over the provider):
#     the same checks hold, which keeps the expectations honest; Open
#     MPI's osc/rdma then runs over btl/ofi on the provider (its atomics
#     are executed by the provider: FI_CXL_STATS atomics > 0).
#
#   test_rma.sh CXLRUN PROVIDER_DIR MPICH_PROG MPICH_LIB [OMPI_PROG OMPI_LIB]
set -uo pipefail
CXLRUN=$1 PROVDIR=$2 MPROG=$3 MLIB=$4 OPROG=${5:-} OLIB=${6:-}
export CXLRUN_DIR
CXLRUN_DIR=$(mktemp -d /tmp/rma-test.XXXXXX)
out=$(mktemp /tmp/rma-out.XXXXXX)
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
atomics() { grep -oE 'atomics [0-9]+' "$out" | awk '{s += $2} END {print s + 0}'; }
libputs() { grep -oE 'CXLMPI_STATS rank [0-9]+: puts [0-9]+' "$out" | awk '{s += $5} END {print s + 0}'; }

pre=${CXL_MPI_PRELOAD:+$CXL_MPI_PRELOAD:}
asan=()
[ -n "${CXL_MPI_PRELOAD:-}" ] && asan=(--env "ASAN_OPTIONS=detect_leaks=0:abort_on_error=1")

extra=()
run() { # mpi prog lib mode hosts ranks
	local lib=()
	[ -n "$3" ] && lib=(--env "LD_PRELOAD=$pre$3")
	[ -z "$3" ] && [ -n "$pre" ] && lib=(--env "LD_PRELOAD=${pre%:}")
	timeout 300 "$CXLRUN" --mpi "$1" -t cxl -H "$5" -n "$6" --stats \
		--coherence "$4" --provider-dir "$PROVDIR" "${lib[@]}" \
		"${asan[@]}" "${extra[@]}" --env CXLMPI_STATS=1 -- "$2" >"$out" 2>&1
}
ok() { grep -qE '^rma: [1-9][0-9]* checks, 0 bad' "$out"; }

for mode in coherent emulated; do
	for hosts in 2 4; do
		what="mpich $mode $hosts hosts with libcxlmpi"
		run mpich "$MPROG" "$MLIB" $mode $hosts $hosts
		check ok "$what: wrong values"
		check "[ \$(libputs) -gt 0 ]" "$what: not a direct window"
		check "[ \$(direct) = 0 ]" "$what: RMA through the MPI library"
	done
done
extra=(--env CXLMPI_ALLOC_MEM=0)
run mpich "$MPROG" "$MLIB" emulated 2 2
extra=()
check ok "mpich emulated with libcxlmpi and CXLMPI_ALLOC_MEM=0: wrong values"
check "[ \$(libputs) = 0 ]" "mpich CXLMPI_ALLOC_MEM=0: a direct window over non-pool memory"
run mpich "$MPROG" "" emulated 2 4
check ok "mpich emulated without libcxlmpi: wrong values"
if [ -n "$OPROG" ]; then
	for mode in coherent emulated; do
		what="ompi $mode with libcxlmpi"
		run ompi "$OPROG" "$OLIB" $mode 2 4
		check ok "$what: wrong values"
		check "[ \$(libputs) -gt 0 ]" "$what: not a direct window"
	done
	run ompi "$OPROG" "" emulated 2 2
	check ok "ompi emulated without libcxlmpi: wrong values"
	# osc/rdma over btl/ofi: its atomics (locks, accumulates) executed
	# by the provider at the targets, not by the tcp BTL
	check "[ \$(atomics) -gt 0 ]" "ompi without libcxlmpi: one-sided not over the provider"
fi
echo "test_rma: $pass passed, $fail failed"
[ $fail = 0 ]
