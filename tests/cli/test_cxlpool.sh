#!/usr/bin/env bash
# cxlpool end to end: format, info, ls, a crashed job reclaimed by gc,
# rm of objects and of the pool (with its run files), fsck, and errors.
#   test_cxlpool.sh CXLPOOL CRASH_JOB
set -u
CXLPOOL=$1
CRASH=$2
dir=$(mktemp -d /dev/shm/cxltest-cli-XXXXXX)
trap 'rm -rf "$dir"' EXIT
export CXL_POOL=$dir/pool CXL_RUNDIR=$dir
unset CXL_JOB CXL_HOST_ID CXL_HOST_KEY
# shellcheck source=../common/check.sh
. "$(dirname "$0")/../common/check.sh"

out=$("$CXLPOOL" info 2>&1); rc=$?
ok test $rc -eq 1
ok has "cxlpool format" "$out"                 # missing pool: says how to fix
ok "$CXLPOOL" format --size 64M --capacity 1000 --max-hosts 8
out=$("$CXLPOOL" info); ok has "capacity 1000" "$out"
ok has "8 hosts" "$out"
out=$("$CXLPOOL" ls); ok has "no objects" "$out"

# a job that crashes leaves its objects and its process slot behind
CXL_JOB=crashy "$CRASH" 3
ok test $? -eq 0
out=$("$CXLPOOL" ls); ok has "obj2" "$out"
ok has "crashy" "$out"
out=$("$CXLPOOL" info); ok has "3 live" "$out"
ok has "DEAD" "$out"
out=$("$CXLPOOL" gc); ok has "reclaimed 1 dead process slot(s) and 3 object(s)" "$out"
out=$("$CXLPOOL" ls); ok has "no objects" "$out"

# hosts get their ids from the pool and are listed by name; a host that
# crashed is declared dead by id and disappears from the table
out=$("$CXLPOOL" info); ok has "host .* $(uname -n) .*machine .* (this host)" "$out"
CXL_HOST_KEY=gone-host CXL_JOB=gone "$CRASH" 1
out=$("$CXLPOOL" info); ok has "key gone-host .* 1 proc  active" "$out"
gone=$(awk '$1 == "host" && /key gone-host/ {print $2; exit}' <<<"$out")
me=$(awk '$1 == "host" && /this host/ {print $2; exit}' <<<"$out")
ok test -n "$gone" -a "$gone" != "$me"
out=$("$CXLPOOL" gc --dead-host "$gone"); ok has "reclaimed 1 dead process slot(s) and 1 object(s)" "$out"
out=$("$CXLPOOL" info); ok test "$(grep -c 'gone-host' <<<"$out")" = 0
out=$("$CXLPOOL" gc --dead-host "$me" 2>&1); ok has "is this host" "$out"
# a host whose heartbeat moves is alive: refused, unless --force
CXL_HOST_KEY=live-host CXL_JOB=live "$CRASH" 1 5 &
beater=$!
for _ in $(seq 50); do
	live=$("$CXLPOOL" info | awk '$1 == "host" && /key live-host/ {print $2; exit}')
	[ -n "$live" ] && break
	sleep 0.1
done
ok test -n "$live"
out=$("$CXLPOOL" gc --dead-host "$live" 2>&1); rc=$?
ok test $rc = 1
ok has "host $live is alive" "$out"
out=$("$CXLPOOL" info); ok has "key live-host" "$out"
out=$("$CXLPOOL" gc --dead-host "$live" --force 2>&1); ok has "reclaimed 1 dead process slot" "$out"
out=$("$CXLPOOL" gc --dead-host 4000 2>&1); rc=$?
ok test $rc = 1
ok has "the pool has hosts 0" "$out"
wait $beater

# global objects persist; rm destroys them by name
CXL_JOB=global "$CRASH" 2
"$CXLPOOL" gc >/dev/null
out=$("$CXLPOOL" ls); ok has "obj1" "$out"
ok "$CXLPOOL" rm obj0 obj1
out=$("$CXLPOOL" rm obj0 2>&1); ok has "CXL_ENOENT" "$out"
out=$("$CXLPOOL" fsck); ok has "0 problem" "$out"
out=$("$CXLPOOL" fsck --repair); ok has "0 problem(s) found; repaired .* 0 left" "$out"

# errors: bad option values and bad environment, each named
out=$("$CXLPOOL" gc --dead-host banana 2>&1); ok has "dead-host" "$out"
out=$(CXL_HOST_ID=x "$CXLPOOL" info 2>&1); ok has "CXL_HOST_ID" "$out"
out=$("$CXLPOOL" frobnicate 2>&1); ok has "unknown command" "$out"

# rm removes the pool and its host-local run files
ls "$dir"/cxlshm-* >/dev/null 2>&1; ok test $? -eq 0
ok "$CXLPOOL" rm
ok test ! -e "$CXL_POOL"
ls "$dir"/cxlshm-* >/dev/null 2>&1; ok test $? -ne 0

check_done test_cxlpool
