# SPDX-License-Identifier: BSD-3-Clause
"""One plot per test: the value against the message size, a line per
transport."""

from __future__ import annotations

from pathlib import Path

import plot_style as ps

from .config import TESTS, Config
from .results import Run


def plot_test(cfg: Config, test: str,
              runs: dict[tuple[str, str], Run]) -> Path | None:
    spec = TESTS[test]
    series = [runs[(t, test)] for t in cfg.transports
              if runs[(t, test)].ok and runs[(t, test)].points]
    if not series:
        return None
    fig, ax = ps.figure()
    for run in series:
        sizes = sorted(run.points)
        label = (f"{run.transport} ({cfg.cxl_mode})"
                 if run.transport in ("cxl", "cxl-hosts") else run.transport)
        ps.line(ax, run.transport, sizes, [run.points[s] for s in sizes],
                label=label)
    ps.size_axis(ax, max(max(run.points) for run in series))
    ps.value_axis(ax, spec.log_y)
    ranks = spec.ranks or cfg.ranks
    ps.finish(ax, f"{spec.title}, {ranks} ranks", "message size (bytes)",
              spec.ylabel)
    return ps.save(fig, cfg.out_dir / f"mpi_{test}.png")
