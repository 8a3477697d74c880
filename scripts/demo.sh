#!/usr/bin/env bash
# The main job: an emulated CXL cluster on this machine, and MPI over it.
# Installs what is missing, builds, then
#   1. cxlbench: the pool next to local DRAM (write+flush / read+invalidate
#      latency per flush instruction, pointer chase, copy bandwidth);
#   2. ring_bench: messages between two emulated hosts through pool rings,
#      latency, throughput and coherence operations per message;
#   3. MPI across 2 emulated hosts (tools/cxlrun: network and UTS
#      namespaces with their own hostnames, joined by veth links, one
#      pool): unmodified MPICH with the cxl provider (flush mode) next to
#      libfabric tcp over the same hosts' veth links and MPICH's shared
#      memory on one host. One table of latency and bandwidth per size with
#      flushed lines and fences per message, and PNG plots.
# Results (tables, CSV, plots) go to results/. QUICK=1 makes 1. and 2.
# shorter. Without root, cxlrun emulates the hosts in one namespace and
# says so.
set -euo pipefail
cd "$(dirname "$0")/.."
step() { printf '\n==== [%s/3] %s\n' "$1" "$2"; }
scripts/setup.sh
echo "demo: building (release)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C build >/dev/null
mkdir -p results
tools/cxlrun/cxlrun --cleanup >/dev/null 2>&1 || true # a crashed run's leftovers
step 1 "cxlbench: the pool, next to local DRAM"
build/tools/cxlbench ${QUICK:+--quick} --csv results/cxlbench.csv | tee results/cxlbench.txt
step 2 "ring_bench: messages between two emulated hosts"
build/bench/ring_bench ${QUICK:+--quick} --csv results/ring_bench.csv | tee results/ring_bench.txt
step 3 "MPI across 2 emulated hosts: cxl (pool) and tcp (veth), next to MPICH shared memory on one host"
.venv/bin/python bench/compare_transports.py --quick --tests latency,bw \
	--transports cxl-hosts,tcp-hosts,mpich-shm --cxl-mode flush \
	--cxl-stats-per-size --summary --no-provider-table \
	--out results/mpi | tee results/mpi_transports.txt
echo
echo "demo: results in $(pwd)/results/ (cxlbench, ring_bench, mpi/: CSV and the PNG plots above)"
