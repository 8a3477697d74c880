#!/usr/bin/env bash
# Run every test of cxlmpi on a fresh clone (the README's test command):
#   1. setup (pinned packages, venv)           scripts/setup.sh
#   2. release build + ctest                   build/
#   3. ASan + UBSan build + ctest              build-asan/
#   4. libFuzzer over pool and provider        build-fuzz/, FUZZ_SECONDS (60)
#      structures (fuzz_pool, fuzz_fabric)      each
#   5. conformance suites we did not write,   build-conformance/
#      over the cxl provider (coherent):
#      - libfabric's fabtests -t quick: every test of
#        tests/conformance/fabtests-quick.pass must pass
#      - MPICH's test/mpi, pt2pt topo attr datatype init group, 4 ranks:
#        every test of tests/conformance/mpich_expected_pass.txt in those
#        directories must pass
#      CONFORMANCE=0 skips them (they take about 12 minutes here)
#   6. two QEMU guests sharing one /dev/dax (tools/cxlvm):
#      tests/vm/test_cxlvm.sh --quick (pool, libcxlshm and MPICH across
#      the guests' kernels); skipped with one line where guests cannot
#      boot (no qemu, not root); VM=0 skips it
#   7. clang-format check
# Ends with one line "tests: N passed, N failed" (N counts ctest tests of
# both builds, the fuzz run, each conformance suite and the format check);
# exit 0 only if all pass.
set -uo pipefail
cd "$(dirname "$0")/.."
FUZZ_SECONDS=${FUZZ_SECONDS:-60}
passed=0
failed=0

stage() { printf '\n==== %s\n' "$*"; }

# ctest in a build dir; adds its counts to the totals
run_ctest() {
	local dir=$1 out
	out=$(mktemp)
	(cd "$dir" && ctest --output-on-failure --timeout 900) 2>&1 | tee "$out"
	local total fails
	total=$(sed -n 's/.*tests failed out of \([0-9]*\).*/\1/p' "$out" | tail -1)
	fails=$(sed -n 's/.* \([0-9]*\) tests failed out of.*/\1/p' "$out" | tail -1)
	rm -f "$out"
	if [ -z "$total" ]; then
		echo "test.sh: ctest in $dir produced no summary" >&2
		failed=$((failed + 1))
		return
	fi
	passed=$((passed + total - fails))
	failed=$((failed + fails))
}

# build DIR [TARGET] -- [CMAKE ARGS...]
build() {
	local dir=$1 target=$2
	shift 2
	cmake -S . -B "$dir" -G Ninja "$@" >/dev/null &&
		ninja -C "$dir" $target >/dev/null
}

stage "setup"
scripts/setup.sh || exit 1

stage "release build + tests"
if build build "" -DCMAKE_BUILD_TYPE=RelWithDebInfo; then
	run_ctest build
else
	echo "test.sh: release build failed" >&2
	failed=$((failed + 1))
fi

stage "ASan + UBSan build + tests"
if build build-asan "" -DCMAKE_BUILD_TYPE=Debug -DCXLMPI_SANITIZE=ON; then
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
		UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		run_ctest build-asan
else
	echo "test.sh: sanitizer build failed" >&2
	failed=$((failed + 1))
fi

# one libFuzzer target for FUZZ_SECONDS, from its seeds (if any)
run_fuzzer() {
	local target=$1 seeds=$2 corpus
	corpus=$(mktemp -d)
	[ -n "$seeds" ] && cp "$seeds"/* "$corpus"/
	if build-fuzz/tests/fuzz/"$target" -max_total_time="$FUZZ_SECONDS" \
		-max_len=2048 -timeout=20 -print_final_stats=1 "$corpus" 2>&1 |
		tail -12; then
		passed=$((passed + 1))
	else
		echo "test.sh: $target found a crash (see above)" >&2
		failed=$((failed + 1))
	fi
	rm -rf "$corpus" /dev/shm/cxlfuzz-* /dev/shm/cxlfuzzfi-*
}

stage "fuzz pool and provider structures for ${FUZZ_SECONDS}s each"
if build build-fuzz "fuzz_pool fuzz_fabric" -DCMAKE_C_COMPILER=clang-14 \
	-DCXLMPI_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo; then
	run_fuzzer fuzz_pool ""
	run_fuzzer fuzz_fabric tests/fuzz/fabric_seeds
else
	echo "test.sh: fuzz build failed" >&2
	failed=$((failed + 1))
fi

# one conformance suite: passes when every test of its list passed
run_suite() {
	local name=$1
	shift
	if "$@"; then
		passed=$((passed + 1))
	else
		echo "test.sh: $name: a test of its expected-pass list failed or did not run (see above)" >&2
		failed=$((failed + 1))
	fi
}

if [ "${CONFORMANCE:-1}" != 0 ]; then
	stage "conformance: fabtests -t quick over cxl (coherent)"
	run_suite fabtests tests/conformance/fabtests.sh -t quick -c coherent \
		-x tests/conformance/fabtests-quick.pass cxl
	stage "conformance: MPICH test/mpi over cxl (coherent, 4 ranks)"
	run_suite "MPICH test suite" tests/conformance/mpich_testsuite.sh \
		-t cxl -m coherent -n 4 \
		-x tests/conformance/mpich_expected_pass.txt \
		pt2pt topo attr datatype init group
fi

if [ "${VM:-1}" != 0 ]; then
	stage "two guests sharing one /dev/dax (tools/cxlvm, quick)"
	tests/vm/test_cxlvm.sh --quick build
	case $? in
	0) passed=$((passed + 1)) ;;
	77) ;; # skipped: it said why
	*)
		echo "test.sh: tests/vm/test_cxlvm.sh failed (see above)" >&2
		failed=$((failed + 1))
		;;
	esac
fi

stage "clang-format"
if git ls-files -z '*.c' '*.h' | xargs -0 .venv/bin/clang-format --dry-run --Werror; then
	echo "format clean"
	passed=$((passed + 1))
else
	echo "test.sh: run '.venv/bin/clang-format -i' on the files above" >&2
	failed=$((failed + 1))
fi

echo
echo "tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
