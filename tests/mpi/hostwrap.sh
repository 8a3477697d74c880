#!/bin/sh
# Put MPI rank r on emulated host r % CXL_TEST_HOSTS (distinct CXL_HOST_ID,
# the no-root emulation of several hosts on one pool), then run the program.
# Hydra exports PMI_RANK; Open MPI exports OMPI_COMM_WORLD_RANK.
r=${PMI_RANK:-${OMPI_COMM_WORLD_RANK:-0}}
CXL_HOST_ID=$((r % ${CXL_TEST_HOSTS:-1}))
export CXL_HOST_ID
exec "$@"
