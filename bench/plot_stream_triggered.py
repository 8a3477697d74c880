#!/usr/bin/env python3
"""Plot the output of bench/mpi/mpi_stream_bench (stream-triggered MPI).

Reads the "RESULT <test> <bytes> <us> us" lines of one or more runs, each
file labelled by its name (e.g. pingpong_coherent.txt, halo_flush.txt),
and draws:

  stream_pingpong.png  one-way latency against message size, one line per
                       way (queued, queued_host, start_wait, isend) and
                       run, log-log;
  stream_halo.png      time per 3D halo exchange against face size,
                       classic against queued, per run.

  .venv/bin/python bench/plot_stream_triggered.py results/pingpong_*.txt \
      results/halo_*.txt [--out results]
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import plot_style as ps

RESULT = re.compile(r"^RESULT (\S+) (\d+) ([\d.]+) us$")
PINGPONG = ("queued", "queued_host", "start_wait", "isend")
HALO = ("halo_classic", "halo_queued")


def read(path: Path) -> dict[str, list[tuple[int, float]]]:
    series: dict[str, list[tuple[int, float]]] = {}
    for line in path.read_text().splitlines():
        m = RESULT.match(line.strip())
        if m:
            series.setdefault(m[1], []).append((int(m[2]), float(m[3])))
    return series


def plot(runs, tests, title, xlabel, out: Path) -> bool:
    fig, ax = ps.figure()
    drawn, n, largest = False, 0, 1
    for label, series in runs:
        for test in tests:
            pts = sorted(series.get(test, []))
            if not pts:
                continue
            ps.line(ax, test, [p[0] for p in pts], [p[1] for p in pts],
                    label=f"{test} ({label})", index=n)
            n += 1
            drawn = True
            largest = max(largest, pts[-1][0])
    if not drawn:
        ps.close(fig)
        return False
    ps.size_axis(ax, largest)
    ps.value_axis(ax, True)
    ps.finish(ax, title, xlabel, "microseconds")
    ps.save(fig, out)
    print(f"wrote {out}")
    return True


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--out", type=Path, default=Path("."))
    args = ap.parse_args()
    runs = []
    for f in args.files:
        if not f.exists():
            print(f"plot_stream_triggered: {f} does not exist; run "
                  "mpi_stream_bench into it first", file=sys.stderr)
            return 1
        runs.append((f.stem, read(f)))
    args.out.mkdir(parents=True, exist_ok=True)
    a = plot(runs, PINGPONG, "ping-pong, one-way latency", "bytes",
             args.out / "stream_pingpong.png")
    b = plot(runs, HALO, "3D halo exchange (6 neighbours)",
             "bytes per face", args.out / "stream_halo.png")
    if not (a or b):
        print("plot_stream_triggered: no RESULT lines in the input",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
