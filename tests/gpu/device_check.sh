#!/usr/bin/env bash
# GPU_MEM_OPS on a real NVIDIA GPU: 2 MPICH ranks (2 emulated hosts, one
# pool file in /dev/shm) under MPS, every buffer checked, then one table.
#
#   tests/gpu/stage.sh            # here, after the build: build-gpu/
#   tests/gpu/device_check.sh     # there, from the repository root
#
#  1. tests/gpu/gpu_stream.c `test` (the reference's multi-backend tests
#     ported to device buffers: ring/echo, rsend, halo, two_queue,
#     barrier, allreduce, a one-way stream per size, a size mismatch) in
#     the coherent, flush and emulated modes, and `test mixed` (a GPU rank
#     with a THREAD rank);
#  2. `bench`: one-way latency and bandwidth of the GPU queue, host-staged
#     MPI (cuMemcpy + MPI over the cxl provider) and the THREAD queue on
#     host buffers, in the coherent and flush modes.
# Needs the NVIDIA driver (libcuda.so.1) and nvidia-cuda-mps-control; runs
# in about a minute. Exit status 0 only if every check passed.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
S=$(cd "${1:-$root/build-gpu}" && pwd) || exit 1
export LD_LIBRARY_PATH=$S/lib:$S/mpich/lib:$S/mpich/lib/mpich${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
tmp=$(mktemp -d /dev/shm/cxlgpu-XXXXXX)
fails=0
mps=0
cleanup() {
	[ $mps = 1 ] && echo quit | nvidia-cuda-mps-control >/dev/null 2>&1
	rm -rf "$tmp"
}
trap cleanup EXIT
nvidia-smi -L 2>/dev/null || echo "device_check: nvidia-smi not found"
# MPS: two processes share the GPU instead of being time-sliced
export CUDA_MPS_PIPE_DIRECTORY=$tmp/mps CUDA_MPS_LOG_DIRECTORY=$tmp/mpslog
mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
if nvidia-cuda-mps-control -d; then
	mps=1
	echo "device_check: MPS started"
else
	echo "device_check: MPS did not start; the ranks are time-sliced"
fi

# job MODE ARGS...: gpu_stream on 2 ranks, 2 emulated hosts
job() {
	local mode=$1 d
	shift
	d=$(mktemp -d "$tmp/job-XXXXXX")
	env CXL_POOL="$d/pool" CXL_RUNDIR="$d" CXL_POOL_SIZE=1G \
		CXL_ARENA_CAPACITY=8192 CXL_JOB="gpu-$$" CXL_COHERENCE="$mode" \
		CXL_TEST_HOSTS=2 FI_PROVIDER=cxl FI_PROVIDER_PATH="$S/fi" \
		MPIR_CVAR_CH4_NETMOD=ofi MPIR_CVAR_NOLOCAL=1 \
		timeout -k 5 150 "$S/mpich/bin/mpiexec" -n 2 \
		"$root/tests/mpi/hostwrap.sh" "$S/bin/mpich_gpu_stream" "$@" \
		>"$d/out" 2>&1
	local rc=$?
	grep -E "gpu_stream|libcxlmpi|FAIL|^\|" "$d/out" | head -40
	rm -rf "$d"
	return $rc
}

for mode in coherent flush emulated; do
	t0=$SECONDS
	if job "$mode" test; then r=passed; else r=FAILED; fails=$((fails + 1)); fi
	echo "device_check: test $mode: $r ($((SECONDS - t0)) s)"
done
if job coherent test mixed; then r=passed; else r=FAILED; fails=$((fails + 1)); fi
echo "device_check: test mixed coherent: $r"
for mode in coherent flush; do
	echo "device_check: bench, $mode mode ($(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1), MPS $([ $mps = 1 ] && echo on || echo off))"
	job "$mode" bench || fails=$((fails + 1))
done
echo "device_check: $fails failed step(s)"
[ $fails = 0 ]
