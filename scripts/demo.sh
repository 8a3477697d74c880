#!/usr/bin/env bash
# The main job: characterise an emulated CXL pool on this machine.
# Installs what is missing, builds, then runs
#   - cxlbench: write+flush / read+invalidate latency per flush instruction,
#     pointer chase, copy bandwidth vs threads, coherence ops per operation;
#   - ring_bench: messages between two emulated hosts through pool rings,
#     latency, throughput and coherence operations per message;
#   - compare_transports: unmodified MPICH over the cxl provider, next to
#     MPICH's shared memory, libfabric shm and tcp (latency, bandwidth).
# Results (tables, CSV) go to results/. Until the MPI layers exist
# (issues 3-5) this is the demo; cxlrun will replace it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
echo "demo: building (release)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C build >/dev/null
mkdir -p results
echo
echo "==== cxlbench: the pool, next to local DRAM"
build/tools/cxlbench ${QUICK:+--quick} --csv results/cxlbench.csv | tee results/cxlbench.txt
echo
echo "==== ring_bench: messages between two emulated hosts"
build/bench/ring_bench ${QUICK:+--quick} --csv results/ring_bench.csv | tee results/ring_bench.txt
echo
echo "==== MPI over the pool: MPICH with the cxl provider next to MPICH shm, libfabric shm and tcp"
.venv/bin/python bench/compare_transports.py --quick --tests latency,bw \
	--out results/mpi | tee results/mpi_transports.txt
echo
echo "demo: results in $(pwd)/results/ (cxlbench.{txt,csv}, ring_bench.{txt,csv}, mpi/ tables, CSV and PNG plots)"
