#!/usr/bin/env python3
"""Plot the CSV of 'cxlbench stream' or 'cxlbench pmem'.

  stream: one grouped bar chart per coherence mode, stream_<mode>.png:
          placements a/b/c on x (DDD .. PPP, then the interleaved I d:p),
          one bar per kernel (best MB/s);
  pmem:   one chart, stream_pmem.png: kernels on x, one bar per set of
          arrays, volatile (plain) next to persistent (hatched).

The look (figure size, fonts, colours, grid) is bench/plot_style.py's.

  .venv/bin/python bench/plot_stream.py results/stream.csv [--out results]
"""
from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

import plot_style as ps

KERNELS = ("Copy", "Scale", "Add", "Triad")


def read_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    need = {"mode", "placement", "persist", "kernel", "best_mb_s"}
    if not rows or not need <= set(rows[0]):
        sys.exit(f"plot_stream: {path} is not a CSV of cxlbench stream or "
                 f"pmem (columns {sorted(need)} expected); write one with "
                 f"'cxlbench stream --csv FILE'")
    return rows


def ordered(values):
    """Unique values in the order they first appear."""
    return list(dict.fromkeys(values))


def plot_stream(rows: list[dict[str, str]], out: Path) -> list[Path]:
    paths = []
    for mode in ordered(r["mode"] for r in rows):
        mine = [r for r in rows if r["mode"] == mode]
        places = ordered(r["placement"] for r in mine)
        rate = {(r["placement"], r["kernel"]): float(r["best_mb_s"])
                for r in mine}
        fig, ax = ps.figure()
        width = 0.8 / len(KERNELS)
        for i, k in enumerate(KERNELS):
            xs = [p + (i - 1.5) * width for p in range(len(places))]
            ax.bar(xs, [rate.get((p, k), 0) for p in places], width,
                   color=ps.style(k, i).color, label=k)
        ax.set_xticks(range(len(places)))
        ax.set_xticklabels(places, rotation=45)
        ax.set_ylim(bottom=0)
        ps.finish(ax, f"STREAM placements, mode {mode}",
                  "a/b/c placement (D DRAM, P pool; I = all three "
                  "interleaved DRAM:pool)", "best MB/s", grid_axis="y")
        paths.append(ps.save(fig, out / f"stream_{mode.replace('/', '-')}.png"))
    return paths


def plot_pmem(rows: list[dict[str, str]], out: Path) -> list[Path]:
    def label(r):
        return (r["placement"] if r["placement"] == r["mode"]
                else f"{r['placement']} {r['mode']}")

    series = ordered((label(r), r["persist"]) for r in rows)
    rate = {(label(r), r["persist"], r["kernel"]): float(r["best_mb_s"])
            for r in rows}
    arrays = ordered(s[0] for s in series)
    fig, ax = ps.figure()
    width = 0.8 / len(series)
    for i, (name, pers) in enumerate(series):
        xs = [k + (i - (len(series) - 1) / 2) * width
              for k in range(len(KERNELS))]
        ax.bar(xs, [rate.get((name, pers, k), 0) for k in KERNELS], width,
               color=ps.style(name, arrays.index(name)).color,
               hatch="//" if pers == "1" else None, edgecolor="white",
               label=f"{name}, {'persistent' if pers == '1' else 'volatile'}")
    ax.set_xticks(range(len(KERNELS)))
    ax.set_xticklabels(KERNELS)
    ax.set_ylim(bottom=0)
    ps.finish(ax, "STREAM-PMem: volatile and persistent arrays", "kernel",
              "best MB/s", grid_axis="y")
    return [ps.save(fig, out / "stream_pmem.png")]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", type=Path, help="CSV of cxlbench stream or pmem")
    ap.add_argument("--out", type=Path, default=Path("results"),
                    help="directory for the PNG files (default: results)")
    args = ap.parse_args(argv)
    rows = read_rows(args.csv)
    args.out.mkdir(parents=True, exist_ok=True)
    pmem = any(r["persist"] == "1" for r in rows)
    for p in (plot_pmem if pmem else plot_stream)(rows, args.out):
        print(f"plot_stream: wrote {p}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
