#!/usr/bin/env bash
# The demo's main table (scripts/demo.sh step 3, quick) has no hole: MPI
# latency and bandwidth across 2 emulated hosts over cxl and tcp, and
# every cxl latency row carries finite, non-negative coherence operations
# per message (mpi_bench's in-loop counters, polls left out), with the
# 8-byte message at most 2 flushed lines and at most 2 fences per send or
# receive (docs/coherence.md: "a message of up to 64 bytes costs at most
# 2 flushed lines and 1 fence on each side"; the slack covers the
# provider's rare acknowledgements).
#   test_demo_table.sh PROVIDER_DIR
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
PROVDIR=$1
dir=$(mktemp -d /tmp/demo-table.XXXXXX)
trap 'rm -rf "$dir"' EXIT
"$REPO/.venv/bin/python" "$REPO/bench/compare_transports.py" --quick \
	--tests latency,bw --transports cxl-hosts,tcp-hosts --cxl-mode flush \
	--summary --no-provider-table --provider-dir "$PROVDIR" \
	--build-dir "$dir/bench" --out "$dir" >"$dir/out" 2>&1
rc=$?
cat "$dir/out"
[ $rc = 0 ] || { echo "FAIL: compare_transports exited $rc"; exit 1; }
python3 - "$dir/mpi_transports.csv" <<'PY'
import csv, math, sys
rows = list(csv.DictReader(open(sys.argv[1])))
bad = []
def num(r, k):
    try:
        v = float(r[k])
    except ValueError:
        return None
    return v if math.isfinite(v) else None
for test in ("latency", "bw"):
    for t in ("cxl-hosts", "tcp-hosts"):
        sizes = [int(r["size_bytes"]) for r in rows
                 if r["test"] == test and r["transport"] == t]
        if len(sizes) < 20:
            bad.append(f"{test} over {t}: {len(sizes)} sizes, want >= 20")
for r in rows:
    v = num(r, "value")
    if v is None or v <= 0:
        bad.append(f"{r['test']} {r['transport']} {r['size_bytes']}: value {r['value']!r}")
    if r["test"] == "latency" and r["transport"] == "cxl-hosts":
        for k in ("flush_lines_per_msg", "fences_per_msg", "inval_lines_per_msg"):
            x = num(r, k)
            if x is None or x < 0 or x > 1e5:
                bad.append(f"latency cxl {r['size_bytes']} B: {k} {r[k]!r}")
        if r["size_bytes"] == "8":
            f, n = num(r, "flush_lines_per_msg"), num(r, "fences_per_msg")
            if f is None or f > 2 or n is None or n > 2:
                bad.append(f"8 B: {f} flushed lines, {n} fences per message")
print("test_demo_table:", "ok" if not bad else "; ".join(bad))
sys.exit(1 if bad else 0)
PY
