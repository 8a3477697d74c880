#!/usr/bin/env bash
# cxlbench loaded, quick, read-only and 1:1 traffic, DRAM and the pool in
# the given mode: it runs, writes one CSV row per point, every latency is
# positive, and the load threads inject more at delay 0 than at the
# largest delay (the curve has a load axis at all); a pool it cannot attach
# makes it exit nonzero.
#   test_cxlbench_loaded.sh CXLBENCH MODE
set -uo pipefail
CXLBENCH=$1 MODE=$2
dir=$(mktemp -d /tmp/cxlbench-loaded.XXXXXX)
trap 'rm -rf "$dir"' EXIT
"$CXLBENCH" loaded --quick --mix R,1:1 --mode "$MODE" --csv "$dir/l.csv" >"$dir/out" 2>&1
rc=$?
cat "$dir/out"
[ $rc = 0 ] || { echo "FAIL: cxlbench loaded exited $rc"; exit 1; }
# a pool that cannot be attached fails the command (not only a message)
# (in memory: a pool file on a disk file system is refused for that)
foreign=$(mktemp /dev/shm/cxlbench-foreign.XXXXXX)
trap 'rm -rf "$dir" "$foreign"' EXIT
truncate -s 64M "$foreign"
CXL_POOL_CREATE=0 "$CXLBENCH" loaded --quick --mix R --mode "$MODE" \
	--pool "$foreign" >"$dir/out2" 2>&1
rc=$?
if [ $rc = 0 ] || ! grep -q "not a cxlshm pool" "$dir/out2"; then
	cat "$dir/out2"
	echo "FAIL: cxlbench loaded on a foreign pool exited $rc"
	exit 1
fi
python3 - "$dir/l.csv" "$MODE" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
media = {r["medium"] for r in rows}
bad = []
if "dram" not in media or not any(m.startswith(sys.argv[2]) for m in media):
    bad.append(f"media {sorted(media)}: want dram and {sys.argv[2]}")
# 2 media x 2 mixes x (4 delays + idle)
if len(rows) != 20:
    bad.append(f"{len(rows)} rows, want 20")
if any(float(r["latency_ns"]) <= 0 for r in rows):
    bad.append("a latency <= 0")
for m in media:
    for mix in ("R", "1:1"):
        pts = {int(r["delay"]): float(r["mbps"]) for r in rows
               if r["medium"] == m and r["mix"] == mix and r["load_threads"] != "0"}
        if pts and not pts[0] > pts[max(pts)]:
            bad.append(f"{m} {mix}: {pts[0]} MB/s at delay 0 is not above {pts[max(pts)]} at {max(pts)}")
print("test_cxlbench_loaded:", "ok" if not bad else "; ".join(bad))
sys.exit(1 if bad else 0)
PY
