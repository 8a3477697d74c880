# Shell helpers of the command-line tests, sourced by them:
#   ok CMD [ARGS...]   runs CMD: a pass if it succeeds, else a failure
#                      (named on stderr)
#   has PATTERN TEXT   TEXT has a line matching PATTERN (grep)
#   count PATTERN TEXT the number of such lines
#   check_done NAME    prints "NAME: N passed, N failed"; succeeds if none
#                      failed
# shellcheck shell=bash
pass=0
fail=0
ok() {
	if "$@"; then pass=$((pass + 1)); else
		fail=$((fail + 1)); echo "FAILED: $*" >&2; fi
}
has() { grep -q -- "$1" <<<"$2"; }
count() { grep -c -- "$1" <<<"$2"; }
check_done() {
	echo "$1: $pass passed, $fail failed"
	[ "$fail" -eq 0 ]
}
