#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""compare_rma: MPI one-sided latency and bandwidth across emulated hosts,
three paths side by side in one run (issue 5's benchmark).

  direct    pool windows: libcxlmpi (cxlrun --cxlmpi) does MPI_Put/MPI_Get
            as copies by the origin into the target's window in the pool,
            and synchronizes through pool flags and locks;
  provider  the same MPI without libcxlmpi: the MPI library's own RMA over
            the cxl provider (messages through the pool, executed by the
            target's provider: MPICH's native RMA, Open MPI's osc);
  tcp       the MPI library's RMA over libfabric tcp between the hosts.

Each path runs bench/mpi/mpi_rma_bench (OSU style, n origins and n
targets: --pairs N puts N origins on host 0 and their N targets on host 1)
under tools/cxlrun on 2 emulated hosts. Prints one table per test, the
coherence operations per operation of the direct path (flushed lines,
invalidated lines, fences, at the origin) and the goals; writes CSV and
PNG plots. A benchmark, not a test: the machine is noisy, compare the
columns of one run.

  compare_rma.py [--pairs 1] [--coherence flush] [--max 1048576]
                 [--iters 1000] [--paths direct,provider,tcp]
                 [--mpi mpich] [--out results/rma]
"""
import argparse
import csv
import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CXLRUN = REPO / "tools" / "cxlrun" / "cxlrun"
TESTS = ["put_lat", "get_lat", "put_bw", "get_bw"]
SUMMARY_SIZES = (8, 4096, 65536, 1 << 20)
PATHS = {
    "direct": (["-t", "cxl", "--cxlmpi"], "pool windows + libcxlmpi"),
    "provider": (["-t", "cxl"], "MPI RMA over the provider"),
    "tcp": (["-t", "tcp"], "MPI RMA over tcp"),
}


def fmt_size(n):
    for unit, b in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= b:
            return f"{n // b} {unit}"
    return f"{n} B"


def run(path, test, args, build):
    opts, _ = PATHS[path]
    cmd = [str(CXLRUN), *opts, "-H", "2", "-n", str(2 * args.pairs),
           "--mpi", args.mpi, "--coherence", args.coherence,
           "--provider-dir", str(build / "src" / "fabric"), "--",
           str(args.bench), test, "--max", str(args.max),
           "--iters", str(args.iters)]
    print(f"  {path:9s} {test}", file=sys.stderr, flush=True)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if p.returncode:
        sys.exit(f"compare_rma: {' '.join(cmd)} failed:\n{p.stderr[-2000:]}")
    res, coh = {}, {}
    for line in p.stdout.splitlines():
        m = re.match(r"RESULT (\S+) (\d+) ([\d.]+)", line)
        if m:
            res[(m[1], int(m[2]))] = float(m[3])
        m = re.match(r"COH (\S+) (\d+) ([\d.]+) ([\d.]+) ([\d.]+) ([\d.]+)",
                     line)
        if m:
            coh[int(m[2])] = tuple(float(m[i]) for i in (3, 4, 5, 6))
    return res, coh


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pairs", type=int, default=1)
    ap.add_argument("--coherence", default="flush",
                    choices=["flush", "coherent", "emulated", "uncached"])
    ap.add_argument("--max", type=int, default=1 << 20)
    ap.add_argument("--iters", type=int, default=1000)
    ap.add_argument("--paths", default="direct,provider,tcp")
    ap.add_argument("--tests", default=",".join(TESTS))
    ap.add_argument("--mpi", default="mpich", choices=["mpich", "ompi"])
    ap.add_argument("--build", default=str(REPO / "build"))
    ap.add_argument("--out", default=str(REPO / "results" / "rma"))
    ap.add_argument("--no-plot", action="store_true")
    ap.add_argument("--summary", action="store_true",
                    help="rows for 8 B, 4 KiB, 64 KiB and 1 MiB only")
    args = ap.parse_args()
    build = Path(args.build)
    args.bench = build / "bench" / "mpi_rma_bench"
    if args.mpi == "ompi":
        args.bench = build / "bench" / "mpi_rma_bench-ompi"
    if not args.bench.exists():
        sys.exit(f"compare_rma: {args.bench} is missing; build first "
                 "(cmake -S . -B build -G Ninja && ninja -C build)")
    paths = [p for p in args.paths.split(",") if p]
    tests = [t for t in args.tests.split(",") if t]
    for p in paths:
        if p not in PATHS:
            sys.exit(f"compare_rma: unknown path '{p}' (--paths takes "
                     f"{','.join(PATHS)})")
    print(f"compare_rma: {args.mpi}, 2 emulated hosts, {args.pairs} "
          f"origin(s) -> {args.pairs} target(s), CXL_COHERENCE="
          f"{args.coherence}", file=sys.stderr)
    data, cohs = {}, {}
    for test in tests:
        for p in paths:
            res, coh = run(p, test, args, build)
            data.update({(p, k[0], k[1]): v for k, v in res.items()})
            if p == "direct":
                cohs.update({(test, s): c for s, c in coh.items()})
    sizes = sorted({s for (_, _, s) in data})
    rows = []
    for test in tests:
        lat = test.endswith("_lat")
        unit = "us" if lat else "MB/s"
        extra = ["memcpy"] if test == "get_bw" else []
        cols = paths + extra
        print(f"\n{test} ({unit}; {'mean per operation' if lat else 'sum over origins'})")
        head = f"{'size':>8} " + " ".join(f"{c:>10}" for c in cols)
        if "direct" in paths:
            head += "   flushed streamed  inval  fences /op (direct)"
        print(head)
        for s in sizes:
            # memcpy: measured by rank 0 of the direct path's get_bw run
            vals = [data.get(("direct", "memcpy", s) if c == "memcpy"
                             else (c, test, s)) for c in cols]
            if all(v is None for v in vals) or (
                    args.summary and s not in SUMMARY_SIZES):
                continue
            line = f"{fmt_size(s):>8} " + " ".join(
                f"{v:10.2f}" if v is not None else f"{'-':>10}" for v in vals)
            c = cohs.get((test, s))
            if c:
                line += (f"   {c[0]:7.2f} {c[3]:8.2f} {c[1]:6.2f} "
                         f"{c[2]:7.2f}")
            print(line)
            for col, v in zip(cols, vals):
                if v is not None:
                    rows.append([test, col, s, v, unit])
    # goals (issue 5)
    print("\ngoals:")
    put8 = {p: data.get((p, "put_lat", 8)) for p in paths}
    if put8.get("direct") and put8.get("provider"):
        r = put8["provider"] / put8["direct"]
        print(f"  8 B put latency, provider path / direct: {r:.1f}x "
              f"(goal >= 3x: {'met' if r >= 3 else 'NOT met'})")
    g = data.get(("direct", "get_bw", 1 << 20))
    m = data.get(("direct", "memcpy", 1 << 20))
    if g and m:
        r = g / m
        print(f"  1 MiB get bandwidth, direct / local memcpy: {r:.2f} "
              f"(goal >= 0.8: {'met' if r >= 0.8 else 'NOT met'})")
    os.makedirs(args.out, exist_ok=True)
    csv_path = Path(args.out) / "rma.csv"
    with open(csv_path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["test", "path", "size", "value", "unit"])
        w.writerows(rows)
    print(f"\nCSV: {csv_path}")
    if not args.no_plot:
        plot(rows, tests, Path(args.out))


TITLES = {"put_lat": "MPI_Put latency", "get_lat": "MPI_Get latency",
          "put_bw": "MPI_Put bandwidth", "get_bw": "MPI_Get bandwidth"}


def plot(rows, tests, out):
    """rma_lat.png and rma_bw.png in the look of compare_transports.py's
    point-to-point plots: a panel per operation, a line per path."""
    try:
        import plot_style as ps
        ps.pyplot()
    except ImportError:
        print("no matplotlib: no plots", file=sys.stderr)
        return
    for kind in ("lat", "bw"):
        fig, axes = ps.figure(2)
        for ax, test in zip(axes, [t for t in TESTS if t.endswith(kind)]):
            if test not in tests:
                continue
            cols = {r[1] for r in rows if r[0] == test}
            for col in [c for c in (*PATHS, "memcpy") if c in cols]:
                pts = sorted((r[2], r[3]) for r in rows
                             if r[0] == test and r[1] == col)
                ps.line(ax, col, [p[0] for p in pts], [p[1] for p in pts])
            if cols:
                ps.size_axis(ax, max(r[2] for r in rows if r[0] == test))
            ps.value_axis(ax, kind == "lat")
            ps.finish(ax, f"{TITLES[test]}, 2 hosts", "message size (bytes)",
                      "latency (us)" if kind == "lat"
                      else "bandwidth (MB/s)", legend=bool(cols))
        png = ps.save(fig, out / f"rma_{kind}.png")
        print(f"plot: {png}")


if __name__ == "__main__":
    main()
