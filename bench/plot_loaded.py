#!/usr/bin/env python3
"""Plot the CSV of 'cxlbench loaded': latency against bandwidth.

One figure, loaded_latency.png: one panel per traffic mix, one curve per
medium (local DRAM, the pool in each coherence mode), bandwidth of the
load threads on x, the pointer chase's latency on y; the idle latency is
the point at 0 MB/s. The look is that of bench/compare_transports.py.

  .venv/bin/python bench/plot_loaded.py results/loaded.csv [--out results]
"""
from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

COLORS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple")


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
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    mixes = list(dict.fromkeys(r["mix"] for r in rows))
    media = list(dict.fromkeys(r["medium"] for r in rows))
    fig, axes = plt.subplots(1, len(mixes), figsize=(max(7.0, 4.2 * len(mixes)), 4.5),
                             squeeze=False, sharey=True)
    for ax, mix in zip(axes[0], mixes):
        for i, m in enumerate(media):
            pts = sorted((float(r["mbps"]), float(r["latency_ns"]))
                         for r in rows if r["mix"] == mix and r["medium"] == m)
            if pts:
                ax.plot([x for x, _ in pts], [y for _, y in pts], "o-",
                        color=COLORS[i % len(COLORS)], label=m, markersize=4)
        ax.set_title(f"{mix} traffic")
        ax.set_xlabel("load bandwidth (MB/s)")
        ax.grid(True, alpha=0.3)
    axes[0][0].set_ylabel("pointer-chase latency (ns)")
    axes[0][0].legend(fontsize=8)
    fig.suptitle("cxlbench loaded: latency under load, pool next to DRAM")
    fig.tight_layout()
    out = (a.out or a.csv.parent) / "loaded_latency.png"
    fig.savefig(out, dpi=110)
    print(f"plot_loaded: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
