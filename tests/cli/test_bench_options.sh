#!/usr/bin/env bash
# The options every pool benchmark shares (tools/common/benchopts.c), in
# each program that takes them: a bad value exits 2 naming the option and
# what to give; good ones run (--quick, one mode, a temporary pool that is
# removed at exit).
#   test_bench_options.sh CXLBENCH RING_BENCH
set -u
CXLBENCH=$1
RING=$2
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
	"$CXLBENCH loaded" "$RING"; do
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

# good options run; the temporary pool directories are gone afterwards
before=$(ls -d /dev/shm/cxlbench-* /dev/shm/ring_bench-* 2>/dev/null | wc -l)
csv=$(mktemp)
out=$("$CXLBENCH" --quick --mode coherent --csv "$csv" 2>&1)
rc=$?
ok test $rc -eq 0
[ $rc -eq 0 ] || printf 'cxlbench --quick said:\n%s\n' "$(echo "$out" | tail -20)" >&2
ok has "coherent" "$out"
ok test "$(grep -c ,coherent, "$csv")" -gt 0
out=$("$RING" --quick --mode coherent,flush --csv "$csv" 2>&1)
rc=$?
ok test $rc -eq 0
[ $rc -eq 0 ] || printf 'ring_bench --quick said:\n%s\n' "$(echo "$out" | tail -20)" >&2
ok has "ring_bench: total" "$out"
# both modes measured, in ring_bench's order (flush first)
ok test "$(cut -d, -f1 "$csv" | grep -v mode | uniq | tr '\n' ' ')" = "flush coherent "
rm -f "$csv"
after=$(ls -d /dev/shm/cxlbench-* /dev/shm/ring_bench-* 2>/dev/null | wc -l)
ok test "$after" -le "$before"

check_done test_bench_options
