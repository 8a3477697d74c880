#!/usr/bin/env bash
# Every bad setting ends a real MPI job promptly, and its stderr, at the
# default log level (no FI_LOG_LEVEL), names the variable and the fix.
#
#   bad_config.sh MPIEXEC PROGRAM PROVIDER_DIR LIBCXLMPI MATRIX ENV_MD
#
# PROGRAM is an MPICH program (tests/mpi/mpi_pingpong.c); each line
# VAR=VALUE of MATRIX runs it on 2 ranks with the cxl provider and
# libcxlmpi preloaded (after CXL_MPI_PRELOAD, the sanitizer runtimes of
# an ASan build), on a fresh pool file, within 60 s. A run passes
# when it exits non-zero and a stderr line names VAR and what to do
# (use, set, unset, give, create, list, point). A control run with no bad
# setting must pass first. The script also fails when a CXL_*, FI_CXL_*
# or CXLMPI_* variable of ENV_MD (docs/env.md) has no line in MATRIX.
set -uo pipefail
MPIEXEC=$1 PROG=$2 PROVDIR=$3 LIBCXLMPI=$4 MATRIX=$5 ENVMD=$6
work=$(mktemp -d /tmp/badcfg.XXXXXX)
trap 'rm -rf "$work" /dev/shm/badcfg-$$-*' EXIT
pass=0 fail=0
bad() {
	fail=$((fail + 1))
	echo "FAIL: $*" >&2
}

# the variables docs/env.md documents for the libraries, each in MATRIX
for v in $(grep -oE '^(\| |- )`(CXL|FI_CXL|CXLMPI)_[A-Z_]+`' "$ENVMD" |
	grep -oE '[A-Z_]+' | sort -u); do
	if grep -q "^$v=" "$MATRIX"; then pass=$((pass + 1)); else
		bad "$v is documented in docs/env.md but not in the bad-configuration matrix"
	fi
done

n=0
run() { # run.N: a job with the environment "$@" added
	n=$((n + 1))
	rm -f /dev/shm/badcfg-$$-*
	env -u FI_LOG_LEVEL CXL_POOL=/dev/shm/badcfg-$$-pool CXL_JOB=badcfg \
		FI_PROVIDER=cxl FI_PROVIDER_PATH="$PROVDIR" \
		MPIR_CVAR_CH4_NETMOD=ofi \
		LD_PRELOAD="${CXL_MPI_PRELOAD:+$CXL_MPI_PRELOAD:}$LIBCXLMPI" \
		ASAN_OPTIONS=detect_leaks=0 \
		"$@" timeout -k 5 60 "$MPIEXEC" -n 2 "$PROG" \
		>"$work/out.$n" 2>"$work/err.$n" </dev/null
}

if run; then pass=$((pass + 1)); else
	bad "the control run with no bad setting failed: $(tail -3 "$work/err.$n")"
fi

while IFS= read -r line; do
	case $line in '#'* | '') continue ;; esac
	var=${line%%=*} val=${line#*=}
	t0=$(date +%s)
	run "$var=$val"
	rc=$?
	dt=$(($(date +%s) - t0))
	if [ $rc = 0 ]; then
		bad "$var='$val' was accepted (the job ran)"
	elif [ $rc = 124 ] || [ $rc = 137 ]; then
		bad "$var='$val': the job hung (killed after 60 s)"
	elif ! grep "$var" "$work/err.$n" | grep -qiE 'use|set|unset|give|create|list|point'; then
		bad "$var='$val': stderr does not name $var and a fix: $(head -c 600 "$work/err.$n")"
	else
		pass=$((pass + 1))
		echo "ok: $var='$val' (exit $rc, ${dt}s): $(grep -m1 "$var" "$work/err.$n" | cut -c1-160)"
	fi
done <"$MATRIX"
# a pool file on a disk file system, where this machine has one
for d in /var/tmp "$PWD"; do
	case $(stat -f -c %T "$d" 2>/dev/null) in
	tmpfs | hugetlbfs | ramfs | "") continue ;;
	esac
	disk=$d/badcfg-disk-$$.pool
	run "CXL_POOL=$disk"
	rc=$?
	if [ $rc != 0 ] && grep -q "disk file system" "$work/err.$n" &&
		grep "CXL_POOL" "$work/err.$n" | grep -q "tmpfs" && [ ! -e "$disk" ]; then
		pass=$((pass + 1))
		echo "ok: CXL_POOL='$disk' (a disk file system, exit $rc)"
	else
		bad "CXL_POOL='$disk' on a disk file system: exit $rc, file left: $([ -e "$disk" ] && echo yes || echo no): $(head -c 400 "$work/err.$n")"
		rm -f "$disk"
	fi
	break
done
echo "bad_config: $pass passed, $fail failed"
[ $fail = 0 ]
