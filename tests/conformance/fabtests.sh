#!/usr/bin/env bash
# Run libfabric's conformance suite (fabtests 1.17) against a provider.
#
# Usage:
#   tests/conformance/fabtests.sh [options] PROVIDER [-- RUNFABTESTS_ARGS...]
#
#   PROVIDER      cxl (this repo's provider, build/src/fabric/libcxl-fi.so)
#                 or any libfabric provider, e.g. shm
#   -t SET        runfabtests test set: quick (default), unit, functional,
#                 short, standard, regression, complex, ... (comma list ok)
#   -c MODE       CXL_COHERENCE for cxl: coherent (default), flush, emulated
#   -T SECONDS    timeout of each test process (runfabtests -T; default 60)
#   -x FILE       expected-pass list: one test name per line, as printed in
#                 the summary (e.g. "fi_rdm_pingpong -I 5 -U"); '#' comments
#                 and blank lines are ignored
#   -l LOG        full log (default /tmp/fabtests-PROVIDER[-MODE]-SET.log)
#   -P LAYOUT     cxl only: where server and client are (docs/multipool.md)
#                   one   both on one pool (default)
#                   two   server on one pool, client on another: every
#                         message goes over the provider's network link
#                   none  client on no pool (the provider's network-only
#                         mode)
#                 two and none set FI_CXL_NET=tcp;ofi_rxm on lo, run the
#                 tests with libfabric >= 2.3 (the link's peer API; from
#                 FABTESTS_LIBFABRIC_DIR) and exchange addresses out of
#                 band (runfabtests -b): a service name is looked up in
#                 one pool only. fi_poll cannot run out of band (for any
#                 provider) and is dropped from the expected-pass list.
#   -- ARGS       passed on to runfabtests.sh (e.g. -e REGEX to exclude)
#
# Environment:
#   FABTESTS_PREFIX   install dir of the built fabtests (default
#                     $REPO/build-conformance/fabtests); built on first use
#                     from FABTESTS_TARBALL and reused while the tarball's
#                     sha256 is the same
#   FABTESTS_TARBALL  fabtests source (default
#                     ../shared/conformance/fabtests-1.17.0.tar.gz beside
#                     the repository if it is there, else the upstream
#                     release fabtests-1.17.0.tar.bz2, downloaded once into
#                     $REPO/build-conformance/ and checked against its
#                     pinned sha256)
#   CXL_FI_DIR        directory of libcxl-fi.so (default $REPO/build/src/fabric)
#   FABTESTS_LIBFABRIC_DIR  directory of the libfabric.so.1 (>= 2.3) that -P
#                     two/none run the tests with (default
#                     $REPO/.venv/lib/mpich, the MPICH wheel's 2.5.1)
#
# The build needs autoconf, automake and libtool (scripts/setup.sh). Every
# heavy step (autogen, configure, make) runs under
# `flock /tmp/cxl-heavy-build.lock`.
#
# Server and client both run on this machine (runfabtests.sh with only a
# provider name; with -P two/none, with the server and client host names
# 127.0.0.1 and localhost, and an "ssh" first in PATH that runs the command
# here with that side's CXL_POOL). For cxl, each run gets a fresh pool in a
# mktemp -d under /dev/shm (removed at exit) and its own CXL_JOB.
#
# runfabtests.sh is run from a patched copy: its cleanup kills every process
# whose name starts with "fi_" on the machine; the copy kills only fi_*
# processes of its own session (it runs under setsid).
#
# Output: the full runfabtests log (-vvv: output of every test), then a
# summary: counts of pass / fail / notrun (Excluded counts as notrun) and
# every test with its status. No auto-exclusion is applied (runfabtests'
# test_configs/*/*.exclude are not looked up), as in the reference run of
# ../shared/conformance/README.md.
#
# Exit status: 0 when every test of the expected-pass list passed (with -x),
# or when no test failed (without -x); 1 otherwise; 2 on a harness error
# (build failed, provider not offered, runfabtests did not finish).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PREFIX=${FABTESTS_PREFIX:-$REPO/build-conformance/fabtests}
# the release that matches Debian bookworm's libfabric-dev (1.17), and the
# sha256 of its upstream tarball
FABTESTS_VERSION=1.17.0
UPSTREAM_URL=https://github.com/ofiwg/libfabric/releases/download/v$FABTESTS_VERSION/fabtests-$FABTESTS_VERSION.tar.bz2
UPSTREAM_SHA256=5d3cf28de32549822cbb155329fe7ce0f88423157e1210a76b23c498c848ce2a
TARBALL=${FABTESTS_TARBALL:-}
if [ -z "$TARBALL" ]; then
	TARBALL=$REPO/../shared/conformance/fabtests-$FABTESTS_VERSION.tar.gz
	[ -r "$TARBALL" ] ||
		TARBALL=$REPO/build-conformance/fabtests-$FABTESTS_VERSION.tar.bz2
fi
CXL_FI_DIR=${CXL_FI_DIR:-$REPO/build/src/fabric}
HEAVY_LOCK=/tmp/cxl-heavy-build.lock

usage() {
	sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
	exit 2
}
die() {
	echo "fabtests.sh: $*" >&2
	exit 2
}

SET=quick
MODE=coherent
TIMEOUT=60
EXPECTED=""
LOG=""
LAYOUT=one
while getopts ":t:c:T:x:l:P:h" opt; do
	case $opt in
	t) SET=$OPTARG ;;
	c) MODE=$OPTARG ;;
	T) TIMEOUT=$OPTARG ;;
	x) EXPECTED=$OPTARG ;;
	l) LOG=$OPTARG ;;
	P) LAYOUT=$OPTARG ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || usage
PROV=$1
shift
if [ $# -ge 1 ]; then
	[ "$1" = "--" ] || usage
	shift
fi
EXTRA_ARGS=("$@")

case $MODE in coherent | flush | uncached | emulated) ;; *) die "bad coherence mode: $MODE" ;; esac
[[ $TIMEOUT =~ ^[1-9][0-9]*$ ]] || die "bad timeout: $TIMEOUT"
[ -z "$EXPECTED" ] || [ -r "$EXPECTED" ] || die "cannot read expected-pass list $EXPECTED"
case $LAYOUT in one | two | none) ;; *) die "bad layout: $LAYOUT (one, two or none)" ;; esac
[ "$LAYOUT" = one ] || [ "$PROV" = cxl ] || die "-P $LAYOUT needs the cxl provider"
if [ -z "$LOG" ]; then
	tag=$PROV
	[ "$PROV" != cxl ] || tag=$PROV-$MODE
	[ "$LAYOUT" = one ] || tag=$tag-pools-$LAYOUT
	LOG=/tmp/fabtests-$tag-${SET//,/+}.log
fi

# --- build (once) -----------------------------------------------------------

# The upstream release into TARBALL, once, verified before it is used.
download_fabtests() {
	local part=$TARBALL.part sum
	command -v curl >/dev/null ||
		die "no $TARBALL and no curl to download $UPSTREAM_URL; install curl, or set FABTESTS_TARBALL to a fabtests $FABTESTS_VERSION tarball"
	mkdir -p "$(dirname "$TARBALL")"
	echo "fabtests.sh: downloading $UPSTREAM_URL"
	curl -fsSL --retry 3 -o "$part" "$UPSTREAM_URL" || {
		rm -f "$part"
		die "cannot download $UPSTREAM_URL; set FABTESTS_TARBALL to a fabtests $FABTESTS_VERSION tarball (e.g. ../shared/conformance/fabtests-$FABTESTS_VERSION.tar.gz)"
	}
	sum=$(sha256sum "$part" | cut -d' ' -f1)
	if [ "$sum" != "$UPSTREAM_SHA256" ]; then
		rm -f "$part"
		die "$UPSTREAM_URL has sha256 $sum, not the pinned $UPSTREAM_SHA256; the download is corrupt or was replaced: set FABTESTS_TARBALL to a tarball you trust"
	fi
	mv "$part" "$TARBALL"
}

build_fabtests() {
	if [ ! -r "$TARBALL" ]; then
		[ -z "${FABTESTS_TARBALL:-}" ] || die "no tarball $TARBALL (FABTESTS_TARBALL); point it at a fabtests $FABTESTS_VERSION tarball or unset it"
		download_fabtests
	fi
	local sum stamp=$PREFIX/.fabtests-installed
	sum=$(sha256sum "$TARBALL" | cut -d' ' -f1)
	if [ -x "$PREFIX/bin/runfabtests.sh" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$sum" ]; then
		return
	fi
	for tool in autoreconf automake libtoolize; do
		command -v $tool >/dev/null ||
			die "$tool missing: install autoconf automake libtool (scripts/setup.sh)"
	done
	local src=$PREFIX.src
	echo "fabtests.sh: building fabtests into $PREFIX (log $src/build.log)"
	rm -rf "$src" "$PREFIX"
	mkdir -p "$src"
	tar -xf "$TARBALL" -C "$src" --strip-components=1
	(
		cd "$src"
		# a release tarball has configure; a source snapshot needs autogen
		[ -x configure ] || flock "$HEAVY_LOCK" ./autogen.sh
		flock "$HEAVY_LOCK" ./configure --prefix="$PREFIX"
		flock "$HEAVY_LOCK" make -j2
		flock "$HEAVY_LOCK" make install
	) >"$src/build.log" 2>&1 || {
		tail -n 30 "$src/build.log" >&2
		die "fabtests build failed, see $src/build.log"
	}
	[ -x "$PREFIX/bin/runfabtests.sh" ] || die "no runfabtests.sh after make install"
	echo "$sum" >"$stamp"
}

mkdir -p "$(dirname "$PREFIX")"
# One builder at a time per prefix; others wait and then reuse the result.
exec 9>"$PREFIX.lock"
flock 9
build_fabtests
flock -u 9
BINDIR=$PREFIX/bin

# --- run --------------------------------------------------------------------

WORK=$(mktemp -d /dev/shm/fabtests-"$PROV".XXXXXX)
RF_PID=""
kill_session() {
	# Everything in runfabtests' own session (it is the session leader).
	[ -n "$RF_PID" ] || return 0
	local pids
	pids=$(ps -eo pid=,sid= | awk -v s="$RF_PID" '$2 == s {print $1}')
	[ -z "$pids" ] || kill -KILL $pids 2>/dev/null || true
}
cleanup() {
	kill_session
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'echo "fabtests.sh: interrupted" >&2; exit 130' INT TERM

# Patched copy of runfabtests.sh: scope its kill of fi_* processes to its
# own session instead of the whole machine.
RF=$WORK/runfabtests.sh
awk '
/ps -eo comm,pid \| grep .\^fi_./ {
	if (!done) print "\tps -eo sid=,comm=,pid= | awk -v s=\"$(ps -o sid= -p $$)\" '\''$1 == s+0 && $2 ~ /^fi_/ {print $3}'\'' | xargs -r kill -9 >& /dev/null"
	done = 1; n++; next
}
{ print }
END { if (n != 2) exit 1 }' "$BINDIR/runfabtests.sh" >"$RF" ||
	die "cannot patch runfabtests.sh cleanup (not fabtests 1.17?)"
chmod +x "$RF"

unset FI_PROVIDER
: >"$LOG"
if [ "$PROV" = cxl ]; then
	[ -r "$CXL_FI_DIR/libcxl-fi.so" ] || die "no $CXL_FI_DIR/libcxl-fi.so (build the repo first)"
	# Snapshot the provider and its libcxlshm, so that a rebuild during the
	# run does not mix two builds. LD_LIBRARY_PATH comes before RUNPATH.
	mkdir "$WORK/prov" "$WORK/lib"
	cp "$CXL_FI_DIR/libcxl-fi.so" "$WORK/prov/"
	shm=$(ldd "$WORK/prov/libcxl-fi.so" | awk '$1 == "libcxlshm.so.0" {print $3}')
	[ -n "$shm" ] && [ -r "$shm" ] || die "libcxl-fi.so: libcxlshm.so.0 not found"
	cp "$shm" "$WORK/lib/libcxlshm.so.0"
	export LD_LIBRARY_PATH=$WORK/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	export CXL_POOL=$WORK/pool CXL_RUNDIR=$WORK CXL_POOL_SIZE=256M
	export CXL_ARENA_CAPACITY=8192 CXL_JOB=ft-$$ CXL_COHERENCE=$MODE
	export FI_PROVIDER_PATH=$WORK/prov
	if [ "$LAYOUT" != one ]; then
		lf=${FABTESTS_LIBFABRIC_DIR:-$REPO/.venv/lib/mpich}
		[ -r "$lf/libfabric.so.1" ] ||
			die "-P $LAYOUT: no $lf/libfabric.so.1 (>= 2.3); run scripts/setup.sh or set FABTESTS_LIBFABRIC_DIR"
		export LD_LIBRARY_PATH=$WORK/lib:$lf
		export FI_CXL_NET='tcp;ofi_rxm' FI_TCP_IFACE=lo
		# "ssh HOST CMD" from runfabtests: CMD here, on HOST's pool
		mkdir "$WORK/bin"
		cat >"$WORK/bin/ssh" <<-EOS
			#!/bin/sh
			while [ \$# -gt 0 ]; do
				case \$1 in -o) shift 2 ;; -*) shift ;; *) break ;; esac
			done
			host=\$1
			shift
			case \$host in
			127.0.0.1) export CXL_POOL=$WORK/pool.server CXL_HOST_KEY=server ;;
			localhost) export CXL_HOST_KEY=client CXL_POOL=$WORK/pool.client
				[ $LAYOUT = none ] && unset CXL_POOL CXL_RUNDIR ;;
			*) echo "fabtests.sh ssh: unknown host \$host" >&2; exit 255 ;;
			esac
			# runfabtests stops a server with kill -9 on the timeout(1)
			# that started us: the program dies with it (a server left
			# behind would take the next test's out-of-band connection)
			exec setpriv --pdeathsig KILL sh -c "exec \$*"
		EOS
		chmod +x "$WORK/bin/ssh"
		export PATH=$WORK/bin:$PATH
		EXTRA_ARGS=(-b "${EXTRA_ARGS[@]}")
	fi
	{
		echo "# provider: $CXL_FI_DIR/libcxl-fi.so sha256 $(sha256sum <"$WORK/prov/libcxl-fi.so" | cut -c1-16)" \
			"mtime $(date -u -r "$CXL_FI_DIR/libcxl-fi.so" +%FT%TZ)"
		echo "# provider: $shm sha256 $(sha256sum <"$WORK/lib/libcxlshm.so.0" | cut -c1-16)"
		echo "# repo: $(git -C "$REPO" describe --always --dirty 2>/dev/null || echo '?')"
	} >>"$LOG"
fi

{
	echo "# fabtests.sh: provider=$PROV set=$SET timeout=${TIMEOUT}s $(date -u +%FT%TZ)"
	echo "# fabtests: $PREFIX ($(basename "$TARBALL"))"
	echo "# libfabric: $(fi_info --version 2>/dev/null | tr '\n' ' ' || true)"
	env | grep -E '^(CXL_|FI_|LD_LIBRARY_PATH=)' | sort | sed 's/^/# env: /' || true
} >>"$LOG"

# Preflight: is the provider offered at all? Otherwise every test would be
# "Notrun" (-FI_ENODATA) and look harmless.
if command -v fi_info >/dev/null; then
	if ! fi_info -p "$PROV" >"$WORK/fi_info.out" 2>&1; then
		cat "$WORK/fi_info.out" >>"$LOG"
		die "fi_info -p $PROV: provider not offered (see $LOG; FI_LOG_LEVEL=info tells why)"
	fi
	grep -E '^\s*(provider|fabric|domain|type|protocol):' "$WORK/fi_info.out" | sed 's/^/# fi_info: /' >>"$LOG" || true
fi

HOSTS=()
[ "$LAYOUT" = one ] || HOSTS=(127.0.0.1 localhost)
echo "fabtests.sh: running runfabtests.sh -t $SET $PROV ${HOSTS[*]} (log $LOG)"
set +e
(cd "$WORK" && exec setsid -w "$RF" -vvv -T "$TIMEOUT" -t "$SET" -p "$BINDIR" \
	"${EXTRA_ARGS[@]}" "$PROV" "${HOSTS[@]}") >>"$LOG" 2>&1 &
RF_PID=$!
wait $RF_PID
rf_rc=$?
set -e
kill_session
RF_PID=""
grep -q 'Total Pass' "$LOG" || die "runfabtests.sh did not finish (rc $rf_rc), see $LOG"

# --- summary ----------------------------------------------------------------

# -vvv output: "- name:   fi_rdm -p "cxl"" followed by "  result: Pass"
# and "  time:   N". Test names drop the ' -p "PROV"' that runfabtests adds.
RESULTS=$WORK/results.tsv
awk -v p=" -p \"$PROV\"" -v tmo="$TIMEOUT" '
function flush() {
	if (name == "") return
	st = res; sub(/ .*/, "", st)            # "Pass [3/3]" -> Pass
	if (st == "Excluded") st = "Notrun"
	note = ""
	if (st == "Fail" && t + 0 >= tmo) note = "timeout?"
	if (res ~ /\[/) note = res
	# no error line: show the last line, where a hung test stopped
	if (sLine == "") sLine = "(no output)"
	else if (!sErr) sLine = "(no error line) last: " sLast
	if (cLine != "" && !cErr) cLine = "(no error line) last: " cLast
	printf "%s\t%s\t%s\t%s\t%s\t%s\n", st, name, t, note, sLine, (cLine == sLine ? "" : cLine)
	name = ""; sLine = cLine = sLast = cLast = ""; sErr = cErr = 0; sect = ""
}
/^- name: / { flush(); sect = ""; name = substr($0, index($0, ":") + 1); sub(/^ +/, "", name)
	i = index(name, p); if (i) name = substr(name, 1, i - 1) substr(name, i + length(p))
	sub(/ +$/, "", name); res = ""; t = "" }
/^  result: / && name != "" { res = substr($0, 11); sub(/^ +/, "", res) }
/^  time: / && name != "" { t = $2 }
/^  server_stdout:/ { sect = "s"; next }
/^  client_stdout:/ { sect = "c"; next }
/^  [a-z_]+:/ { sect = ""; next }
/^    / && sect != "" && name != "" {
	line = substr($0, 5)
	# first line that reports an error, else the first line at all
	isErr = (line ~ /ret=-|[Ee]rror|ERROR|FAIL|[Aa]ssert|[Aa]bort|[Ss]egmentation|[Tt]imeout|[Tt]imed out/)
	if (sect == "s") { sLast = line; if (!sErr && (isErr || sLine == "")) { sLine = line; sErr = isErr } }
	else { cLast = line; if (!cErr && (isErr || cLine == "")) { cLine = line; cErr = isErr } }
}
END { flush() }' "$LOG" >"$RESULTS"

npass=$(awk -F'\t' '$1 == "Pass"' "$RESULTS" | wc -l)
nfail=$(awk -F'\t' '$1 == "Fail"' "$RESULTS" | wc -l)
nnot=$(awk -F'\t' '$1 == "Notrun"' "$RESULTS" | wc -l)
{
	echo
	echo "== fabtests summary: provider=$PROV$([ "$PROV" != cxl ] || echo " coherence=$MODE") set=$SET =="
	printf '%-8s %-60s %6s  %s\n' STATUS TEST TIME NOTE
	awk -F'\t' '{printf "%-8s %-60s %5ss  %s\n", $1, $2, $3, $4}' "$RESULTS"
	echo "pass $npass  fail $nfail  notrun $nnot  total $((npass + nfail + nnot))"
	if [ "$nfail" -gt 0 ]; then
		echo "failing tests:"
		awk -F'\t' '$1 == "Fail" {print "  " $2}' "$RESULTS"
	fi
	if [ $((nfail + nnot)) -gt 0 ]; then
		echo "first error line of each failing / notrun test (S: server, C: client):"
		awk -F'\t' '$1 != "Pass" {printf "  %-7s %s\n    S: %s\n", $1, $2, $5; if ($6 != "") printf "    C: %s\n", $6}' "$RESULTS"
	fi
} | tee -a "$LOG"

# Cross-check with runfabtests' own totals.
rf_pass=$(awk '/# Total Pass/ {print $NF}' "$LOG" | tail -n1)
rf_fail=$(awk '/# Total Fail/ {print $NF}' "$LOG" | tail -n1)
if [ "$rf_pass" != "$npass" ] || [ "$rf_fail" != "$nfail" ]; then
	die "parsed counts ($npass pass, $nfail fail) differ from runfabtests' ($rf_pass, $rf_fail)"
fi

status=0
if [ -n "$EXPECTED" ]; then
	bad=0
	while IFS= read -r want || [ -n "$want" ]; do
		want=${want%%#*}
		want=$(echo "$want" | sed -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//')
		[ -n "$want" ] || continue
		# fi_poll opens its fabric without fabtests' out-of-band
		# setup (its own init_fabric), so with -b it fails for every
		# provider, tcp;ofi_rxm alone included: not expected there
		if [ "$LAYOUT" != one ] && [[ $want == "fi_poll "* ]]; then
			echo "expected pass: $want: not run out of band (fabtests cannot)" | tee -a "$LOG"
			continue
		fi
		got=$(awk -F'\t' -v n="$want" '$2 == n {print $1; exit}' "$RESULTS")
		if [ "$got" != Pass ]; then
			echo "expected pass: $want: ${got:-not in this run}" | tee -a "$LOG"
			bad=1
		fi
	done <"$EXPECTED"
	[ $bad -eq 0 ] || status=1
	echo "expected-pass list $EXPECTED: $([ $bad -eq 0 ] && echo ok || echo FAILED)" | tee -a "$LOG"
elif [ "$nfail" -gt 0 ]; then
	status=1
fi
exit $status
