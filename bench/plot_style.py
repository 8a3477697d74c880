# SPDX-License-Identifier: BSD-3-Clause
"""The look shared by every plot of bench/: colours and markers per
transport, fonts, figure size, grid, the message-size axis and how a
figure is saved.

    import plot_style as ps
    plt = ps.pyplot()
    fig, ax = ps.figure()
    ps.line(ax, "cxl", sizes, values)
    ps.size_axis(ax, max(sizes))
    ps.finish(ax, "title", "message size (bytes)", "latency (us)")
    ps.save(fig, path)
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Style:
    color: str
    marker: str


# One colour and marker per series name, the same in every figure.
SERIES = {
    # point to point (compare_transports.py)
    "cxl": Style("tab:red", "o"),
    "cxl-coherent": Style("tab:orange", "v"),
    "cxl-hosts": Style("tab:purple", "P"),
    "tcp-hosts": Style("tab:brown", "X"),
    "mpich-shm": Style("tab:blue", "s"),
    "ofi-shm": Style("tab:green", "^"),
    "ofi-tcp": Style("tab:gray", "D"),
    # one-sided across 2 hosts (compare_rma.py): the pool path takes cxl's
    # look, the MPI library's RMA that of the transport it runs over
    "direct": Style("tab:red", "o"),
    "provider": Style("tab:purple", "P"),
    "tcp": Style("tab:brown", "X"),
    "memcpy": Style("tab:gray", "s"),
    # SimGrid platforms (simgrid/project.py)
    "cxl-cmpi": Style("tab:red", "o"),
    "cxl-seed002": Style("tab:orange", "v"),
    "ib-hdr": Style("tab:gray", "D"),
    "tcp-cx6": Style("tab:brown", "X"),
    "pods16-cmpi-ib-hdr": Style("tab:green", "s"),
    "pods16-cmpi-tcp-cx6": Style("tab:olive", "P"),
    "pods16-seed002-ib-hdr": Style("tab:cyan", "^"),
}

# Series without a name of their own (kernels, media, programs): by index.
CYCLE = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple",
         "tab:brown", "tab:gray", "tab:pink", "tab:olive", "tab:cyan")

FIGSIZE = (7, 4.5)  # one panel
PANEL_WIDTH = 6.0   # per panel of a figure with several
DPI = 120
MARKERSIZE = 4
LINEWIDTH = 1.5
REFERENCE = "k"  # published figures and goals drawn for comparison

RC = {
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "legend.fontsize": 8,
    "xtick.labelsize": 9,
    "ytick.labelsize": 9,
}


def pyplot():
    """matplotlib.pyplot, headless, with the shared fonts."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plt.rcParams.update(RC)
    return plt


def figure(ncols: int = 1, **kw):
    """A figure of ncols panels side by side; returns (fig, axes) as
    plt.subplots does."""
    plt = pyplot()
    size = FIGSIZE if ncols == 1 else (PANEL_WIDTH * ncols, FIGSIZE[1])
    return plt.subplots(1, ncols, figsize=size, **kw)


def style(name: str, index: int = 0) -> Style:
    """The style of a named series; an unnamed one takes the index-th
    colour of CYCLE."""
    return SERIES.get(name) or Style(CYCLE[index % len(CYCLE)], "o")


def line(ax, name: str, xs, ys, label: str | None = None, index: int = 0,
         **kw) -> None:
    """One series in its style; kw overrides (e.g. linestyle)."""
    s = style(name, index)
    opts = dict(marker=s.marker, color=s.color, markersize=MARKERSIZE,
                linewidth=LINEWIDTH, label=label or name)
    opts.update(kw)
    ax.plot(list(xs), list(ys), **opts)


def size_label(n: int) -> str:
    """1048576 -> '1M', 65536 -> '64K', 100 -> '100'."""
    for unit, shift in (("M", 20), ("K", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return str(n)


def size_axis(ax, largest: int) -> None:
    """x: log2, the powers of two up to largest, every other one labelled
    (1, 4, 16, ...; K and M suffixes)."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

    powers = [1 << k for k in range(max(int(largest), 1).bit_length())]
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator(powers[::2]))
    ax.xaxis.set_minor_locator(FixedLocator(powers))
    ax.xaxis.set_major_formatter(
        FuncFormatter(lambda x, _: size_label(int(x))))
    ax.xaxis.set_minor_formatter(NullFormatter())


def value_axis(ax, log: bool) -> None:
    """y: log for latencies and times, linear from 0 for rates."""
    if log:
        ax.set_yscale("log")
    else:
        ax.set_ylim(bottom=0)


def finish(ax, title: str, xlabel: str, ylabel: str, legend: bool = True,
           grid_axis: str = "both") -> None:
    """Title, labels, the major grid and the legend."""
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, axis=grid_axis, which="major", alpha=0.4)
    if legend:
        ax.legend()


def save(fig, path: Path) -> Path:
    """Lay out, write at DPI and close."""
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    close(fig)
    return path


def close(fig) -> None:
    """Drop a figure without writing it."""
    import matplotlib.pyplot as plt

    plt.close(fig)
