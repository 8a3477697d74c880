#!/usr/bin/env bash
# The SimGrid projection, quick and small: bench/simgrid/project.py with
# ranks up to 16, then checks that its output is sane: every point
# present, finite and positive; strong scaling on the fat tree speeds up
# the compute-bound programs (halo3d, cg) from 2 to 16 ranks;
# every model-check point has both a measurement and a prediction; the
# plots exist; the device costs were checked against the C presets;
# one pod of 16 agrees with the one-switch platform (the pod model).
#   test_projection.sh PYTHON
# Exit 77 (skipped) when SimGrid is not installed.
set -u
PY=$1
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
out=$(mktemp -d /tmp/cxltest-projection-XXXXXX)
trap 'rm -rf "$out"' EXIT
"$PY" "$repo/bench/simgrid/project.py" --quick --max-ranks 16 --out "$out" \
	>"$out/log" 2>&1
rc=$?
if [ $rc -eq 77 ]; then
	grep SKIP "$out/log"
	exit 77
fi
cat "$out/log"
if [ $rc -ne 0 ]; then
	echo "test_projection: project.py failed (exit $rc)" >&2
	exit 1
fi
if ! grep -q "^== device costs agree with the C presets" "$out/log"; then
	echo "test_projection: no check of bench/simgrid/costs.py against" \
		"the C presets in the log" >&2
	exit 1
fi
"$PY" - "$out" <<'PYEOF'
import csv, math, sys
from pathlib import Path
out = Path(sys.argv[1])
bad = []
proj = {}
with (out / "projection.csv").open() as f:
    for r in csv.DictReader(f):
        t = float(r["seconds"])
        if not (math.isfinite(t) and t > 0):
            bad.append(f"projection {r}: time not finite and positive")
        proj[(r["program"], r["platform"], int(r["ranks"]))] = t
ranks = (2, 4, 8, 16)
for prog in ("halo3d", "cg", "alltoall"):
    for plat in ("cxl-cmpi", "ib-hdr"):
        for n in ranks:
            if (prog, plat, n) not in proj:
                bad.append(f"projection: no point for {prog} on {plat} "
                           f"with {n} ranks")
# pods of 16 (docs/multipool.md): up to 16 ranks one pod, the same
# device as cxl-cmpi with its per-message time charged as latency
# instead of CPU time: the two agree within 25 %
for prog in ("halo3d", "cg", "alltoall"):
    for n in ranks:
        pod = proj.get((prog, "pods16-cmpi-ib-hdr", n))
        one = proj.get((prog, "cxl-cmpi", n))
        if pod is None:
            bad.append(f"projection: no point for {prog} on pods16 with "
                       f"{n} ranks")
        elif one and abs(pod / one - 1) > 0.25:
            bad.append(f"{prog}, {n} ranks: one pod {pod:.4g} s against "
                       f"cxl-cmpi {one:.4g} s, more than 25 % apart")
for prog in ("halo3d", "cg"):
    a, b = proj.get((prog, "ib-hdr", 2)), proj.get((prog, "ib-hdr", 16))
    if a and b and not b < a:
        bad.append(f"{prog} on the fat tree: 16 ranks ({b:.4g} s) not "
                   f"faster than 2 ({a:.4g} s) under strong scaling")
with (out / "model_check.csv").open() as f:
    rows = list(csv.DictReader(f))
if len(rows) != 9:
    bad.append(f"model check: {len(rows)} rows, 9 expected")
for r in rows:
    for k in ("measured_s", "smpi_s"):
        try:
            v = float(r[k])
        except ValueError:
            v = float("nan")
        if not (math.isfinite(v) and v > 0):
            bad.append(f"model check {r['program']} {r['ranks']} ranks: "
                       f"{k} = {r[k]!r}")
for png in ("projection_halo3d.png", "projection_cg.png",
            "projection_alltoall.png", "model_check.png"):
    path = out / png
    if not path.exists() or path.stat().st_size == 0:
        bad.append(f"plot {png} missing or empty")
for b in bad:
    print("test_projection: " + b, file=sys.stderr)
sys.exit(1 if bad else 0)
PYEOF
