#!/usr/bin/env bash
# cxlbench stream and cxlbench pmem, quick, in one coherence mode: every
# run validates (STREAM's check), the tables and the CSV rows are there;
# in the emulated mode a run that skips the write-backs must fail its
# validation (the check can fail).
#   test_cxlbench_stream.sh CXLBENCH stream|pmem MODE
set -u
CXLBENCH=$1
CMD=$2
MODE=$3
dir=$(mktemp -d /dev/shm/cxltest-stream-XXXXXX)
trap 'rm -rf "$dir"' EXIT
unset CXL_POOL CXL_COHERENCE CXL_JOB CXL_HOST_ID
# shellcheck source=../common/check.sh
. "$(dirname "$0")/../common/check.sh"

out=$("$CXLBENCH" "$CMD" --quick --mode "$MODE" --csv "$dir/out.csv" 2>&1)
rc=$?
echo "$out"
ok test "$rc" -eq 0
ok has "BREAKS STREAM's 4x rule" "$out"
if [ "$CMD" = stream ]; then
	# 8 placements + 3 interleaved, each validated
	ok test "$(count 'Solution Validates' "$out")" -eq 11
	ok has "winner per kernel, mode $MODE" "$out"
	ok has "DRAM-only/pool-only" "$out"
	ok test "$(grep -c "^$MODE[^,]*,PPP,0,Triad," "$dir/out.csv")" -eq 1
	ok test "$(wc -l <"$dir/out.csv")" -eq $((1 + 11 * 4))
	if [ "$MODE" != coherent ]; then
		# PPP Copy writes back c and invalidates a: 16 MiB = 262144 lines
		ok test "$(awk -F, '$2 == "PPP" && $4 == "Copy" {print $11 + $12 + $14}' "$dir/out.csv")" = 524288
	fi
	adv=$("$CXLBENCH" stream --quick --mode "$MODE" --advise 2>&1)
	ok test $? -eq 0
	ok has "=> put . in the pool first" "$adv"
else
	# dram volatile, cxl volatile + persistent, pmemobj (when built)
	ok test "$(count 'Solution Validates' "$out")" -ge 3
	ok has "STREAM-PMem" "$out"
	ok has "cxl $MODE" "$out"
	if has "skipping pmemobj" "$out"; then
		echo "test_cxlbench_stream: NOTE: no libpmemobj in this build"
	else
		ok has "^pmemobj " "$out"
	fi
fi
if [ "$MODE" = emulated ]; then
	extra=()
	[ "$CMD" = stream ] && extra=(--ratios none)
	neg=$("$CXLBENCH" "$CMD" --quick --mode emulated --omit-flush \
		"${extra[@]}" 2>&1)
	ok test $? -eq 1
	ok has "Failed Validation" "$neg"
fi
out=$("$CXLBENCH" "$CMD" --ntimes 1 2>&1)
ok test $? -eq 2
ok has "ntimes" "$out"

check_done test_cxlbench_stream
