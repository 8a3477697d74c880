#!/usr/bin/env bash
# On a GPU machine, from the repository root: gpu_stream bench-small with
# several builds of libcxlmpi side by side (build-gpu/lib-NAME/), rounds
# alternating, 2 ranks under MPS, coherent mode. Prints one table per run.
#
#   tests/gpu/device_ab.sh ROUNDS NAME...   (NAME "new": build-gpu/lib)
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
S=$root/build-gpu
rounds=$1
shift
base=$S/lib:$S/mpich/lib:$S/mpich/lib/mpich
tmp=$(mktemp -d /dev/shm/cxlab-XXXXXX)
export CUDA_MPS_PIPE_DIRECTORY=$tmp/mps CUDA_MPS_LOG_DIRECTORY=$tmp/mpslog
mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
nvidia-cuda-mps-control -d && echo "device_ab: MPS started"
trap 'echo quit | nvidia-cuda-mps-control >/dev/null 2>&1; rm -rf "$tmp"' EXIT
for r in $(seq "$rounds"); do
	for v in "$@"; do
		lib=$S/lib-$v
		[ "$v" = new ] && lib=$S/lib
		d=$(mktemp -d "$tmp/job-XXXXXX")
		echo "device_ab: round $r, $v"
		env LD_LIBRARY_PATH="$lib:$base" CXL_POOL="$d/pool" \
			CXL_RUNDIR="$d" CXL_POOL_SIZE=1G CXL_ARENA_CAPACITY=8192 \
			CXL_JOB="ab-$$" CXL_COHERENCE=coherent CXL_TEST_HOSTS=2 \
			FI_PROVIDER=cxl FI_PROVIDER_PATH="$S/fi" \
			MPIR_CVAR_CH4_NETMOD=ofi MPIR_CVAR_NOLOCAL=1 \
			timeout -k 5 60 "$S/mpich/bin/mpiexec" -n 2 \
			"$root/tests/mpi/hostwrap.sh" "$S/bin/mpich_gpu_stream" \
			"${AB_WHAT:-bench-small}" >"$d/out" 2>&1
		echo "device_ab: rc $?"
		grep -E "^\||gpu_stream|FAIL|rror" "$d/out" | head -12
		rm -rf "$d"
	done
done
