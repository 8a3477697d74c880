# SPDX-License-Identifier: BSD-3-Clause
"""Paths, limits, the tests of mpi_bench and the configuration of a run."""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = REPO / ".venv" / "bin"
MPICC = VENV_BIN / "mpicc"
MPIEXEC = VENV_BIN / "mpiexec"
DEFAULT_SOURCE = REPO / "bench" / "mpi" / "mpi_bench.c"
DEFAULT_BUILD_DIR = REPO / "build" / "bench-mpi"
DEFAULT_PROVIDER_DIR = REPO / "build" / "src" / "fabric"
CXLRUN = REPO / "tools" / "cxlrun" / "cxlrun"
DEFAULT_OUT_DIR = REPO / "results"
PROVIDER_LIB = "libcxl-fi.so"
CSV_NAME = "mpi_transports.csv"

MiB = 1 << 20
DEFAULT_MAX = 8 * MiB
QUICK_MAX = 1 * MiB
DEFAULT_TIMEOUT = 300.0
KILL_GRACE = 5.0  # seconds between SIGTERM and SIGKILL of a timed-out run


@dataclass(frozen=True)
class TestSpec:
    name: str
    unit: str
    ranks: int | None  # None: --ranks
    title: str
    ylabel: str
    log_y: bool


TESTS = {
    t.name: t
    for t in (
        TestSpec("latency", "us", 2, "Point-to-point latency (ping-pong)",
                 "one-way latency (us)", True),
        TestSpec("bw", "MB/s", 2, "Unidirectional bandwidth",
                 "bandwidth (MB/s)", False),
        TestSpec("bibw", "MB/s", 2, "Bidirectional bandwidth",
                 "bandwidth (MB/s)", False),
        TestSpec("mbw", "MB/s", None, "Multi-pair bandwidth",
                 "aggregate bandwidth (MB/s)", False),
        TestSpec("allreduce", "us", None, "MPI_Allreduce latency",
                 "latency (us)", True),
    )
}


@dataclass(frozen=True)
class Config:
    transports: tuple[str, ...]
    tests: tuple[str, ...]
    ranks: int
    max_bytes: int
    quick: bool
    out_dir: Path
    build_dir: Path
    source: Path
    provider_dir: Path
    cxl_mode: str
    timeout: float
    cxl_stats_per_size: bool
    repeat: int = 1
    best: bool = False  # best of the repetitions per size, not the median
    no_provider_table: bool = False
    summary: bool = False
    without_yield: bool = False
    cost_model: str = "none"  # CXL_COST_MODEL of the cxl runs
    bench_args: tuple[str, ...] = ()  # more mpi_bench options


def parse_size(text: str) -> int:
    """'1048576', '1M', '1MiB', '64K' -> bytes."""
    m = re.fullmatch(r"\s*(\d+)\s*([KMG]?)(?:i?B)?\s*", text, re.I)
    if not m:
        raise argparse.ArgumentTypeError(
            f"invalid size {text!r}: give bytes, optionally with K, M or G "
            "(binary), e.g. 1048576 or 1M")
    value = int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[
        m.group(2).upper()]
    if value < 1:
        raise argparse.ArgumentTypeError("size must be at least 1 byte")
    return value


def parse_choices(text: str, choices: tuple[str, ...], what: str) -> tuple[str, ...]:
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    bad = [n for n in names if n not in choices]
    if bad or not names:
        raise argparse.ArgumentTypeError(
            f"unknown {what} {', '.join(bad) or '(none given)'}: "
            f"choose from {','.join(choices)}")
    return tuple(dict.fromkeys(names))  # drop duplicates, keep order
