# Sourced by the fault tests that run MPI jobs on a private pool
# (mpi_kill.sh, pool_full.sh, live_corrupt.sh). Needs MODE and PROVDIR.
fails=0
bad() { # a failed check: said on stderr, counted in $fails
	echo "FAIL: $*" >&2
	fails=$((fails + 1))
}
seconds_since() { # seconds since $1 (date +%s.%N), one decimal
	awk -v a="$(date +%s.%N)" -v b="$1" 'BEGIN { printf "%.1f", a - b }'
}
# pool_job_env DIR JOB HOSTS: the variables of an MPICH job over cxl on the
# pool DIR/pool (run files in DIR), ranks on HOSTS emulated hosts
# (tests/mpi/hostwrap.sh); for `env $(pool_job_env ...) VAR=... CMD` (no
# blanks in the paths). Later assignments override these.
pool_job_env() {
	echo CXL_POOL="$1/pool" CXL_RUNDIR="$1" CXL_JOB="$2" \
		CXL_COHERENCE="$MODE" CXL_TEST_HOSTS="$3" FI_PROVIDER=cxl \
		FI_PROVIDER_PATH="$PROVDIR" MPIR_CVAR_CH4_NETMOD=ofi \
		MPIR_CVAR_NOLOCAL=1 LD_PRELOAD="${CXL_MPI_PRELOAD:-}"
}
