#!/usr/bin/env bash
# Show where Open MPI's dynamic-window failures in MPICH's rma suite come
# from (docs/conformance.md, "Open MPI: dynamic windows"):
# linked_list_bench_lock_all and _lock_shr fail with MPI_ERR_RMA_RANGE or
# MPI_ERR_RMA_ATTACH over cxl, and equally without libfabric at all, on
# Open MPI's own BTLs. Each test runs RUNS times (default 5), 4 ranks, in
# these set-ups:
#   tcp-4hosts   osc/rdma over Open MPI's tcp BTL, 4 emulated hosts
#                (tools/cxlrun -t tcp: network namespaces, veth)
#   sm-1host     osc/rdma over Open MPI's sm BTL (pml ob1), one host
#   cxl-4hosts   osc/rdma over btl/ofi on the cxl provider, 4 hosts
#   cxl-1host    the same in one namespace (as the conformance harness)
#   mpich-cxl    MPICH's build of the same test over cxl, 4 hosts, for
#                reference (only if mpich_testsuite.sh -f mpich rma ran)
# and, with osc_rdma_max_attach raised from 64 to 4096, tcp-4hosts and
# cxl-4hosts again. Prints per set-up: runs, passes, MPI_ERR_RMA_RANGE,
# MPI_ERR_RMA_ATTACH, reads refused by the cxl provider (btl/ofi aborts on
# the error completion), runs killed at the time limit, other failures.
#   tests/conformance/ompi_dynwin.sh [RUNS]
# Needs the Open MPI build of the suite (mpich_testsuite.sh -f ompi rma)
# and the project built (build/src/fabric/libcxl-fi.so). The namespaced
# set-ups need root (cxlrun falls back to one namespace without it and
# says so).
set -u
RUNS=${1:-5}
REPO=$(cd "$(dirname "$0")/../.." && pwd)
T=$REPO/build-conformance/mpich-testsuite/ompi/mpich-4.0.2/test/mpi/rma
TM=$REPO/build-conformance/mpich-testsuite/mpich/mpich-4.0.2/test/mpi/rma
MPIRUN=$REPO/.venv-ompi/bin/mpirun
CXLRUN=$REPO/tools/cxlrun/cxlrun
for p in linked_list_bench_lock_all linked_list_bench_lock_shr; do
	[ -x "$T/$p" ] || {
		echo "ompi_dynwin.sh: $T/$p is not built: run" \
			"tests/conformance/mpich_testsuite.sh -f ompi rma first" >&2
		exit 3
	}
done
[ -f "$REPO/build/src/fabric/libcxl-fi.so" ] || {
	echo "ompi_dynwin.sh: build/src/fabric/libcxl-fi.so missing: build the project" >&2
	exit 3
}

# one run of PROG in SETUP with extra mpirun MCA settings (env); prints
# pass | range | attach | refused | timeout | other
run_one() {
	local setup=$1 prog=$2 out d rc envs=()
	out=$(mktemp)
	# cxlrun hands its --env settings to every rank
	[ -n "${OMPI_MCA_osc_rdma_max_attach:-}" ] &&
		envs=(--env "OMPI_MCA_osc_rdma_max_attach=$OMPI_MCA_osc_rdma_max_attach")
	case $setup in
	tcp-4hosts)
		timeout 300 "$CXLRUN" -t tcp --mpi ompi -n 4 -H 4 "${envs[@]}" "./$prog" >"$out" 2>&1
		rc=$?
		;;
	sm-1host)
		d=$(mktemp -d /tmp/dynwin-prte-XXXXXX)
		timeout 120 "$MPIRUN" --allow-run-as-root --oversubscribe -n 4 \
			--prtemca prte_tmpdir_base "$d" --mca pml ob1 \
			--mca btl self,sm --mca osc rdma "./$prog" >"$out" 2>&1
		rc=$?
		rm -rf "$d"
		;;
	cxl-4hosts)
		timeout 300 "$CXLRUN" --mpi ompi -n 4 -H 4 --coherence coherent \
			"${envs[@]}" "./$prog" >"$out" 2>&1
		rc=$?
		;;
	mpich-cxl)
		timeout 300 "$CXLRUN" -n 4 -H 4 --coherence coherent \
			"$TM/$prog" >"$out" 2>&1
		rc=$?
		;;
	cxl-1host)
		d=$(mktemp -d /dev/shm/dynwin-XXXXXX)
		CXL_POOL=$d/pool CXL_RUNDIR=$d CXL_POOL_SIZE=256M CXL_JOB=dynwin-$$ \
			FI_PROVIDER=cxl FI_PROVIDER_PATH=$REPO/build/src/fabric \
			OMPI_MCA_opal_common_ofi_provider_include=cxl \
			timeout 120 "$MPIRUN" --allow-run-as-root --oversubscribe -n 4 \
			--prtemca prte_tmpdir_base "$d/prte" --mca pml cm \
			--mca mtl ofi --mca btl self,ofi --mca osc ^ucx \
			"$REPO/tests/mpi/hostwrap.sh" "./$prog" >"$out" 2>&1
		rc=$?
		rm -rf "$d"
		;;
	esac
	if [ $rc -eq 0 ] && grep -aq "No Errors" "$out"; then
		echo pass
	elif grep -aq MPI_ERR_RMA_RANGE "$out"; then
		echo range
	elif grep -aq MPI_ERR_RMA_ATTACH "$out"; then
		echo attach
	elif grep -aq "fi_cq_readerr: Invalid argument" "$out"; then
		echo refused
	elif [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
		echo timeout
	else
		echo other
		sed 's/^/    | /' "$out" | grep -av '^    | *$' | head -5 >&2
	fi
	rm -f "$out"
}

cd "$T" || exit 3
printf '%-28s %-14s %4s %4s %5s %6s %7s %7s %5s\n' test setup runs pass \
	range attach refused timeout other
for prog in linked_list_bench_lock_all linked_list_bench_lock_shr; do
	cfgs="tcp-4hosts sm-1host cxl-4hosts cxl-1host tcp-4hosts:4096 cxl-4hosts:4096"
	[ -x "$TM/$prog" ] && cfgs="$cfgs mpich-cxl"
	for cfg in $cfgs; do
		setup=${cfg%%:*}
		unset OMPI_MCA_osc_rdma_max_attach
		label=$setup
		if [ "$cfg" != "$setup" ]; then
			export OMPI_MCA_osc_rdma_max_attach=${cfg#*:}
			label="$setup+ma"
		fi
		declare -A n=([pass]=0 [range]=0 [attach]=0 [refused]=0
			[timeout]=0 [other]=0)
		for _ in $(seq "$RUNS"); do
			r=$(run_one "$setup" "$prog")
			n[$r]=$((n[$r] + 1))
		done
		printf '%-28s %-14s %4d %4d %5d %6d %7d %7d %5d\n' "$prog" \
			"$label" "$RUNS" "${n[pass]}" "${n[range]}" "${n[attach]}" \
			"${n[refused]}" "${n[timeout]}" "${n[other]}"
		unset n
	done
done
echo "+ma: osc_rdma_max_attach=4096 (Open MPI's default is 64)"
