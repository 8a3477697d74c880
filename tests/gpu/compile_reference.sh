#!/usr/bin/env bash
# Compile the reference library's own test programs
# (mpi-advance/stream-triggering, tests/) unchanged against this
# project's include/stream-triggering.h, with nvcc for the CUDA backend,
# on a machine with the CUDA toolkit. Compile only: the programs are the
# reference's, not ours, and are not kept here.
#
#   tests/gpu/compile_reference.sh REF_TESTS_DIR MPI_INCLUDE_DIR
# REF_TESTS_DIR: the reference's tests/ folder. Prints one line per
# program; exit status 0 only if all compiled.
set -u
ref=$1 mpiinc=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mktemp -d)
ok=0 bad=0
for f in "$ref"/multi-backend/*.cpp "$ref"/benchmark/*.cpp \
	"$ref"/individual/thread/*.cpp; do
	[ -f "$f" ] || continue
	# only the programs of the MPIS_ API (pingpong_mpi*.cpp are plain
	# MPI baselines written for HIP only)
	grep -q "stream-triggering.h" "$f" || continue
	if nvcc -x cu -std=c++20 -DNEED_CUDA -DCUDA_BACKEND \
		-I"$root/include" -I"$ref/common" -I"$mpiinc" -c "$f" \
		-o "$out/x.o" \
		>"$out/log" 2>&1; then
		echo "compiled: ${f#$ref/}"
		ok=$((ok + 1))
	else
		echo "FAILED:   ${f#$ref/}"
		head -5 "$out/log"
		bad=$((bad + 1))
	fi
done
rm -rf "$out"
echo "compile_reference: $ok compiled, $bad failed"
[ $bad = 0 ] && [ $ok -gt 0 ]
