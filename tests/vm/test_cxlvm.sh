#!/usr/bin/env bash
# The whole stack across two kernels: two cxlvm guests (tools/cxlvm) whose
# /dev/dax0.0 maps the same memory, no CXL_HOST_ID anywhere (each guest
# gets its id from the pool), launched with the MPI libraries' own
# launchers across the guests' virtual network:
#   1. cxlpool format /dev/dax0.0 in guest 0; cxlpool info in guest 1
#      sees it (flush mode, the default on /dev/dax);
#   2. tests/mp/xhost.c, one process per guest (hosts, arena, rings,
#      bakery, barrier);
#   3. MPICH over the cxl provider: ping-pong (1 rank per guest), the MPI
#      suite with 4 and 8 ranks, an idle rank, probe/topology with
#      libcxlmpi, and libcxlmpi's pool windows (MPI_Alloc_mem/direct RMA,
#      MPI_Win_allocate_shared across the guests, one-sided operations);
#   4. Open MPI over cxl: ping-pong, the suite, and the libcxlmpi tests
#      of 3;
#   5. tcp over the guests' network: the same ping-pong;
#   6. latency and bandwidth, cxl and tcp, one table (bench/mpi/mpi_bench);
#   full mode also: cxlbench stream and STREAM-PMem on /dev/dax0.0 (PMDK's
#   pool on each guest's private /dev/dax1.0), and cxlbench loaded on
#   /dev/dax0.0 in one guest with 2 vCPUs.
#
#   test_cxlvm.sh [--quick] BUILD_DIR [RESULTS_DIR]
#
# --quick (scripts/test.sh): 1, 2, the MPICH ping-pong and 6 (to 64 KiB),
# the shortest path from nothing to the table. RESULTS_DIR receives the
# table (cxlvm_mpi.md) and each step's time (cxlvm_steps.txt).
#
# Exit 0 if every check passed, 1 if one failed, 77 if no guest can be
# booted here (no qemu, or not root): ctest reports that as skipped.
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
QUICK=0
if [ "${1:-}" = --quick ]; then
	QUICK=1
	shift
fi
B=$(cd "${1:?usage: test_cxlvm.sh [--quick] BUILD_DIR [RESULTS_DIR]}" && pwd)
RES=${2:-}
CXLVM=$REPO/tools/cxlvm/cxlvm
NAME=t$$
V=("$CXLVM" --name "$NAME")
start=$(date +%s.%N)
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() {
	fail=$((fail + 1))
	echo "FAIL: $*" >&2
}
check() { if eval "$1"; then ok; else bad "$2"; fi; }
out=$(mktemp /tmp/cxlvm-test.XXXXXX)
trap '"${V[@]}" down >/dev/null 2>&1; rm -f "$out" "$out".*' EXIT
elapsed() { python3 -c "import sys,time; print(f'{time.time() - float(sys.argv[1]):.1f}')" "$start"; }
steps=$out.steps
step() { echo "$(elapsed) s  $*" | tee -a "$steps"; }

if ! why=$("$CXLVM" check 2>&1); then
	echo "test_cxlvm: skipped: $why"
	exit 77
fi
# full mode: each guest also gets a private /dev/dax1.0 (PMDK's pool)
UPARGS=()
[ $QUICK = 0 ] && UPARGS=(--pmem-size 256M)
if ! "${V[@]}" up "${UPARGS[@]}" >"$out" 2>&1; then
	cat "$out" >&2
	echo "test_cxlvm: the guests did not boot" >&2
	exit 1
fi
grep -E "KVM|tcg|ready" "$out"
TCG=0
grep -q "(tcg)" "$out" && TCG=1
step "2 guests up"

POOLENV=(-e CXL_POOL=/dev/dax0.0)
# 1. format in one guest, see it in the other
"${V[@]}" exec 0 -- "$B/tools/cxlpool" format /dev/dax0.0 --capacity 8192 \
	--max-hosts 8 --max-procs 256 >"$out" 2>&1
check "grep -q 'formatted /dev/dax0.0' '$out'" "cxlpool format /dev/dax0.0 in guest 0: $(cat "$out")"
"${V[@]}" exec 1 "${POOLENV[@]}" -- "$B/tools/cxlpool" info >"$out" 2>&1
check "grep -q 'mode flush' '$out' && grep -q 'capacity 8192' '$out'" "guest 1 does not see guest 0's format: $(cat "$out")"
step "pool formatted in guest 0, seen by guest 1"
XARGS="--msgs 20000 --rounds 200"
[ $QUICK = 1 ] && XARGS="--msgs 5000 --rounds 50"

# 2. libcxlshm, one process per guest
"${V[@]}" exec all "${POOLENV[@]}" -- sh -c \
	"$B/tests/xhost --rank \$CXLVM_GUEST --ranks 2 $XARGS" >"$out" 2>&1
cat "$out"
check "[ \$(grep -c 'checks, 0 bad' '$out') = 2 ]" "xhost across the guests"
check "grep -q 'cxlvm0.*mode flush' '$out' && grep -q 'cxlvm1.*mode flush' '$out'" "xhost: not one rank per guest in the flush mode"
step "xhost (libcxlshm) across the guests"

# pool characterization on the device (full mode): STREAM with the arrays
# in DRAM, in /dev/dax0.0 and interleaved at 2 MiB, and STREAM-PMem
if [ $QUICK = 0 ]; then
	"${V[@]}" exec 0 -- "$B/tools/cxlbench" stream --quick --mode flush \
		--pool /dev/dax0.0 --ratios 1:1 >"$out" 2>&1
	rc=$?
	check "[ $rc = 0 ] && [ \$(grep -c 'Solution Validates' '$out') = 9 ] && grep -q 'interleaving at 2 MiB' '$out'" "cxlbench stream on /dev/dax0.0 (exit $rc)"
	"${V[@]}" exec 0 -- "$B/tools/cxlbench" pmem --quick --mode flush \
		--pool /dev/dax0.0 --pmem-file /dev/dax1.0 >"$out" 2>&1
	rc=$?
	check "[ $rc = 0 ] && grep -q 'pool /dev/dax1.0' '$out' && [ \$(grep -c 'Solution Validates' '$out') -ge 5 ]" "cxlbench pmem on /dev/dax0.0, PMDK on /dev/dax1.0 (exit $rc): $(tail -3 "$out")"
	step "cxlbench stream and pmem on /dev/dax0.0"
fi

# MPI over cxl: the provider, the pool, a job namespace
PROV=$B/src/fabric
MPICH_ENV=(-genv CXL_POOL /dev/dax0.0 -genv CXL_JOB vmtest
	-genv FI_PROVIDER cxl -genv FI_PROVIDER_PATH "$PROV"
	-genv MPIR_CVAR_CH4_NETMOD ofi -genv MPIR_CVAR_NOLOCAL 1
	-genv MPIR_CVAR_DEBUG_SUMMARY 1 -genv FI_CXL_STATS 1)
mpich() { # mpich TAG NP [mpiexec args] PROG...
	local tag=$1 np=$2
	shift 2
	timeout 600 "${V[@]}" mpiexec -n "$np" "${MPICH_ENV[@]}" "$@" >"$out.$tag" 2>&1
	echo "rc $?" >>"$out.$tag"
	grep -E "^(rank|pingpong|mpi_suite|mpi_idle|idle|topo|poolmem|shwin|rma):|on cxlvm|cxl-stats" "$out.$tag" | sed "s/^/  [$tag] /" | head -12
	step "MPICH $tag"
}
# 3. MPICH
mpich pingpong 2 "$B/tests/mpich_mpi_pingpong"
check "grep -q 'pingpong: .* 0 bad' '$out.pingpong' && grep -q 'rc 0' '$out.pingpong'" "MPICH ping-pong over cxl across the guests"
check "grep -q 'libfabric provider: cxl' '$out.pingpong'" "MPICH did not select the cxl provider"
check "[ \$(grep -oE 'on cxlvm[0-9]' '$out.pingpong' | sort -u | wc -l) = 2 ]" "MPICH: the ranks were not on both guests"
check "[ \$(grep -oE 'cxl-stats: .* host [0-9]+' '$out.pingpong' | awk '{print \$NF}' | sort -u | wc -l) = 2 ]" "the guests did not get distinct host ids from the pool"
if [ $QUICK = 0 ]; then
mpich suite 4 "$B/tests/mpich_mpi_suite"
check "grep -q 'mpi_suite: [0-9]* passed, 0 failed' '$out.suite' && grep -q 'rc 0' '$out.suite'" "MPICH MPI suite, 4 ranks over 2 guests"
LIBM=$B/src/mpi/libcxlmpi-mpich.so
mpich topo 2 -genv LD_PRELOAD "$LIBM" "$B/tests/mpich_mpi_topo"
check "grep -q 'topo: [0-9]* checks, 0 bad' '$out.topo'" "MPICH probe/topology with libcxlmpi"
mpich poolmem 2 -genv LD_PRELOAD "$LIBM" -genv CXLMPI_STATS 1 "$B/tests/mpich_mpi_poolmem"
check "grep -q 'poolmem: [0-9]* checks, 0 bad' '$out.poolmem'" "libcxlmpi pool memory and direct windows across the guests"
check "grep -qE 'CXLMPI_STATS rank [0-9]+: puts [1-9]' '$out.poolmem'" "libcxlmpi did no direct RMA across the guests"
mpich shwin 2 -genv LD_PRELOAD "$LIBM" "$B/tests/mpich_mpi_shwin"
check "grep -q 'shwin: [0-9]* checks, 0 bad' '$out.shwin'" "MPI_Win_allocate_shared across the guests"
mpich rma 2 -genv LD_PRELOAD "$LIBM" "$B/tests/mpich_mpi_rma"
check "grep -q 'rma: [0-9]* checks, 0 bad' '$out.rma'" "one-sided operations on pool windows across the guests"
mpich suite8 8 "$B/tests/mpich_mpi_suite"
check "grep -q 'mpi_suite: [0-9]* passed, 0 failed' '$out.suite8'" "MPICH MPI suite, 8 ranks over 2 guests"
# FI_CXL_IDLE_POLLS counts polls, calibrated for native CPUs; under TCG
# each poll is tens of times slower, so the idle rank would spin for
# seconds before sleeping: scale it down there
IDLE=()
[ $TCG = 1 ] && IDLE=(-genv FI_CXL_IDLE_POLLS 2000)
mpich idle 2 "${IDLE[@]}" "$B/tests/mpich_mpi_idle" 2 0.5
check "grep -q 'mpi_idle: 1 passed, 0 failed' '$out.idle'" "an idle rank across the guests kept spinning"

# 4. Open MPI (cm + ofi, the provider forced)
ompi() { # ompi TAG NP PROG...
	local tag=$1 np=$2
	shift 2
	timeout 600 "${V[@]}" mpirun -n "$np" --map-by node --mca pml cm \
		--mca mtl ofi --mca btl self,ofi --mca osc ^ucx \
		-x CXL_POOL=/dev/dax0.0 -x CXL_JOB=vmtest -x FI_PROVIDER=cxl \
		-x FI_PROVIDER_PATH="$PROV" -x FI_CXL_STATS=1 \
		-x OMPI_MCA_opal_common_ofi_provider_include=cxl \
		"$@" >"$out.$tag" 2>&1
	echo "rc $?" >>"$out.$tag"
	grep -E "^(pingpong|mpi_suite|topo|poolmem|shwin|rma):|on cxlvm" "$out.$tag" | sed "s/^/  [$tag] /" | head -6
	step "Open MPI $tag"
}
if [ -x "$B/tests/ompi_mpi_pingpong" ]; then
	ompi ompi-pingpong 2 "$B/tests/ompi_mpi_pingpong"
	check "grep -q 'pingpong: .* 0 bad' '$out.ompi-pingpong' && grep -q 'rc 0' '$out.ompi-pingpong'" "Open MPI ping-pong over cxl across the guests"
	check "[ \$(grep -oE 'on cxlvm[0-9]' '$out.ompi-pingpong' | sort -u | wc -l) = 2 ]" "Open MPI: the ranks were not on both guests"
	ompi ompi-suite 4 "$B/tests/ompi_mpi_suite"
	check "grep -q 'mpi_suite: [0-9]* passed, 0 failed' '$out.ompi-suite'" "Open MPI MPI suite, 4 ranks over 2 guests"
	LIBO=$B/src/mpi/libcxlmpi-ompi.so
	if [ -f "$LIBO" ]; then
		ompi ompi-topo 2 -x LD_PRELOAD="$LIBO" "$B/tests/ompi_mpi_topo"
		check "grep -q 'topo: [0-9]* checks, 0 bad' '$out.ompi-topo'" "Open MPI probe/topology with libcxlmpi"
		ompi ompi-poolmem 2 -x LD_PRELOAD="$LIBO" "$B/tests/ompi_mpi_poolmem"
		check "grep -q 'poolmem: [0-9]* checks, 0 bad' '$out.ompi-poolmem'" "Open MPI: libcxlmpi pool memory and windows across the guests"
		ompi ompi-shwin 2 -x LD_PRELOAD="$LIBO" "$B/tests/ompi_mpi_shwin"
		check "grep -q 'shwin: [0-9]* checks, 0 bad' '$out.ompi-shwin'" "Open MPI: MPI_Win_allocate_shared across the guests"
		ompi ompi-rma 2 -x LD_PRELOAD="$LIBO" "$B/tests/ompi_mpi_rma"
		check "grep -q 'rma: [0-9]* checks, 0 bad' '$out.ompi-rma'" "Open MPI: one-sided operations on pool windows across the guests"
	fi
else
	echo "test_cxlvm: Open MPI programs not built; its runs skipped"
fi

# 5. tcp over the guests' virtual network
MPICH_ENV=(-genv FI_PROVIDER tcp -genv MPIR_CVAR_CH4_NETMOD ofi
	-genv MPIR_CVAR_DEBUG_SUMMARY 1 -genv FI_TCP_IFACE eth0)
mpich tcp-pingpong 2 "$B/tests/mpich_mpi_pingpong"
check "grep -q 'pingpong: .* 0 bad' '$out.tcp-pingpong' && grep -q 'libfabric provider: tcp' '$out.tcp-pingpong'" "MPICH ping-pong over tcp across the guests"
fi # QUICK
MAX=1048576 ITERS=()
[ $QUICK = 1 ] && MAX=65536 ITERS=(--iters 30)

# 6. latency and bandwidth, cxl and tcp (TCG: the guests' CPUs are
#    emulated, so these are functional figures, not hardware ones)
if [ -x "$B/bench/mpi_bench" ]; then
	MPICH_ENV=(-genv CXL_POOL /dev/dax0.0 -genv CXL_JOB vmtest
		-genv FI_PROVIDER cxl -genv FI_PROVIDER_PATH "$PROV"
		-genv MPIR_CVAR_CH4_NETMOD ofi)
	mpich lat-cxl 2 "$B/bench/mpi_bench" latency --quick --max $MAX "${ITERS[@]}"
	mpich bw-cxl 2 "$B/bench/mpi_bench" bw --quick --max $MAX "${ITERS[@]}"
	MPICH_ENV=(-genv FI_PROVIDER tcp -genv MPIR_CVAR_CH4_NETMOD ofi
		-genv FI_TCP_IFACE eth0)
	mpich lat-tcp 2 "$B/bench/mpi_bench" latency --quick --max $MAX "${ITERS[@]}"
	mpich bw-tcp 2 "$B/bench/mpi_bench" bw --quick --max $MAX "${ITERS[@]}"
	python3 - "$out" "${RES:-}" <<'EOF'
import re, sys
base, res = sys.argv[1], sys.argv[2]
def load(tag):
    d = {}
    try:
        for m in re.finditer(r"^RESULT\s+\S+\s+(\d+)\s+(\S+)\s+(\S+)",
                             open(f"{base}.{tag}").read(), re.M):
            d[int(m.group(1))] = float(m.group(2))
    except OSError:
        pass
    return d
lc, lt, bc, bt = (load(t) for t in ("lat-cxl", "lat-tcp", "bw-cxl", "bw-tcp"))
sizes = sorted(set(lc) | set(bc))
rows = ["| size | cxl latency (us) | tcp latency (us) | cxl bandwidth (MB/s) | tcp bandwidth (MB/s) |",
        "|---:|---:|---:|---:|---:|"]
f = lambda d, s, p: f"{d[s]:.{p}f}" if s in d else "-"
for s in sizes:
    rows.append(f"| {s} | {f(lc, s, 2)} | {f(lt, s, 2)} | {f(bc, s, 1)} | {f(bt, s, 1)} |")
print("\nMPICH across 2 cxlvm guests (/dev/dax0.0, flush mode; tcp over the guests' virtio network)")
print("\n".join(rows))
if res:
    open(f"{res}/cxlvm_mpi.md", "w").write("\n".join(rows) + "\n")
ok = all(d.get(8, 0) > 0 and len(d) >= 10 for d in (lc, lt, bc, bt))
sys.exit(0 if ok else 1)
EOF
	check "[ $? = 0 ]" "the latency/bandwidth table across the guests is incomplete"
fi

step "latency/bandwidth table"
[ -n "$RES" ] && cp "$steps" "$RES/cxlvm_steps.txt"

# teardown leaves nothing: no qemu, namespace, pool file or state
"${V[@]}" down >/dev/null 2>&1
check "! pgrep -f 'qemu-system-x86_64 -name cxlvm.*cxlvm-$NAME' >/dev/null" "qemu still runs after 'cxlvm down'"
check "[ ! -e /run/netns/cxlvm-$NAME ] && [ ! -e /dev/shm/cxlvm-$NAME.pool ] && [ ! -e /dev/shm/cxlvm-$NAME-pmem0.pool ] && [ ! -e /run/cxlvm/$NAME ]" "'cxlvm down' left its namespace, pool, private NVDIMM or state behind"

# full mode: loaded latency on /dev/dax0.0 needs 2 CPUs (one chases, one
# loads): one guest with 2 vCPUs
if [ $QUICK = 0 ]; then
	"$CXLVM" --name "${NAME}s" run --guests 1 --smp 2 -- sh -c "
		$B/tools/cxlpool format /dev/dax0.0 --capacity 64 >/dev/null &&
		$B/tools/cxlbench loaded --quick --pool /dev/dax0.0 --mode flush --mix R,NT-W" >"$out" 2>&1
	rc=$?
	grep -E "traffic|^\[cxlvm0\]   (0|idle) " "$out" | head -12
	check "[ $rc = 0 ] && [ \$(grep -c 'traffic, 1 load thread' '$out') = 4 ] && grep -q 'flush.*traffic' '$out'" "cxlbench loaded on /dev/dax0.0 with 2 vCPUs (exit $rc): $(tail -3 "$out")"
	step "cxlbench loaded on /dev/dax0.0 (1 guest, 2 vCPUs)"
fi
echo "test_cxlvm: $pass passed, $fail failed, $(elapsed) s from nothing to the table"
[ "$fail" -eq 0 ]
