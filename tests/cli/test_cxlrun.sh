#!/usr/bin/env bash
# cxlrun end to end: a real MPICH job on 2 emulated hosts once per
# transport, then cleanup after an interrupted and after a killed run.
#
#   test_cxlrun.sh CXLRUN PINGPONG PROVIDER_DIR [OMPI_PINGPONG]
#
# PINGPONG is MPICH's build of tests/mpi/mpi_pingpong.c (it prints "rank R
# of N on HOST" and verifies every message), OMPI_PINGPONG Open MPI's; the
# transports run under both (shm under MPICH), and once more without
# namespaces (the fallback without root). As root, the hosts are network
# and UTS namespaces, and the test checks:
#   - the ranks' host names differ (cxl, tcp);
#   - with tcp, the payload crossed the hosts' veth links;
#   - with cxl, it did not (only launcher traffic), and the pool's counters
#     (FI_CXL_STATS) show the messages and bytes, and two host ids, which
#     the emulated hosts got from the pool (no CXL_HOST_ID is set);
#   - Ctrl-C midway, and SIGKILL of cxlrun followed by `cxlrun --cleanup`
#     (also with its state file lost and cxlrun not yet reaped),
#     leave no namespace, link, pool file, run directory or process.
# Without root it checks the fallback (one namespace) instead.
# Throughout, CXLRUN_DIR also holds things cxlrun did not create: a
# directory, a directory named like a run, a forged run of another user,
# and a bystander process whose command line names CXLRUN_DIR; every run,
# --cleanup and --cleanup-all must leave them all in place and alive.
set -uo pipefail
CXLRUN=$1 PINGPONG=$2 PROVDIR=$3 OPINGPONG=${4:-}
export CXLRUN_DIR
CXLRUN_DIR=$(mktemp -d /tmp/cxlrun-test.XXXXXX)
work=$(mktemp -d /tmp/cxlrun-out.XXXXXX)
trap 'rm -rf "$work"; "$CXLRUN" --cleanup-all >/dev/null 2>&1; rm -rf "$CXLRUN_DIR"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() {
	fail=$((fail + 1))
	echo "FAIL: $*" >&2
}
check() { if eval "$1"; then ok; else bad "$2"; fi; }

# ranks of an ASan build need the sanitizer runtimes (CMake passes them)
envs=()
if [ -n "${CXL_MPI_PRELOAD:-}" ]; then
	envs=(--env "LD_PRELOAD=$CXL_MPI_PRELOAD"
		--env "ASAN_OPTIONS=detect_leaks=0:abort_on_error=1")
fi

hosts_of() { grep -oE '^rank [0-9]+ of [0-9]+ on \S+' "$1" | awk '{print $6}' | sort -u | wc -l; }
json_sum() { # total bytes of one direction over all links
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sum(v[sys.argv[2]] for v in d.values()))' "$1" "$2"
}
stat_field() { # sum of field $2 over the cxl-stats lines of file $1
	grep -oE "$2 [0-9]+" "$1" | awk '{s += $2} END {print s + 0}'
}
# distinct CXL host ids that the ranks got from the pool (cxl-stats lines)
host_ids() { grep -oE 'cxl-stats: .* host [0-9]+' "$1" | awk '{print $NF}' | sort -u | wc -l; }

root=0
[ "$(id -u)" = 0 ] && root=1

# bystanders: what cxlrun must never remove or kill
mkdir -p "$CXLRUN_DIR/keep" "$CXLRUN_DIR/abcde"
echo data >"$CXLRUN_DIR/keep/file"
echo data >"$CXLRUN_DIR/abcde/state.json"
mkdir -p "$CXLRUN_DIR/fedcb"
printf '{"magic": "cxlrun-run-1", "id": "fedcb", "token": "%032d"}' 0 \
	>"$CXLRUN_DIR/fedcb/cxlrun.run"
[ $root = 1 ] && chown -R nobody "$CXLRUN_DIR/fedcb"
python3 -c 'import time; time.sleep(3600)' "$CXLRUN_DIR/keep/x" \
	"$CXLRUN_DIR/abcde/" &
bystander=$!
# a run of this user still starting: marker (naming a live owner), no
# state.json yet; runs' stale cleanup and --cleanup must leave it
mkdir -m 700 "$CXLRUN_DIR/start0"
printf '{"magic": "cxlrun-run-1", "id": "start0", "token": "%032d", "owner": %d}' \
	1 "$bystander" >"$CXLRUN_DIR/start0/cxlrun.run"
trap 'kill $bystander 2>/dev/null; rm -rf "$work"; "$CXLRUN" --cleanup-all >/dev/null 2>&1; rm -rf "$CXLRUN_DIR"' EXIT
bystanders_intact() { # $1: when
	check "[ -f '$CXLRUN_DIR/keep/file' ] && [ -f '$CXLRUN_DIR/abcde/state.json' ] && [ -f '$CXLRUN_DIR/fedcb/cxlrun.run' ]" \
		"$1: cxlrun removed files it did not create: $(ls -R "$CXLRUN_DIR")"
	check "kill -0 $bystander 2>/dev/null" "$1: cxlrun killed a bystander process"
}

# one run: $1 mpi, $2 transport, $3 program, then cxlrun options
run_one() {
	local mpi=$1 t=$2 prog=$3 tag=$1-$2
	shift 3
	out=$work/$tag.out
	"$CXLRUN" --mpi "$mpi" -t "$t" -H 2 -n 2 --stats --provider-dir "$PROVDIR" \
		--link-stats "$work/$tag.links" "${envs[@]}" "$@" -- "$prog" \
		>"$out" 2>&1
	rc=$?
	check "[ $rc = 0 ]" "$tag: cxlrun exit status $rc: $(tail -5 "$out")"
	check "grep -q 'pingpong: .* 0 bad' '$out'" "$tag: ping-pong did not verify"
}

runs="mpich:cxl mpich:tcp mpich:shm"
[ -n "$OPINGPONG" ] && runs="$runs ompi:cxl ompi:tcp"
for r in $runs; do
	mpi=${r%%:*} t=${r#*:}
	prog=$PINGPONG
	[ "$mpi" = ompi ] && prog=$OPINGPONG
	run_one "$mpi" "$t" "$prog"
	tag=$mpi-$t
	if [ "$t" = shm ]; then
		check "[ \$(hosts_of '$out') = 1 ]" "$tag: ranks not on one host"
		continue
	fi
	if [ $root = 1 ]; then
		check "[ \$(hosts_of '$out') = 2 ]" "$tag: the two ranks did not report distinct host names"
		tx=$(json_sum "$work/$tag.links" tx)
		# the ping-pong moves over 32 MiB each way (0 B to 16 MiB)
		if [ "$t" = tcp ]; then
			check "[ $tx -gt 33554432 ]" "$tag: only $tx bytes crossed the veth links"
		else
			check "[ $tx -lt 4194304 ]" "$tag: $tx bytes crossed the veth links (expected launcher traffic only)"
		fi
	fi
	if [ "$t" = cxl ]; then
		sent=$(stat_field "$out" bytes)
		check "[ $sent -gt 33554432 ]" "$tag: the pool counters show only $sent bytes sent"
		check "[ \$(host_ids '$out') = 2 ]" "$tag: the two emulated hosts did not get distinct CXL host ids from the pool"
	fi
done

# Open MPI after killed jobs: every PID's session directory of prterun
# (ompi.PID) and of the daemons (prted.PID) left behind in the system
# tmpdir, with PMIx's rendezvous file in it, as SIGKILL leaves them. PMIx
# 5.0 refuses an existing rendezvous file, so a launcher whose PID had one
# would stop with "The PMIx server's listener thread failed to start";
# cxlrun keeps PRRTE's session directories in its run directory instead.
if [ -n "$OPINGPONG" ]; then
	stale=$(mktemp -d /tmp/cxlrun-stale.XXXXXX)
	python3 - "$stale" "$(hostname)" <<'PY'
import os, sys
base, here = sys.argv[1], sys.argv[2]
pid_max = int(open("/proc/sys/kernel/pid_max").read())
# the PIDs the launcher and its daemons will get: the next 30000 after
# the last one given, wrapping to 300 as the kernel does
try:
    last = int(open("/proc/sys/kernel/ns_last_pid").read())
except OSError:
    last = 0
n = min(pid_max - 300, 30000)
for i in range(1, n + 1):
    pid = (last + i - 300) % (pid_max - 300) + 300
    for kind, hosts in (("ompi", [here]),
                        ("prted", [here, "cxlhost0", "cxlhost1"])):
        d = f"{base}/{kind}.{pid}"
        os.mkdir(d)
        for h in hosts:
            open(f"{d}/pmix.{h}.tool", "w").close()
PY
	before=$(find "$stale" | wc -l)
	TMPDIR=$stale run_one ompi cxl "$OPINGPONG"
	check "! grep -q 'listener thread failed' '$out'" "ompi-cxl after killed jobs: PRRTE used the system tmpdir's stale session directories"
	check "[ \$(find '$stale' | wc -l) = $before ]" "ompi-cxl after killed jobs: the run left files in TMPDIR"
	rm -rf "$stale"
fi

# the fallback without namespaces: one hostname, traffic still in the pool
run_one mpich cxl "$PINGPONG" --no-netns
check "grep -q 'no network namespaces' '$out'" "fallback: cxlrun did not say it emulates the hosts in one namespace"
check "[ \$(stat_field '$out' bytes) -gt 33554432 ]" "fallback: no traffic in the pool counters"
check "[ \$(host_ids '$out') = 2 ]" "fallback: the two emulated hosts did not get distinct CXL host ids"

# runs left in this CXLRUN_DIR, namespaces, links and pools of run $1
leftovers() {
	local id=$1 n=0
	[ -e "$CXLRUN_DIR/$id" ] && n=$((n + 1))
	ip netns list 2>/dev/null | grep -q "cxlrun-$id-" && n=$((n + 1))
	ip -o link 2>/dev/null | grep -q "cxr$id" && n=$((n + 1))
	[ -e "/dev/shm/cxlrun-$id" ] && n=$((n + 1))
	pgrep -f "^sleep 3131" >/dev/null && n=$((n + 1))
	echo $n
}
# start a run of a program that sleeps and wait until its ranks run;
# sets $id (the run) and $spid (cxlrun's pid)
start_sleeper() {
	local before
	before=$(ls "$CXLRUN_DIR")
	"$CXLRUN" -t cxl -H 2 -n 2 --provider-dir "$PROVDIR" -- sleep 3131 \
		>"$work/sleeper.out" 2>&1 &
	spid=$!
	for _ in $(seq 100); do
		[ "$(pgrep -fc '^sleep 3131')" -ge 2 ] && break
		sleep 0.1
	done
	id=$(ls "$CXLRUN_DIR" | grep -vxF "$before" | head -1)
}

if [ $root = 1 ]; then
	# Ctrl-C midway: cxlrun removes everything itself
	start_sleeper
	check "[ -n '$id' ] && [ \$(leftovers $id) -ge 3 ]" "sleeper run did not start (id '$id')"
	kill -INT "$spid"
	wait "$spid"
	check "[ \$(leftovers $id) = 0 ]" "after Ctrl-C, run $id left $(leftovers "$id") kind(s) of objects"

	# SIGKILL of cxlrun: leftovers, then --cleanup removes them, twice
	start_sleeper
	kill -KILL "$spid"
	wait "$spid" 2>/dev/null
	check "[ \$(leftovers $id) -ge 3 ]" "a killed run left nothing to clean up (test is moot)"
	"$CXLRUN" --cleanup >"$work/cleanup.out" 2>&1
	check "[ \$(leftovers $id) = 0 ]" "after --cleanup, run $id left $(leftovers "$id") kind(s) of objects: $(cat "$work/cleanup.out")"
	"$CXLRUN" --cleanup >"$work/cleanup2.out" 2>&1
	check "grep -q 'nothing left behind' '$work/cleanup2.out'" "a second --cleanup was not a no-op"

	# SIGKILL while cxlrun was saving its state (the file left empty),
	# and cxlrun not yet reaped (a zombie is not a live owner): --cleanup
	# still finds the namespaces, the pool and the launcher
	start_sleeper
	kill -KILL "$spid"
	sleep 0.2
	: >"$CXLRUN_DIR/$id/state.json"
	"$CXLRUN" --cleanup >"$work/cleanup3.out" 2>&1
	check "[ \$(leftovers $id) = 0 ]" "after --cleanup of a run with no readable state, run $id left $(leftovers "$id") kind(s) of objects: $(cat "$work/cleanup3.out")"
	wait "$spid" 2>/dev/null
	bystanders_intact "runs and --cleanup"
	check "[ -f '$CXLRUN_DIR/start0/cxlrun.run' ]" \
		"runs and --cleanup removed a run that is still starting (its owner $bystander lives)"
	"$CXLRUN" --cleanup-all >"$work/cleanup4.out" 2>&1
	bystanders_intact "--cleanup-all"
else
	echo "test_cxlrun: not root: namespace and cleanup checks skipped"
	bystanders_intact "runs"
	"$CXLRUN" --cleanup-all >"$work/cleanup4.out" 2>&1
	bystanders_intact "--cleanup-all"
fi

echo "test_cxlrun: $pass passed, $fail failed"
[ $fail = 0 ]
