#!/usr/bin/env python3
"""Plot the CSV of 'cxlbench loaded': latency against bandwidth.

One figure, loaded_latency.png: one panel per traffic mix, one curve per
medium (local DRAM, the pool in each coherence mode), bandwidth of the
load threads on x, the pointer chase's latency on y; the idle latency is
the point at 0 MB/s. The look is bench/plot_style.py's.

  .venv/bin/python bench/plot_loaded.py results/loaded.csv [--out results]
"""
from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

import plot_style as ps


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("csv", type=Path)
    p.add_argument("--out", type=Path, default=None,
                   help="directory for loaded_latency.png (default: the "
                   "CSV's directory)")
    a = p.parse_args()
    with a.csv.open(newline="") as f:
        rows = list(csv.DictReader(f))
    need = {"medium", "mix", "load_threads", "delay", "mbps", "latency_ns"}
    if not rows or not need <= set(rows[0]):
        sys.exit(f"plot_loaded: {a.csv} is not a CSV of cxlbench loaded "
                 f"(columns {sorted(need)}); write one with 'cxlbench "
                 f"loaded --csv FILE'")
    mixes = list(dict.fromkeys(r["mix"] for r in rows))
    media = list(dict.fromkeys(r["medium"] for r in rows))
    fig, axes = ps.figure(len(mixes), squeeze=False, sharey=True)
    for ax, mix in zip(axes[0], mixes):
        for i, m in enumerate(media):
            pts = sorted((float(r["mbps"]), float(r["latency_ns"]))
                         for r in rows if r["mix"] == mix and r["medium"] == m)
            if pts:
                ps.line(ax, m, [x for x, _ in pts], [y for _, y in pts],
                        index=i)
        ps.finish(ax, f"{mix} traffic", "load bandwidth (MB/s)", "",
                  legend=False)
    axes[0][0].set_ylabel("pointer-chase latency (ns)")
    axes[0][0].legend()
    fig.suptitle("cxlbench loaded: latency under load, pool next to DRAM")
    out = ps.save(fig, (a.out or a.csv.parent) / "loaded_latency.png")
    print(f"plot_loaded: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
