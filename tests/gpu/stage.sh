#!/usr/bin/env bash
# Gather what tests/gpu/device_check.sh needs on a GPU machine that has
# the NVIDIA driver but not this project's dependencies: the MPICH wheel's
# launcher and libraries, the cxl provider, libcxlshm, libcxlmpi and the
# GPU test program, all x86-64 binaries that need only glibc.
#
#   tests/gpu/stage.sh [DIR]    (default build-gpu; run after the build)
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$root/build-gpu}
b=$root/build
v=$root/.venv
for f in "$b/src/fabric/libcxl-fi.so" "$b/src/shm/libcxlshm.so.0" \
	"$b/src/mpi/libcxlmpi-mpich.so" "$b/tests/mpich_gpu_stream" \
	"$v/bin/mpiexec" "$v/lib/libmpi.so.12"; do
	if [ ! -e "$f" ]; then
		echo "stage.sh: $f is missing: run scripts/setup.sh and build (ninja -C build)" >&2
		exit 1
	fi
done
rm -rf "$out"
mkdir -p "$out/fi" "$out/lib" "$out/bin" "$out/mpich/bin" "$out/mpich/lib"
cp "$b/src/fabric/libcxl-fi.so" "$out/fi/"
cp -L "$b/src/shm/libcxlshm.so.0" "$b/src/mpi/libcxlmpi-mpich.so" "$out/lib/"
cp "$b/tests/mpich_gpu_stream" "$out/bin/"
# the provider's own needs that a CUDA image may lack
for l in libnuma.so.1 libuuid.so.1 libatomic.so.1; do
	p=$(ldconfig -p | awk -v l="$l" '$1 == l && /x86-64/ { print $NF; exit }')
	[ -n "$p" ] && cp -L "$p" "$out/lib/"
done
cp "$v/bin/mpiexec" "$v/bin/mpiexec.hydra" "$v/bin/hydra_pmi_proxy" \
	"$out/mpich/bin/"
# libmpi finds its libfabric through $ORIGIN/mpich
cp -L "$v/lib/libmpi.so.12" "$out/mpich/lib/"
cp -a "$v/lib/mpich" "$out/mpich/lib/"
# MPICH's headers, for tests/gpu/compile_reference.sh
cp -a "$v/include" "$out/mpich/include"
du -sh "$out"
