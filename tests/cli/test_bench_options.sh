#!/usr/bin/env bash
# The options every pool benchmark shares (tools/common/benchopts.c), in
# each program that takes them: a bad value exits 2 naming the option and
# what to give; good ones run (--quick, one mode, a temporary pool that is
# removed at exit).
#   test_bench_options.sh CXLBENCH RING_BENCH COHERENCE_FLOOR
set -u
CXLBENCH=$1
RING=$2
FLOOR=$3
unset CXL_POOL CXL_JOB CXL_POOL_SIZE CXL_ARENA_CAPACITY CXL_COHERENCE
# shellcheck source=../common/check.sh
. "$(dirname "$0")/../common/check.sh"

# refused: exit 2 and a message with the option and its fix
refused() {
	local want=$1 out rc
	shift
	out=$("$@" 2>&1 </dev/null)
	rc=$?
	ok test "$rc" -eq 2
	ok has "$want" "$out"
}

for prog in "$CXLBENCH" "$CXLBENCH stream" "$CXLBENCH pmem" \
	"$CXLBENCH loaded" "$RING" "$FLOOR"; do
	# shellcheck disable=SC2086  # prog holds a subcommand
	set -- $prog
	refused "--mode 'bogus'.*use coherent, flush" "$@" --mode bogus
	refused "--mode is empty; give" "$@" --mode ""
	refused "--size 'x1' is not a size; use a number" "$@" --size x1
	refused "--size 3M: a pool must be a multiple of 2 MiB" "$@" --size 3M
	refused "--mode needs a value" "$@" --mode
	refused "unknown or malformed option '--bogus'" "$@" --bogus
done
refused "not a coherence mode ring_bench runs; use coherent, flush or emulated" \
	"$RING" --mode uncached
refused "--threads '0' is invalid; give a number from 1 to" \
	"$CXLBENCH" --threads 0
refused "--threads 'abc' is invalid; give a number from 1 to" \
	"$CXLBENCH" loaded --threads abc
refused "--n '5' is invalid; give a number from 1024" \
	"$CXLBENCH" pmem --n 5
refused "--ntimes '1' is invalid; give a number from 2 to 1000" \
	"$CXLBENCH" stream --ntimes 1
refused "too small for the chase region.*give --size" \
	"$CXLBENCH" loaded --quick --mode coherent --size 16M

# good options run; the temporary pool directories they name are gone
# afterwards (by name: tests running beside this one make their own)
made=""
pooldirs() {
	made="$made $(echo "$1" | grep -o '/dev/shm/[a-z_]*-[0-9]*\.[A-Za-z0-9]*/pool' |
		sed 's|/pool$||' | sort -u | tr '\n' ' ')"
}
csv=$(mktemp)
out=$("$CXLBENCH" --quick --mode coherent --csv "$csv" 2>&1)
rc=$?
pooldirs "$out"
ok test $rc -eq 0
[ $rc -eq 0 ] || printf 'cxlbench --quick said:\n%s\n' "$(echo "$out" | tail -20)" >&2
ok has "coherent" "$out"
ok test "$(grep -c ,coherent, "$csv")" -gt 0
out=$("$RING" --quick --mode coherent,flush --csv "$csv" 2>&1)
rc=$?
pooldirs "$out"
ok test $rc -eq 0
[ $rc -eq 0 ] || printf 'ring_bench --quick said:\n%s\n' "$(echo "$out" | tail -20)" >&2
ok has "ring_bench: total" "$out"
# both modes measured, in ring_bench's order (flush first)
ok test "$(cut -d, -f1 "$csv" | grep -v mode | uniq | tr '\n' ' ')" = "flush coherent "

# coherence_floor: the data arrives whole, and the emulated mode's counts
# are the protocols' (flag: 16 lines each way and 3 fences for 1 KiB;
# stamped: 19 lines of 56 bytes)
out=$("$FLOOR" --quick --mode flush,emulated --csv "$csv" 2>&1)
rc=$?
pooldirs "$out"
ok test $rc -eq 0
[ $rc -eq 0 ] || printf 'coherence_floor --quick said:\n%s\n' "$(echo "$out" | tail -20)" >&2
ok has "stamped protocol: one-way latency" "$out"
ok has "^emulated,flag,1024,[0-9.]*,[0-9.]*,16.000,0.000,16.000,3.000," "$(cat "$csv")"
ok has "^emulated,stamped,1024,[0-9.]*,[0-9.]*,19.000,0.000," "$(cat "$csv")"
ok test "$(grep -c '^flush,' "$csv")" -eq 22
# without its invalidation the flag protocol reads stale data there
out=$("$FLOOR" --quick --mode emulated --mutate 2>&1)
rc=$?
ok test $rc -eq 1
ok has "flag protocol, emulated mode: 8-byte message 1 arrived with words 0 and 0: stale data" "$out"
rm -f "$csv"
# shellcheck disable=SC2086  # a list of paths without spaces
ok test "$(echo $made | wc -w)" -ge 3
for d in $made; do
	ok test ! -e "$d"
done

check_done test_bench_options
