#!/usr/bin/env bash
# One job across two pools and a host without one (docs/multipool.md):
# cxlrun --groups puts emulated hosts in groups, each on a pool of its
# own, --no-pool adds hosts without a pool; the provider carries what
# crosses groups over its network link (FI_CXL_NET=tcp;ofi_rxm).
#
#   test_cxlrun_groups.sh CXLRUN PINGPONG SUITE [OMPI_PINGPONG OMPI_SUITE]
#
# PINGPONG is tests/mpi/mpi_pingpong.c (ranks 0 and 1 exchange every size
# with its data checked; the others only join MPI_Init/Finalize). Checks,
# from the FI_CXL_STATS line of each rank:
#   - groups 1,1 + one host without a pool, 3 ranks: 0 bad; ranks 0 and 1
#     are in different pools, so their pingpong took the network link
#     (net_sent >= 80 each), and the third rank used it too;
#   - one group of 2 + one host without a pool, 2 ranks: 0 bad, the link
#     is up (FI_CXL_NET set) but the two ranks share a pool: net_sent 0
#     and net_recv 0 on both, all messages through the pool;
#   - the first case without namespaces (cxlrun's fallback without
#     root), and under Open MPI when its build is given;
#   - SUITE (tests/mpi/mpi_suite.c: point-to-point, collectives,
#     communicators, one-sided with fence and lock) on 5 ranks in groups
#     of 2 and 2 and one host without a pool, under MPICH and Open MPI.
set -uo pipefail
CXLRUN=$1 PINGPONG=$2 SUITE=$3 OPINGPONG=${4:-} OSUITE=${5:-}
export CXLRUN_DIR
CXLRUN_DIR=$(mktemp -d /tmp/cxlrun-groups.XXXXXX)
work=$(mktemp -d /tmp/cxlrun-groups-out.XXXXXX)
trap 'rm -rf "$work"; "$CXLRUN" --cleanup-all >/dev/null 2>&1; rm -rf "$CXLRUN_DIR"' EXIT
# shellcheck source=../common/check.sh
. "$(dirname "$0")/../common/check.sh"
bad() { ok false "$*"; } # a failure, named on stderr
envs=()
if [ -n "${CXL_MPI_PRELOAD:-}" ]; then
	envs=(--env "LD_PRELOAD=$CXL_MPI_PRELOAD"
		--env "ASAN_OPTIONS=detect_leaks=0:abort_on_error=1")
fi
# field $2 of each cxl-stats line of file $1, one per line
fields() { grep -oE "cxl-stats: .*" "$1" | grep -oE " $2 [0-9]+" | awk '{print $2}'; }

run() { # name, cxlrun args...
	local name=$1
	shift
	if ! timeout -k 5 240 "$CXLRUN" --stats "${envs[@]}" "$@" \
		>"$work/$name" 2>&1 || ! grep -q "pingpong: .* 0 bad" "$work/$name"; then
		bad "$name: the job failed: $(tail -5 "$work/$name")"
		return 1
	fi
}

across() { # name, launcher args: ranks 0 and 1 in different pools
	local name=$1 n sent
	shift
	run "$name" --groups 1,1 --no-pool 1 -n 3 "$@" || return
	n=$(fields "$work/$name" net_sent | wc -l)
	ok [ "$n" = 3 ] # a cxl-stats line per rank
	# ranks 0 and 1: 82 pingpong messages each plus MPI's own; the
	# third: MPI's own (wire-up, finalize), also across pools
	big=$(fields "$work/$name" net_sent | awk '$1 >= 80' | wc -l)
	some=$(fields "$work/$name" net_sent | awk '$1 >= 1' | wc -l)
	ok [ "$big" = 2 ]  # ranks that sent the pingpong through the link
	ok [ "$some" = 3 ] # ranks that used the link
	echo "ok: $name: net_sent per rank: $(fields "$work/$name" net_sent | tr '\n' ' ')"
}

across mpich "$PINGPONG"
# the fallback without namespaces: emulated hosts by rank, tcp on lo
across mpich-no-netns --no-netns "$PINGPONG"

run within --groups 2 --no-pool 1 -n 2 "$PINGPONG"
for f in net_sent net_recv; do
	for v in $(fields "$work/within" $f); do
		ok [ "$v" = 0 ] # within one pool: nothing through the link
	done
done
for v in $(fields "$work/within" sent); do
	ok [ "$v" -ge 80 ] # within one pool: the pingpong went out
done
echo "ok: within one pool: sent $(fields "$work/within" sent | tr '\n' ' '); net_sent $(fields "$work/within" net_sent | tr '\n' ' ')"

if [ -n "$OPINGPONG" ]; then
	across ompi --mpi ompi "$OPINGPONG"
fi

suite() { # name, cxlrun args...
	local name=$1
	shift
	timeout -k 5 300 "$CXLRUN" "${envs[@]}" --groups 2,2 --no-pool 1 -n 5 \
		"$@" >"$work/$name" 2>&1
	if grep -q "mpi_suite: [0-9]* passed, 0 failed" "$work/$name"; then
		ok true
		echo "ok: $name: $(grep -m1 'mpi_suite:' "$work/$name")"
	else
		# the whole output: Open MPI's warnings span many lines
		bad "$name: $(grep -v '^ *$' "$work/$name" | tail -40)"
	fi
}
suite suite-mpich "$SUITE"
[ -n "$OSUITE" ] && suite suite-ompi --mpi ompi "$OSUITE"

check_done test_cxlrun_groups
