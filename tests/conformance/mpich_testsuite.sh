#!/usr/bin/env bash
# Build MPICH's own test suite (test/mpi of MPICH 4.0.2, from Debian
# bookworm's source package) and run chosen directories of it over the cxl
# provider or over libfabric's tcp provider.
#
# Usage:
#   tests/conformance/mpich_testsuite.sh [options] [DIR...]
#   tests/conformance/mpich_testsuite.sh compare RESULTS_A RESULTS_B
#
#   DIR...           test/mpi directories to run (default: pt2pt coll comm
#                    topo rma datatype group init attr; env DIRS)
#   -f FLAVOR        mpich (default; .venv) or ompi (.venv-ompi; pml cm +
#                    mtl ofi, like tests/mpi/run_mpi.sh) (env FLAVOR)
#   -t TRANSPORT     cxl (default) or tcp (env TRANSPORT)
#   -m MODE          CXL_COHERENCE for cxl: coherent (default), flush,
#                    emulated (env MODE)
#   -n RANKS         at most RANKS ranks per test, 2 or 4 (default 4; env
#                    RANKS): runtests -maxnp=RANKS. A testlist entry asking
#                    for more ranks runs with RANKS; one asking for fewer
#                    keeps its count. Rank r is on emulated host r % HOSTS
#                    (env HOSTS, default RANKS: every rank its own host).
#   -p LAYOUT        pools of the emulated hosts (cxl only; env POOLS): a
#                    comma list, one entry per host (cycled), of a pool
#                    number or "-" for a host without a pool, e.g. "0,1"
#                    (two pools) or "0,1,0,-". Ranks on hosts of different
#                    pools, or on a host without one, talk over the
#                    provider's network link (FI_CXL_NET=tcp;ofi_rxm on lo;
#                    docs/multipool.md); Open MPI's one-sided then uses its
#                    tcp BTL, as under cxlrun --groups. Default: one pool.
#   -T SECONDS       time limit of each test (default 60; env MPITEST_TIMEOUT).
#                    A testlist timeLimit=N is used instead where given. A
#                    test killed at its limit counts as "timeout".
#   -x FILE          expected-pass list (env EXPECTED): one test per line,
#                    "dir/prog NP [ARGS]" as in the summary, or a prefix of
#                    it such as "dir/prog" (every instance); '#' comments, blank lines ignored. Exit 1
#                    if a listed test did not run and pass (for CI).
#   -l LISTS         runtests list files (default "testlist"; env TESTLISTS);
#                    "testlist,testlist.dtp" adds the DTPools datatype
#                    variants (pt2pt +76, rma +184, coll +12: slow)
#   -o DIR           results directory (default
#                    build-conformance/mpich-testsuite/results/NAME-DATE;
#                    a "latest-NAME" symlink points to it)
#
# "compare A B" prints the tests of two results directories side by side and
# lists those that fail in A but pass in B (e.g. A = cxl, B = tcp).
#
# Without -x, the exit status is 0 if the suite ran (whatever the tests did);
# 2 for usage errors, 3 if the source, the build or the transport check
# failed.
#
# What it does:
#  1. Source (cached in build-conformance/mpich-testsuite/dl): if Debian's
#     sources index is missing, adds a deb-src twin of the bookworm entry of
#     /etc/apt/sources.list{,.d} (needs root or sudo) and runs
#     `apt-get source --download-only mpich=4.0.2-*`. Only test/mpi is
#     extracted from the upstream tarball with tar: Debian's patches do not
#     touch test/mpi, so dpkg-source is not needed.
#  2. Build (build-conformance/mpich-testsuite/FLAVOR/mpich-4.0.2/test/mpi):
#     its pre-generated configure with CC=FLAVOR's mpicc, --disable-fortran
#     --disable-cxx --disable-spawn --disable-ft-tests --disable-romio
#     --disable-perftest, then make -j2 in util, dtpools and each DIR, all
#     under `flock /tmp/cxl-heavy-build.lock`. Reconfigured only when the
#     configure line changes; make is incremental. With ompi a program that
#     does not compile is reported as a failed test (make -k).
#  3. Transport check: a hello program must run and (mpich) report
#     "libfabric provider: TRANSPORT" with MPIR_CVAR_DEBUG_SUMMARY=1; for
#     ompi, OMPI_MCA_opal_common_ofi_provider_include=TRANSPORT makes
#     MPI_Init fail on any other provider.
#  4. Run: test/mpi/runtests per DIR, with -maxnp=RANKS, MPITEST_TIMEOUT,
#     MPITEST_CLEANUP=0 (keep the built programs),
#     -mpiexec=tests/conformance/mpiexec_wrap.sh (a fresh /dev/shm pool per
#     test for cxl, the transport's environment, a timeout(1) backstop) and
#     MPITEST_PROGRAM_WRAPPER=tests/mpi/hostwrap.sh (a distinct CXL_HOST_KEY).
#     A test passes if it exits 0 and prints only "No Errors" (runtests'
#     rule: any other output, e.g. a provider warning, fails it).
#
# Results directory: DIR.junit.xml / DIR.tap (runtests; failing tests' full
# output), DIR.log (runtests' console), results.tsv (status, time, test),
# walltime.tsv, summary.txt (what is printed at the end), build logs.
set -uo pipefail

REPO=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$REPO/tests/conformance
ROOT=${MPICH_TESTSUITE_DIR:-$REPO/build-conformance/mpich-testsuite}
HEAVY_LOCK=/tmp/cxl-heavy-build.lock
MPICH_UPSTREAM=4.0.2
ALL_DIRS="pt2pt coll comm topo rma datatype group init attr"

die() {
	echo "mpich_testsuite: $*" >&2
	exit "${EXIT:-3}"
}

# ---------------------------------------------------------------- summaries
# summarize RESULTS_DIR: results.tsv (status time test) from the junit files,
# then the table and the failing tests.
summarize() {
	/usr/bin/python3 - "$1" <<'PY'
import os, re, sys
res = sys.argv[1]
dirs, wall = [], {}
wpath = os.path.join(res, "walltime.tsv")
for l in open(wpath) if os.path.exists(wpath) else []:
    if l.strip():
        d, s = l.rstrip("\n").split("\t")[:2]
        dirs.append(d)
        wall[d] = s
rows = []          # (dir, status, time, id, first output lines)
head_re = re.compile(r'^\s*<testcase name="[^"]*? - \./(\S+) (.*?)" time="([^"]*)">(</testcase>)?')
for d in dirs:
    path = os.path.join(res, d + ".junit.xml")
    if not os.path.exists(path):
        continue
    cur = None
    for line in open(path, errors="replace"):
        m = head_re.match(line)
        if m:
            if cur:
                rows.append(cur)
            tid = " ".join((m.group(1) + " " + m.group(2)).split())
            t = float(m.group(3)) if m.group(3) else 0.0
            cur = [d, "pass", t, tid, [], None]
            if m.group(4):
                rows.append(cur)
                cur = None
            continue
        if cur is None:
            continue
        s = line.strip()
        if s.startswith("<failure"):
            cur[1] = "fail"
        elif s.startswith("<skipped"):
            cur[1] = "skip"
        elif s.startswith("Timeout:") and len(s.split()) > 1:
            # a program that did not build has an empty limit
            cur[5] = float(s.split()[1])
        elif s.startswith("## ") and not s.startswith("## Test output"):
            cur[4].append(s[3:])
        elif s.startswith("</testcase>"):
            rows.append(cur)
            cur = None
    if cur:
        rows.append(cur)
for r in rows:
    out = "\n".join(r[4])
    if r[1] == "fail" and ("conformance: TIMEOUT" in out
                           or (r[5] and r[2] >= r[5] - 5)):
        r[1] = "timeout"
with open(os.path.join(res, "results.tsv"), "w") as f:
    for r in rows:
        f.write("%s\t%.1f\t%s\n" % (r[1], r[2], r[3]))
with open(os.path.join(res, "failures.txt"), "w") as f:
    for r in rows:
        if r[1] in ("fail", "timeout"):
            f.write("== %s %s (%.1fs)\n" % (r[1].upper(), r[3], r[2]))
            for l in r[4][:15]:
                f.write("   " + l + "\n")
meta = open(os.path.join(res, "run.txt")).read().strip() if os.path.exists(
    os.path.join(res, "run.txt")) else ""
print(meta)
print("%-10s %5s %5s %5s %8s %5s %8s" % ("dir", "run", "pass", "fail",
                                         "timeout", "skip", "wall(s)"))
tot = [0, 0, 0, 0, 0]
for d in dirs:
    c = [0, 0, 0, 0, 0]
    for r in rows:
        if r[0] != d:
            continue
        i = {"pass": 1, "fail": 2, "timeout": 3, "skip": 4}[r[1]]
        c[i] += 1
        if r[1] != "skip":
            c[0] += 1
    tot = [a + b for a, b in zip(tot, c)]
    print("%-10s %5d %5d %5d %8d %5d %8s" % (d, c[0], c[1], c[2], c[3], c[4],
                                             wall.get(d, "?")))
ws = sum(int(w) for w in wall.values() if w.isdigit())
print("%-10s %5d %5d %5d %8d %5d %8d" % ("total", *tot, ws))
bad = [r for r in rows if r[1] in ("fail", "timeout")]
if bad:
    print("failing tests (first output lines in %s/failures.txt):" % res)
    for r in bad:
        first = next((l for l in r[4] if l.strip()), "")
        print("  %-7s %s  | %s" % (r[1], r[3], first[:110]))
PY
}

compare() {
	/usr/bin/python3 - "$1" "$2" <<'PY'
import sys, os
def load(d):
    r = {}
    for l in open(os.path.join(d, "results.tsv")):
        st, t, tid = l.rstrip("\n").split("\t")
        k, n = tid, 2
        while k in r:          # same test listed twice: keep both
            k = "%s #%d" % (tid, n); n += 1
        r[k] = st
    return r
a, b = load(sys.argv[1]), load(sys.argv[2])
na, nb = os.path.basename(sys.argv[1].rstrip("/")), os.path.basename(sys.argv[2].rstrip("/"))
print("A = %s\nB = %s" % (sys.argv[1], sys.argv[2]))
keys = [k for k in a if k in b]
only = [k for k in a if k not in b], [k for k in b if k not in a]
print("%d tests in both, %d only in A, %d only in B (not compared)"
      % (len(keys), len(only[0]), len(only[1])))
for st in ("pass", "fail", "timeout", "skip"):
    print("  %-8s A %4d   B %4d" % (st, sum(a[k] == st for k in keys),
                                   sum(b[k] == st for k in keys)))
diff = [k for k in keys if a[k] != b[k]]
print("%-8s %-8s test (the %d that differ)" % ("A", "B", len(diff)))
for k in diff:
    print("%-8s %-8s %s" % (a[k], b[k], k))
worse = [k for k in keys if a.get(k) in ("fail", "timeout") and b.get(k) == "pass"]
print("fail/timeout in A, pass in B: %d" % len(worse))
for k in worse:
    print("  " + k)
PY
}

if [ "${1:-}" = compare ]; then
	[ $# -eq 3 ] || EXIT=2 die "usage: $0 compare RESULTS_A RESULTS_B"
	for d in "$2" "$3"; do
		[ -f "$d/results.tsv" ] || EXIT=2 die "$d/results.tsv missing"
	done
	compare "$2" "$3"
	exit 0
fi

# ---------------------------------------------------------------- options
FLAVOR=${FLAVOR:-mpich} TRANSPORT=${TRANSPORT:-cxl} MODE=${MODE:-coherent}
RANKS=${RANKS:-4} EXPECTED=${EXPECTED:-} TESTLISTS=${TESTLISTS:-testlist}
MPITEST_TIMEOUT=${MPITEST_TIMEOUT:-60} OUT=
while getopts "f:t:m:n:p:T:x:l:o:h" o; do
	case $o in
	f) FLAVOR=$OPTARG ;;
	t) TRANSPORT=$OPTARG ;;
	m) MODE=$OPTARG ;;
	n) RANKS=$OPTARG ;;
	p) POOLS=$OPTARG ;;
	T) MPITEST_TIMEOUT=$OPTARG ;;
	x) EXPECTED=$OPTARG ;;
	l) TESTLISTS=$OPTARG ;;
	o) OUT=$OPTARG ;;
	*)
		sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'
		exit 2
		;;
	esac
done
shift $((OPTIND - 1))
if [ $# -gt 0 ]; then DIRS="$*"; else DIRS=${DIRS:-$ALL_DIRS}; fi
HOSTS=${HOSTS:-$RANKS}
EXIT=2
case $FLAVOR in mpich) VENV=$REPO/.venv ;; ompi) VENV=$REPO/.venv-ompi ;;
*) die "flavor must be mpich or ompi, not '$FLAVOR'" ;; esac
case $TRANSPORT in cxl | tcp) ;; *) die "transport must be cxl or tcp" ;; esac
case $MODE in coherent | flush | emulated) ;; *) die "bad mode '$MODE'" ;; esac
case $RANKS in [1-9]) ;; *) die "ranks must be 1..9 (2 or 4)" ;; esac
case $MPITEST_TIMEOUT in *[!0-9]* | '') die "bad timeout" ;; esac
case ${POOLS:-} in
'') ;;
*[!0-9,-]* | ,* | *, | *,,*) die "bad pool layout '$POOLS' (e.g. 0,1 or 0,1,0,-)" ;;
*) [ "$TRANSPORT" = cxl ] || die "a pool layout (-p) needs the cxl transport" ;;
esac
[ -z "$EXPECTED" ] || [ -f "$EXPECTED" ] || die "no expected-pass list $EXPECTED"
EXIT=3
MPICC=$VENV/bin/mpicc
MPIEXEC=$VENV/bin/mpiexec
[ "$FLAVOR" = ompi ] && MPIEXEC=$VENV/bin/mpirun
[ -x "$MPICC" ] && [ -x "$MPIEXEC" ] ||
	die "$MPICC or $MPIEXEC missing: run scripts/setup.sh"
PROVDIR=${CXL_FI_DIR:-$REPO/build/src/fabric}
if [ "$TRANSPORT" = cxl ] && [ ! -f "$PROVDIR/libcxl-fi.so" ]; then
	die "$PROVDIR/libcxl-fi.so missing: build the project first"
fi
command -v perl >/dev/null || die "perl is needed (runtests)"

name=$FLAVOR-$TRANSPORT
[ "$TRANSPORT" = cxl ] && name=$name-$MODE
[ -n "${POOLS:-}" ] && name=$name-pools$(echo "$POOLS" | tr ',-' '_x')
name=$name-np$RANKS
if [ -z "$OUT" ]; then
	OUT=$ROOT/results/$name-$(date +%Y%m%d-%H%M%S)
	mkdir -p "$OUT" || die "cannot create $OUT"
	ln -sfn "$(basename "$OUT")" "$ROOT/results/latest-$name"
fi
mkdir -p "$OUT" || die "cannot create $OUT"
OUT=$(cd "$OUT" && pwd)
t_start=$(date +%s)

# ---------------------------------------------------------------- 1. source
DL=$ROOT/dl
orig=$DL/mpich_$MPICH_UPSTREAM.orig.tar.xz
as_root() {
	if [ "$(id -u)" -eq 0 ]; then "$@"; else
		command -v sudo >/dev/null || die "need root (or sudo) for: $*"
		sudo "$@"
	fi
}
# Add deb-src twins of the bookworm (not -security) entries of APT's deb
# sources, for the same mirror.
add_deb_src() {
	local f=/etc/apt/sources.list.d/cxlmpi-deb-src.sources tmp
	tmp=$(mktemp)
	# deb822 files: copy stanzas with "Types: deb" and a bookworm suite
	for s in /etc/apt/sources.list.d/*.sources; do
		[ -f "$s" ] && [ "$s" != "$f" ] || continue
		awk 'BEGIN{RS=""; ORS="\n\n"}
		     /(^|\n)Types:[^\n]*deb/ && /(^|\n)Suites:[^\n]*bookworm/ &&
		     /(^|\n)URIs:[^\n]*\/debian\/?(\n|$)/ {
		         gsub(/(^|\n)#[^\n]*/, "")
		         sub(/Types:[^\n]*/, "Types: deb-src"); print }' "$s" >>"$tmp"
	done
	# one-line format
	if [ ! -s "$tmp" ]; then
		cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
			awk '$1=="deb" && / bookworm/ && $0 !~ /security/ {
			     $1="deb-src"; print}' >"$tmp"
		f=/etc/apt/sources.list.d/cxlmpi-deb-src.list
	fi
	[ -s "$tmp" ] || { rm -f "$tmp"; die "no Debian bookworm entry in /etc/apt/sources.list{,.d}"; }
	echo "mpich_testsuite: adding $f:"
	sed 's/^/    /' "$tmp"
	as_root install -m 644 "$tmp" "$f"
	rm -f "$tmp"
	as_root apt-get update -qq || die "apt-get update failed"
}
if [ ! -s "$orig" ]; then
	mkdir -p "$DL"
	srcver() { apt-cache showsrc mpich 2>/dev/null | awk -v w="$MPICH_UPSTREAM-" \
		'$1=="Version:" && index($2, w)==1 {print $2; exit}'; }
	ver=$(srcver)
	if [ -z "$ver" ]; then
		add_deb_src
		ver=$(srcver)
	fi
	[ -n "$ver" ] || die "Debian offers no source of mpich $MPICH_UPSTREAM (is this bookworm?)"
	(cd "$DL" && apt-get source --download-only -qq "mpich=$ver") ||
		die "apt-get source --download-only mpich=$ver failed"
	[ -s "$orig" ] || die "$orig missing after apt-get source"
fi
TREE=$ROOT/$FLAVOR/mpich-$MPICH_UPSTREAM/test/mpi
if [ ! -f "$TREE/configure" ]; then
	mkdir -p "$ROOT/$FLAVOR"
	tar -xJf "$orig" -C "$ROOT/$FLAVOR" "mpich-$MPICH_UPSTREAM/test/mpi" ||
		die "cannot extract test/mpi from $orig"
fi

# ---------------------------------------------------------------- 2. build
cfg=(CC="$MPICC" MPIEXEC="$MPIEXEC" --disable-fortran --disable-cxx
	--disable-spawn --disable-ft-tests --disable-romio --disable-perftest)
if [ "$(cat "$TREE/.conformance-configured" 2>/dev/null)" != "${cfg[*]}" ]; then
	echo "mpich_testsuite: configuring $TREE (log $OUT/configure.log)"
	rm -f "$TREE/.conformance-configured"
	(cd "$TREE" && flock "$HEAVY_LOCK" ./configure "${cfg[@]}") \
		>"$OUT/configure.log" 2>&1 ||
		die "configure failed: tail $OUT/configure.log"
	echo "${cfg[*]}" >"$TREE/.conformance-configured"
fi
echo "mpich_testsuite: building util dtpools $DIRS (log $OUT/build.log)"
: >"$OUT/build.log"
for d in util dtpools $DIRS; do
	[ -d "$TREE/$d" ] || die "no directory $d in test/mpi"
	keep=
	case $d in util | dtpools) ;; *) keep=-k ;; esac
	if ! flock "$HEAVY_LOCK" make -j2 $keep -C "$TREE/$d" >>"$OUT/build.log" 2>&1; then
		[ -z "$keep" ] && die "make in $d failed: tail $OUT/build.log"
		echo "mpich_testsuite: make in $d had errors (programs that did not build fail)"
	fi
done
hello=$TREE/conformance_hello
if [ ! -x "$hello" ] || [ "$(cat "$hello.cc" 2>/dev/null)" != "$MPICC" ]; then
	printf '%s\n' '#include <mpi.h>' '#include <stdio.h>' \
		'int main(int c, char **v) { int r; MPI_Init(&c, &v);' \
		'MPI_Comm_rank(MPI_COMM_WORLD, &r); MPI_Barrier(MPI_COMM_WORLD);' \
		'if (!r) printf(" No Errors\n"); MPI_Finalize(); return 0; }' \
		>"$hello.c"
	"$MPICC" -o "$hello" "$hello.c" >>"$OUT/build.log" 2>&1 ||
		die "cannot compile $hello.c"
	echo "$MPICC" >"$hello.cc"
fi

# ---------------------------------------------------------------- 3. check
export CONF_FLAVOR=$FLAVOR CONF_TRANSPORT=$TRANSPORT CONF_MODE=$MODE \
	CONF_MPIEXEC=$MPIEXEC CONF_PROVDIR=$PROVDIR CONF_HOSTS=$HOSTS \
	CONF_POOLS=${POOLS:-}
export MPITEST_TIMEOUT MPITEST_CLEANUP=0
if [ "$TRANSPORT" = cxl ]; then
	export MPITEST_PROGRAM_WRAPPER=$REPO/tests/mpi/hostwrap.sh
else
	unset MPITEST_PROGRAM_WRAPPER
fi
unset MPIR_CVAR_DEBUG_SUMMARY
chk=$OUT/transport-check.log
MPIEXEC_TIMEOUT=60 MPIR_CVAR_DEBUG_SUMMARY=1 \
	"$HERE/mpiexec_wrap.sh" -n 2 ${MPITEST_PROGRAM_WRAPPER:-} "$hello" >"$chk" 2>&1
rc=$?
if [ $rc -ne 0 ] || ! grep -q "No Errors" "$chk" ||
	{ [ "$FLAVOR" = mpich ] && ! grep -q "libfabric provider: $TRANSPORT" "$chk"; }; then
	tail -20 "$chk" >&2
	die "transport check failed (rc $rc): $FLAVOR did not run over $TRANSPORT ($chk)"
fi

# ---------------------------------------------------------------- 4. run
{
	echo "run: flavor=$FLAVOR transport=$TRANSPORT$([ "$TRANSPORT" = cxl ] && echo " mode=$MODE hosts=$HOSTS")" \
		"maxnp=$RANKS timeout=${MPITEST_TIMEOUT}s lists=$TESTLISTS"
	echo "results: $OUT"
} >"$OUT/run.txt"
cat "$OUT/run.txt"
: >"$OUT/walltime.tsv"
for d in $DIRS; do
	t0=$(date +%s)
	printf 'mpich_testsuite: %-9s ' "$d"
	(cd "$TREE" && ./runtests -srcdir=. -tests="$TESTLISTS" -testdirs="$d" \
		-maxnp="$RANKS" -mpiexec="$HERE/mpiexec_wrap.sh" \
		-tapfile="$OUT/$d.tap" -junitfile="$OUT/$d.junit.xml") \
		>"$OUT/$d.log" 2>&1
	t1=$(date +%s)
	printf '%s\t%s\n' "$d" $((t1 - t0)) >>"$OUT/walltime.tsv"
	tail -n 4 "$OUT/$d.log" | grep -E 'tests (passed|failed)' | tr -d '\n'
	echo "  ($((t1 - t0)) s)"
done
summarize "$OUT" | tee "$OUT/summary.txt"
echo "total wall time: $(($(date +%s) - t_start)) s (build included)" |
	tee -a "$OUT/summary.txt"

# ---------------------------------------------------------------- 5. CI list
status=0
if [ -n "$EXPECTED" ]; then
	/usr/bin/python3 - "$EXPECTED" "$OUT/results.tsv" "$DIRS" <<'PY' || status=1
import sys
# entries of the directories that were run (one list serves any subset)
dirs = set(sys.argv[3].split())
want = []
for l in open(sys.argv[1]):
    l = " ".join(l.split("#", 1)[0].split())
    if l and l.split("/", 1)[0] in dirs:
        want.append(l)
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[2]) if l.strip()]
bad = 0
for w in want:
    # exact id; else every instance with more arguments ("dir/prog")
    hit = [r for r in rows if r[2] == w] or \
        [r for r in rows if r[2].startswith(w + " ")]
    if not hit:
        print("expected-pass: %s did not run" % w); bad += 1
    for r in hit:
        if r[0] != "pass":
            print("expected-pass: %s: %s" % (r[2], r[0])); bad += 1
print("expected-pass list %s: %d entries, %d problems" % (sys.argv[1], len(want), bad))
sys.exit(1 if bad else 0)
PY
fi
exit $status
