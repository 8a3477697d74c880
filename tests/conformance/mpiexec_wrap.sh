#!/usr/bin/env bash
# mpiexec for MPICH's runtests (tests/conformance/mpich_testsuite.sh passes
# it as -mpiexec=): runtests calls it as
#   mpiexec_wrap.sh -n NP [MPIEXEC-ARGS] [PROGRAM-WRAPPER] ./PROGRAM [ARGS]
# and reads the program's output from it. Each call gets a fresh private
# pool under /dev/shm (cxl transport), removed afterwards, and is bounded by
# MPIEXEC_TIMEOUT (set by runtests per test) plus a grace period: a hang
# prints "conformance: TIMEOUT" and fails the test instead of blocking.
# Configured by the environment that mpich_testsuite.sh exports:
#   CONF_FLAVOR     mpich | ompi
#   CONF_TRANSPORT  cxl | tcp
#   CONF_MODE       coherent | flush | emulated (cxl only)
#   CONF_MPIEXEC    the flavor's mpiexec / mpirun
#   CONF_PROVDIR    directory of libcxl-fi.so (cxl only)
#   CONF_HOSTS      emulated hosts: rank r is host testhost-(r % CONF_HOSTS) (CXL_HOST_KEY)
#                   (tests/mpi/hostwrap.sh, which runtests puts before the
#                   program through MPITEST_PROGRAM_WRAPPER)
#   CONF_POOLS      pool layout of the hosts (mpich_testsuite.sh -p; empty:
#                   one pool): hostwrap.sh gives host h pool entry h,
#                   CXL_POOL.N or none, and the provider its network link
set -u
limit=${MPIEXEC_TIMEOUT:-120}
dir= prte=
cleanup() {
	[ -n "$dir" ] && rm -rf "$dir"
	[ -n "$prte" ] && rm -rf "$prte"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

case $CONF_TRANSPORT in
cxl)
	dir=$(mktemp -d /dev/shm/cxlconf-XXXXXX) || exit 1
	export CXL_POOL=$dir/pool CXL_RUNDIR=$dir \
		CXL_POOL_SIZE=${CXL_POOL_SIZE:-256M} \
		CXL_ARENA_CAPACITY=${CXL_ARENA_CAPACITY:-8192} \
		CXL_JOB=mpi-$$ CXL_COHERENCE=$CONF_MODE \
		CXL_TEST_HOSTS=$CONF_HOSTS \
		FI_PROVIDER=cxl FI_PROVIDER_PATH=$CONF_PROVDIR
	if [ -n "${CONF_POOLS:-}" ]; then
		# several pools: peers elsewhere over tcp;ofi_rxm, which
		# FI_PROVIDER must leave visible
		export CXL_TEST_POOLS=$CONF_POOLS FI_CXL_NET='tcp;ofi_rxm' \
			FI_PROVIDER=cxl,tcp FI_TCP_IFACE=lo
	fi
	;;
tcp)
	export FI_PROVIDER=tcp
	unset FI_PROVIDER_PATH
	;;
*)
	echo "mpiexec_wrap.sh: unknown transport '$CONF_TRANSPORT'" >&2
	exit 2
	;;
esac

case $CONF_FLAVOR in
mpich)
	# Hydra enforces MPIEXEC_TIMEOUT itself; timeout(1) is the backstop.
	export MPIR_CVAR_CH4_NETMOD=ofi MPIR_CVAR_NOLOCAL=1
	timeout -k 10 $((limit + 20)) "$CONF_MPIEXEC" "$@"
	rc=$?
	;;
ompi)
	# pml cm + mtl ofi restricted to the one provider: if it cannot be
	# used, MPI_Init fails (tests/mpi/run_mpi.sh's ompi branch).
	export OMPI_MCA_opal_common_ofi_provider_include=${FI_PROVIDER%%,*}
	btl=self,ofi
	# across pools one-sided goes over Open MPI's tcp BTL (cxlrun's
	# ompi_args says why)
	[ -n "${CONF_POOLS:-}" ] && btl=self,tcp
	# PRRTE's session directories of this run only: in /tmp, one left by
	# a killed job stops a later launcher given its PID (docs/cxlrun.md)
	prte=$(mktemp -d /tmp/cxlconf-prte-XXXXXX) || exit 1
	timeout -k 10 "$limit" "$CONF_MPIEXEC" --allow-run-as-root \
		--prtemca prte_tmpdir_base "$prte" \
		--oversubscribe --mca pml cm --mca mtl ofi \
		--mca btl $btl --mca osc ^ucx "$@"
	rc=$?
	;;
*)
	echo "mpiexec_wrap.sh: unknown flavor '$CONF_FLAVOR'" >&2
	exit 2
	;;
esac
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
	echo "conformance: TIMEOUT: killed after the ${limit}s limit (+grace)"
fi
exit "$rc"
