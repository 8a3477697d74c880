#!/usr/bin/env bash
# Run tests/mp/xhost.c as N processes on N emulated hosts of this machine
# (one CXL_HOST_KEY each; their ids come from the pool), on a fresh pool
# file in the given coherence mode. The same program runs across cxlvm
# guests in tests/vm/test_cxlvm.sh.
#   run_xhost.sh XHOST N MODE [XHOST ARGS...]
set -uo pipefail
XHOST=$1 N=$2 MODE=$3
shift 3
dir=$(mktemp -d /dev/shm/cxltest-xhost-XXXXXX)
trap 'rm -rf "$dir"' EXIT
export CXL_POOL=$dir/pool CXL_RUNDIR=$dir CXL_POOL_SIZE=64M \
	CXL_ARENA_CAPACITY=4096 CXL_MAX_PROCS=256 CXL_COHERENCE=$MODE
unset CXL_HOST_ID
pids=()
for r in $(seq 0 $((N - 1))); do
	CXL_HOST_KEY=xhost-$r timeout 300 "$XHOST" --rank "$r" --ranks "$N" "$@" &
	pids+=($!)
done
rc=0
for p in "${pids[@]}"; do
	wait "$p" || rc=1
done
exit $rc
