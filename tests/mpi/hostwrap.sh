#!/bin/sh
# Put MPI rank r on emulated host r % CXL_TEST_HOSTS (a distinct identity,
# CXL_HOST_KEY, the no-root emulation of several hosts on one pool; each
# host then gets its id from the pool), then run the program.
# CXL_TEST_ODD_ENV="VAR=VALUE", if set, is exported to odd ranks only
# (processes that differ in a setting).
# CXL_TEST_POOLS="P0,P1,...", if set, gives host h entry h (cycled): pool
# file CXL_POOL.P, or none for "-" (the provider's network-only mode).
# Hydra exports PMI_RANK; Open MPI exports OMPI_COMM_WORLD_RANK.
r=${PMI_RANK:-${OMPI_COMM_WORLD_RANK:-0}}
unset CXL_HOST_ID
h=$((r % ${CXL_TEST_HOSTS:-1}))
CXL_HOST_KEY=testhost-$h
export CXL_HOST_KEY
if [ -n "${CXL_TEST_POOLS:-}" ]; then
	p=$(echo "$CXL_TEST_POOLS" | awk -F, -v h="$h" '{print $(h % NF + 1)}')
	if [ "$p" = - ]; then
		unset CXL_POOL CXL_RUNDIR
	else
		export CXL_POOL="$CXL_POOL.$p"
	fi
fi
if [ -n "${CXL_TEST_ODD_ENV:-}" ] && [ $((r % 2)) = 1 ]; then
	export "${CXL_TEST_ODD_ENV?}"
fi
exec "$@"
