# SPDX-License-Identifier: BSD-3-Clause
"""The goals of the issue, computed from the measured numbers."""

from __future__ import annotations

import os
from dataclasses import dataclass

from .config import TESTS, MiB
from .report import ratio, value_of
from .results import Run


@dataclass(frozen=True)
class Goal:
    text: str
    num: tuple[str, str, int]  # transport, test, size
    den: tuple[str, str, int]
    limit: float
    at_most: bool  # ratio <= limit, else ratio >= limit


GOALS = tuple(
    g for c in ("cxl", "cxl-coherent") for g in (
        Goal(f"8 B latency: {c} <= 1.2x mpich-shm",
             (c, "latency", 8), ("mpich-shm", "latency", 8), 1.2, True),
        Goal(f"8 B latency: {c} <= 0.7x ofi-shm",
             (c, "latency", 8), ("ofi-shm", "latency", 8), 0.7, True),
        Goal(f"8 B latency: {c} >= 5x lower than ofi-tcp",
             ("ofi-tcp", "latency", 8), (c, "latency", 8), 5.0, False),
        Goal(f"1 MiB bandwidth: {c} >= 0.8x mpich-shm",
             (c, "bw", MiB), ("mpich-shm", "bw", MiB), 0.8, False),
    )) + (
    Goal("8 B latency across hosts: cxl-hosts >= 5x lower than tcp-hosts",
         ("tcp-hosts", "latency", 8), ("cxl-hosts", "latency", 8), 5.0,
         False),
    Goal("1 MiB bandwidth: cxl-hosts >= 0.8x mpich-shm",
         ("cxl-hosts", "bw", MiB), ("mpich-shm", "bw", MiB), 0.8, False),
)


# Other processes keeping this many CPUs busy (on average, in one of the
# runs behind a goal) make a missed goal a statement about the machine.
BUSY_CPUS = 0.25


def verdict(met: bool, runs: list[Run]) -> tuple[str, str]:
    """MET, NOT MET, or BUSY when a goal was missed beside other work:
    the label and what to add after the figure."""
    if met:
        return "MET", ""
    busy = max((r.others_cpus for r in runs), default=0.0)
    if busy < BUSY_CPUS:
        return "NOT MET", ""
    return "BUSY", (f"; not judged: other processes kept {busy:.1f} of "
                    f"{os.cpu_count()} CPUs busy during these runs, rerun "
                    "on an idle machine")


def goal_lines(runs: dict[tuple[str, str], Run]) -> list[str]:
    lines = []
    for g in GOALS:
        if any(runs.get((t, te)) is None for t, te, _ in (g.num, g.den)):
            continue  # a transport or test not selected in this run
        values = []
        missing = []
        for transport, test, size in (g.num, g.den):
            run = runs.get((transport, test))
            v = value_of(runs, transport, test, size)
            values.append(v)
            if v is None:
                why = ("not run" if run is None else
                       run.status if not run.ok else f"no {size} B result")
                missing.append(f"{transport} {test} {why}")
        if missing:
            lines.append(f"N/A      {g.text}: {'; '.join(missing)}")
            continue
        r = ratio(values[0], values[1])
        if r is None:
            lines.append(f"N/A      {g.text}: {g.den[0]} measured 0")
            continue
        met = r <= g.limit if g.at_most else r >= g.limit
        label, note = verdict(met, [runs[(t, te)] for t, te, _ in
                                    (g.num, g.den)])
        unit = TESTS[g.num[1]].unit
        (nt, _, _), (dt, _, _) = g.num, g.den
        lines.append(
            f"{label:8} {g.text}: {nt} "
            f"{values[0]:.2f} {unit}, {dt} {values[1]:.2f} {unit}, "
            f"{nt}/{dt} = {r:.2f} (need {'<=' if g.at_most else '>='} "
            f"{g.limit:g}){note}")
    return lines
