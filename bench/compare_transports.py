#!/usr/bin/env python3
"""Compare MPI transports on this machine, side by side, in one run.

Builds bench/mpi/mpi_bench.c with the project's MPICH, then runs each
selected test once per transport (one mpiexec invocation each), or
--repeat times, interleaved, keeping the median of each size:

  cxl           the cxl libfabric provider over an emulated CXL pool, in
                the software-coherence mode of --cxl-mode (flush: every
                write is flushed, every read invalidated, as on a pool
                without hardware coherence)
  cxl-coherent  the same with CXL_COHERENCE=coherent (a hardware-coherent
                pool: no flushes or invalidations)
  mpich-shm  MPICH's own intra-node shared memory (ch4 POSIX shm)
  ofi-shm    libfabric's shm provider
  ofi-tcp    libfabric's tcp provider over loopback
  cxl-hosts  the cxl provider between 2 emulated hosts (tools/cxlrun:
             network and UTS namespaces, distinct hostnames; ranks split
             evenly), in the mode of --cxl-mode
  tcp-hosts  libfabric's tcp provider between the same 2 hosts, over
             their veth links

Prints one table per test (and the goals of the issue computed from the
measured numbers), and writes results/mpi_transports.csv and one plot per
test, results/mpi_<test>.png. Progress goes to stderr.

--without-yield is a diagnostic: every rank runs with a no-op sched_yield()
preloaded, to measure what MPICH's blocking wait loop, which yields after
every progress call, adds to each transport. No one should run MPI so; the
goals are not evaluated then.

Every invocation runs with MPIR_CVAR_DEBUG_SUMMARY=1; a run whose output
lacks the expected "libfabric provider:" line is marked invalid. FI_*,
MPIR_CVAR_*, MPIR_PARAM_*, MPICH_* and CXL_* variables of the calling
environment are not passed on, so that they cannot change which transport
a run uses.
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
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

# Variables of the calling environment that could change the transport.
STRIPPED_PREFIXES = ("FI_", "MPIR_CVAR_", "MPIR_PARAM_", "MPICH_", "CXL_")


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
class TransportSpec:
    name: str
    provider: str  # expected name on the "libfabric provider:" line
    env: tuple[tuple[str, str], ...]  # fixed variables (cxl adds its own)
    marker: str
    color: str
    hosts: int = 0  # > 0: launched by tools/cxlrun on that many hosts


TRANSPORTS = {
    t.name: t
    for t in (
        TransportSpec(
            "cxl", "cxl",
            (("FI_PROVIDER", "cxl"), ("MPIR_CVAR_CH4_NETMOD", "ofi"),
             ("MPIR_CVAR_NOLOCAL", "1"), ("FI_CXL_STATS", "1")),
            "o", "tab:red"),
        # across emulated hosts (network + UTS namespaces, tools/cxlrun)
        TransportSpec("cxl-hosts", "cxl", (), "P", "tab:purple", hosts=2),
        TransportSpec("tcp-hosts", "tcp", (), "X", "tab:brown", hosts=2),
        TransportSpec(
            "cxl-coherent", "cxl",
            (("FI_PROVIDER", "cxl"), ("MPIR_CVAR_CH4_NETMOD", "ofi"),
             ("MPIR_CVAR_NOLOCAL", "1"), ("FI_CXL_STATS", "1")),
            "v", "tab:orange"),
        # NOLOCAL unset: ch4 POSIX shm carries the same-host traffic, the
        # tcp netmod only wires up.
        TransportSpec(
            "mpich-shm", "tcp",
            (("MPIR_CVAR_CH4_NETMOD", "ofi"), ("FI_PROVIDER", "tcp"),
             ("FI_TCP_IFACE", "lo")),
            "s", "tab:blue"),
        TransportSpec(
            "ofi-shm", "shm",
            (("FI_PROVIDER", "shm"), ("MPIR_CVAR_CH4_NETMOD", "ofi"),
             ("MPIR_CVAR_NOLOCAL", "1")),
            "^", "tab:green"),
        TransportSpec(
            "ofi-tcp", "tcp",
            (("FI_PROVIDER", "tcp"), ("FI_TCP_IFACE", "lo"),
             ("MPIR_CVAR_CH4_NETMOD", "ofi"), ("MPIR_CVAR_NOLOCAL", "1")),
            "D", "tab:gray"),
    )
}

CXL_MODES = ("coherent", "flush", "emulated")
# CXL_COST_MODEL presets (src/shm/costmodel.c, docs/costmodel.md)
COST_MODELS = ("none", "cmpi", "cxl-a", "cxl-b")
CXL_POOL_SIZE = "512M"
CXL_ARENA_CAPACITY = "8192"

# Ratio columns per test: (numerator, denominator).
RATIOS = {
    "latency": (("cxl", "mpich-shm"), ("cxl", "ofi-shm"), ("ofi-tcp", "cxl"),
                ("cxl-coherent", "mpich-shm"), ("cxl-coherent", "ofi-shm"),
                ("tcp-hosts", "cxl-hosts"), ("cxl-hosts", "mpich-shm")),
    "bw": (("cxl", "mpich-shm"), ("cxl-coherent", "mpich-shm"),
           ("cxl-hosts", "tcp-hosts"), ("cxl-hosts", "mpich-shm")),
}

HOST_RE = re.compile(r"^HOST\s+(\d+)\s+(\d+)\s+(\S+)\s*$", re.M)
RESULT_RE = re.compile(r"^RESULT\s+(\S+)\s+(\d+)\s+(\S+)\s+(\S+)\s*$", re.M)
PROVIDER_RE = re.compile(r"^libfabric provider:\s*(\S+).*$", re.M)
STATS_RE = re.compile(
    r"cxl-stats: sent (\d+) recv (\d+) bytes (\d+) flush_lines (\d+) "
    r"inval_lines (\d+) fences (\d+) nt_stores (\d+) nt_loads (\d+) "
    r"nt_lines (\d+).* polls (\d+) poll_inval_lines (\d+) poll_fences (\d+)"
    r"(?:.*? cost_ns (\d+))?")

# mpi_bench's counters of one size's timed rounds (bench/mpi/coh_probe.h):
# COH <test> <size> <messages> and the 11 counters of cxl_coh_counters
COH_RE = re.compile(r"^COH\s+(\S+)\s+(\d+)\s+(\d+)((?:\s+\d+){11})\s*$", re.M)

HYDRA_REPORT_RE = re.compile(r"BAD TERMINATION|EXIT CODE:|EXIT STRING:")

CSV_COLUMNS = ("test", "transport", "size_bytes", "value", "unit",
               "flush_lines_per_msg", "fences_per_msg", "inval_lines_per_msg")


# ---- data ---------------------------------------------------------------

@dataclass(frozen=True)
class CxlStats:
    """cxl-stats counters summed over the processes of one run. The
    invalidations and fences are those of the messages: the provider
    counts those of its polls (progress calls that found nothing, whose
    number depends on how long a process waits) apart, in polls,
    poll_inval_lines and poll_fences, and they are left out here."""
    processes: int
    sent: int
    recv: int
    bytes: int
    flush_lines: int
    inval_lines: int
    fences: int
    nt_stores: int = 0
    nt_loads: int = 0
    nt_lines: int = 0
    cost_ns: int = 0  # time charged by CXL_COST_MODEL
    polls: int = 0
    poll_inval_lines: int = 0
    poll_fences: int = 0

    _COUNTS = ("sent", "recv", "bytes", "flush_lines", "inval_lines",
               "fences", "nt_stores", "nt_loads", "nt_lines", "cost_ns",
               "polls", "poll_inval_lines", "poll_fences")

    @staticmethod
    def from_line(f: tuple[str, ...]) -> CxlStats:
        """One process's line (STATS_RE's groups; cost_ns may be absent)."""
        v = [int(x or 0) for x in f]
        (sent, recv, nbytes, flush, inval, fences, nt_st, nt_ld, nt_ln,
         polls, pinval, pfences, cost) = v
        return CxlStats(1, sent, recv, nbytes, flush, inval - pinval,
                        fences - pfences, nt_st, nt_ld, nt_ln, cost, polls,
                        pinval, pfences)

    def plus(self, other: CxlStats) -> CxlStats:
        return CxlStats(self.processes + other.processes,
                        *(getattr(self, n) + getattr(other, n)
                          for n in self._COUNTS))

    def minus(self, other: CxlStats) -> CxlStats:
        """Counters of the work self did beyond other (a run with one more
        message size than other). Polls are left out of the message
        counts; a count that still comes out negative gives no
        per-message figure."""
        return CxlStats(self.processes, *(getattr(self, n) - getattr(other, n)
                                          for n in self._COUNTS))

    @staticmethod
    def _per(count: int, msgs: int) -> float | None:
        return count / msgs if msgs > 0 and count >= 0 else None

    @property
    def flush_per_msg(self) -> float | None:
        return self._per(self.flush_lines, self.sent)

    @property
    def fences_per_msg(self) -> float | None:
        return self._per(self.fences, self.sent + self.recv)

    @property
    def inval_per_msg(self) -> float | None:
        return self._per(self.inval_lines, self.recv)


@dataclass
class Run:
    """One mpiexec invocation: one test over one transport."""
    transport: str
    test: str
    ranks: int
    status: str = "not run"  # ok | failed | invalid
    reason: str = ""
    provider_line: str = ""
    elapsed: float = 0.0
    points: dict[int, float] = field(default_factory=dict)  # size -> value
    unit: str = ""
    stats: CxlStats | None = None
    stats_note: str = ""
    hosts: dict[int, str] = field(default_factory=dict)  # rank -> host
    # per size: from mpi_bench's COH lines, else --cxl-stats-per-size
    size_stats: dict[int, CxlStats] | None = None
    size_stats_how: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def stats_for(self, size: int) -> CxlStats | None:
        """Counters to report for one size: that size's own, when they
        were measured, else those of the whole run."""
        if self.size_stats is not None:
            return self.size_stats.get(size)
        return self.stats


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
    no_provider_table: bool = False
    summary: bool = False
    without_yield: bool = False
    cost_model: str = "none"  # CXL_COST_MODEL of the cxl runs
    bench_args: tuple[str, ...] = ()  # more mpi_bench options


# ---- command line ---------------------------------------------------------

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


def parse_args(argv: list[str] | None) -> Config:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Exit status: 0 if every run was valid, 1 if any run failed "
               "or was invalid, 2 on a usage or setup error.")
    p.add_argument(
        "--transports", default=",".join(TRANSPORTS),
        type=lambda s: parse_choices(s, tuple(TRANSPORTS), "transport"),
        help="comma-separated transports to compare (default: %(default)s)")
    p.add_argument(
        "--tests", default=",".join(TESTS),
        type=lambda s: parse_choices(s, tuple(TESTS), "test"),
        help="comma-separated tests of mpi_bench to run (default: "
             "%(default)s)")
    p.add_argument(
        "--ranks", type=int, default=4,
        help="ranks for mbw (n/2 pairs; must be even) and allreduce; "
             "latency, bw and bibw always use 2 (default: %(default)s)")
    p.add_argument(
        "--max", type=parse_size, default=None, metavar="BYTES",
        help="largest message size (K/M/G suffixes allowed); default "
             f"{DEFAULT_MAX} ({QUICK_MAX} with --quick)")
    p.add_argument(
        "--quick", action="store_true",
        help="pass --quick to mpi_bench (fewer iterations) and limit "
             f"--max to {QUICK_MAX}")
    p.add_argument(
        "--out", type=Path, default=DEFAULT_OUT_DIR, metavar="DIR",
        help=f"directory for {CSV_NAME} and the mpi_<test>.png plots "
             "(default: %(default)s)")
    p.add_argument(
        "--build-dir", type=Path, default=DEFAULT_BUILD_DIR, metavar="DIR",
        help="directory where mpi_bench is built (default: %(default)s)")
    p.add_argument(
        "--source", type=Path, default=DEFAULT_SOURCE, metavar="FILE",
        help="the MPI benchmark program to build and run (default: "
             "%(default)s)")
    p.add_argument(
        "--provider-dir", type=Path, default=DEFAULT_PROVIDER_DIR,
        metavar="DIR",
        help=f"directory containing {PROVIDER_LIB} (FI_PROVIDER_PATH of the "
             "cxl runs; default: %(default)s)")
    p.add_argument(
        "--cxl-mode", choices=CXL_MODES, default="flush",
        help="CXL_COHERENCE of the cxl runs; cxl-coherent always runs "
             "coherent (default: %(default)s)")
    p.add_argument(
        "--cost-model", choices=COST_MODELS, default="none",
        help="CXL_COST_MODEL of the cxl, cxl-coherent and provider-table "
             "runs (not cxl-hosts, which tools/cxlrun configures): charge a "
             "CXL device's costs for every coherence operation; the "
             "coherent mode is never charged (docs/costmodel.md; default: "
             "%(default)s)")
    p.add_argument(
        "--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
        help="time limit of each mpiexec invocation; a run that exceeds it "
             "is killed and reported as failed (default: %(default)s)")
    p.add_argument(
        "--cxl-stats-per-size", action="store_true",
        help="give the cxl coherence columns of the latency test per message "
             "size: rerun cxl latency with --max 0, 1, 2, 4, ... and take "
             "differences (one extra short run per size). Without it they "
             "are averages over the whole run, which the largest messages "
             "dominate")
    p.add_argument(
        "--repeat", type=int, default=1, metavar="N",
        help="run every test over every transport N times, interleaved, and "
             "report the median of each size (default: %(default)s)")
    p.add_argument(
        "--no-provider-table", action="store_true",
        help="skip the table of provider latency without MPI (bench/"
             "fi_pingpong: cxl, cxl-coherent and libfabric shm, under MPICH's "
             "libfabric core and shm under Debian's too), which the "
             "latency test otherwise adds")
    p.add_argument(
        "--without-yield", action="store_true",
        help="diagnostic: preload a no-op sched_yield() into every rank, "
             "to measure what MPICH's wait loop (a sched_yield after every "
             "progress call) adds to each transport; goals are not "
             "evaluated")
    p.add_argument(
        "--summary", action="store_true",
        help="with the latency and bw tests: one table with both per "
             "message size (and the cxl coherence columns) instead of one "
             "table per test")
    a = p.parse_args(argv)

    if a.repeat < 1:
        p.error("--repeat must be at least 1")
    if a.ranks < 2:
        p.error("--ranks must be at least 2")
    if "mbw" in a.tests and a.ranks % 2:
        p.error(f"--ranks {a.ranks}: mbw runs n/2 pairs, give an even number")
    if a.timeout <= 0:
        p.error("--timeout must be positive")
    max_bytes = a.max if a.max is not None else DEFAULT_MAX
    if a.quick:
        max_bytes = min(max_bytes, QUICK_MAX)
    return Config(
        transports=a.transports, tests=a.tests, ranks=a.ranks,
        max_bytes=max_bytes, quick=a.quick, out_dir=a.out.resolve(),
        build_dir=a.build_dir.resolve(), source=a.source.resolve(),
        provider_dir=a.provider_dir.resolve(), cxl_mode=a.cxl_mode,
        timeout=a.timeout, cxl_stats_per_size=a.cxl_stats_per_size,
        repeat=a.repeat, no_provider_table=a.no_provider_table,
        summary=a.summary, without_yield=a.without_yield,
        cost_model=a.cost_model)


# ---- setup ----------------------------------------------------------------

def log(msg: str) -> None:
    print(f"compare_transports: {msg}", file=sys.stderr, flush=True)


def check_setup(cfg: Config) -> list[str]:
    """Problems that make the whole run pointless, each with its fix."""
    problems = []
    for tool in (MPICC, MPIEXEC):
        if not os.access(tool, os.X_OK):
            problems.append(f"{tool.name} not found at {tool}: run "
                            "scripts/setup.sh (installs MPICH into .venv)")
    if not cfg.source.is_file():
        problems.append(f"benchmark source {cfg.source} not found: it is "
                        "bench/mpi/mpi_bench.c of this repository, or pass "
                        "--source")
    if importlib.util.find_spec("matplotlib") is None:
        problems.append(f"matplotlib is not installed for {sys.executable}: "
                        "run scripts/setup.sh and use .venv/bin/python")
    return problems


def cxl_problem(cfg: Config) -> str | None:
    lib = cfg.provider_dir / PROVIDER_LIB
    if not lib.is_file():
        return (f"{lib} not found: build the provider (cmake -S . -B build "
                "-G Ninja && ninja -C build) or pass --provider-dir")
    if not Path("/dev/shm").is_dir():
        return "/dev/shm is missing: the cxl runs put their pool there"
    return None


def build_bench(cfg: Config) -> Path:
    """Compile mpi_bench if missing or older than its source."""
    binary = cfg.build_dir / "mpi_bench"
    sources = [cfg.source] + [h for h in cfg.source.parent.glob("*.h")]
    newest = max(f.stat().st_mtime for f in sources)
    if binary.exists() and binary.stat().st_mtime >= newest:
        log(f"{binary} is up to date")
        return binary
    cmd = [str(MPICC), "-O2", "-o", str(binary), str(cfg.source)]
    log("building: " + " ".join(cmd))
    compile_or_exit(cmd, str(cfg.source), "fix the errors above")
    return binary


def compile_or_exit(cmd: list[str], what: str, fix: str) -> None:
    """Run a compiler command; on failure show its output and exit with
    what failed and how to fix it."""
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode:
        sys.stderr.write(proc.stdout + proc.stderr)
        raise SystemExit(f"compare_transports: building {what} failed "
                         f"({Path(cmd[0]).name} exit {proc.returncode}); "
                         f"{fix}")


def prepend_path(env: dict[str, str], key: str, path: Path) -> None:
    """Put path first in the search-path variable key of env."""
    env[key] = os.pathsep.join(p for p in (str(path), env.get(key)) if p)


NOYIELD_SOURCE = "int sched_yield(void) { return 0; }\n"


def build_noyield(cfg: Config) -> Path:
    """The --without-yield shim: a shared object whose sched_yield does
    nothing, for LD_PRELOAD."""
    src = cfg.build_dir / "noyield.c"
    lib = cfg.build_dir / "noyield.so"
    src.write_text(NOYIELD_SOURCE)
    cmd = ["cc", "-shared", "-fPIC", "-O2", "-o", str(lib), str(src)]
    compile_or_exit(cmd, "the --without-yield shim",
                    "install a C compiler (scripts/setup.sh) or drop "
                    "--without-yield")
    return lib


def base_environment() -> tuple[dict[str, str], list[str]]:
    """The caller's environment without variables that pick a transport."""
    env, dropped = {}, []
    for key, value in os.environ.items():
        if key.startswith(STRIPPED_PREFIXES):
            dropped.append(key)
        else:
            env[key] = value
    return env, sorted(dropped)


def is_cxl(transport: str) -> bool:
    return TRANSPORTS[transport].provider == "cxl"


def cxl_mode_of(cfg: Config, transport: str) -> str:
    return "coherent" if transport == "cxl-coherent" else cfg.cxl_mode


def run_environment(cfg: Config, spec: TransportSpec, base: dict[str, str],
                    pool_dir: Path | None) -> dict[str, str]:
    env = dict(base)
    env.update(spec.env)
    env["MPIR_CVAR_DEBUG_SUMMARY"] = "1"
    if spec.provider == "cxl":
        assert pool_dir is not None
        env.update(cxl_env(cfg, pool_dir, cxl_mode_of(cfg, spec.name)))
    return env


def cxl_env(cfg: Config, pool_dir: Path, mode: str) -> dict[str, str]:
    """The provider's path and a private pool in pool_dir."""
    env = {
        "FI_PROVIDER_PATH": str(cfg.provider_dir),
        "CXL_POOL": str(pool_dir / "pool"),
        "CXL_RUNDIR": str(pool_dir),
        "CXL_POOL_SIZE": CXL_POOL_SIZE,
        "CXL_ARENA_CAPACITY": CXL_ARENA_CAPACITY,
        "CXL_JOB": f"bench-{os.getpid()}",
        "CXL_COHERENCE": mode,
    }
    if cfg.cost_model != "none":
        env["CXL_COST_MODEL"] = cfg.cost_model
    return env


# ---- one run ----------------------------------------------------------------

def execute(cmd: list[str], env: dict[str, str],
            timeout: float) -> tuple[int | None, str, str]:
    """Run cmd in its own session; on timeout kill that session.

    Returns (exit status or None on timeout, stdout, stderr)."""
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            errors="replace", start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
        return proc.returncode, out, err
    except subprocess.TimeoutExpired:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(proc.pid, sig)  # the session started above
            except ProcessLookupError:
                break
            try:
                out, err = proc.communicate(timeout=KILL_GRACE)
                break
            except subprocess.TimeoutExpired:
                continue
        else:
            out, err = proc.communicate()
        return None, out or "", err or ""


def parse_results(run: Run, text: str) -> list[str]:
    """Fill run.points from RESULT lines; return warnings."""
    warnings = []
    expected_unit = TESTS[run.test].unit
    for name, size, value, unit in RESULT_RE.findall(text):
        if name != run.test:
            warnings.append(f"ignored a RESULT line of test {name!r}")
            continue
        try:
            number = float(value)
        except ValueError:
            warnings.append(f"ignored RESULT value {value!r} (not a number)")
            continue
        if unit != expected_unit:
            warnings.append(f"size {size}: unit {unit!r}, expected "
                            f"{expected_unit!r}")
        run.unit = unit
        run.points[int(size)] = number
    return warnings


def parse_stats(text: str, ranks: int) -> tuple[CxlStats | None, str]:
    lines = STATS_RE.findall(text)
    if not lines:
        return None, ("no 'cxl-stats:' line in the output (provider built "
                      "without FI_CXL_STATS support?)")
    if len(lines) != ranks:
        return None, (f"{len(lines)} 'cxl-stats:' lines for {ranks} "
                      "processes: sums would be partial")
    total = CxlStats.from_line(lines[0])
    for line in lines[1:]:
        total = total.plus(CxlStats.from_line(line))
    return total, ""


def parse_coh(text: str, ranks: int) -> dict[int, CxlStats] | None:
    """Per-size counters from mpi_bench's COH lines (all ranks summed over
    one size's rounds; each message is sent once and received once)."""
    out = {}
    for _test, size, msgs, counts in COH_RE.findall(text):
        (flush, inval, fences, nt_st, nt_ld, nt_ln, polls, pinval, pfences,
         _pntld, cost) = (int(x) for x in counts.split())
        m = int(msgs)
        out[int(size)] = CxlStats(
            ranks, m, m, m * int(size), flush, inval - pinval,
            fences - pfences, nt_st, nt_ld, nt_ln, cost, polls, pinval,
            pfences)
    return out or None


def invoke(cfg: Config, binary: Path, transport: str, test: str,
           max_bytes: int, base_env: dict[str, str]
           ) -> tuple[int | None, str, str, float]:
    """One mpiexec invocation; a cxl run gets a fresh private pool.

    Returns (exit status or None on timeout, stdout, stderr, seconds)."""
    ranks = TESTS[test].ranks or cfg.ranks
    spec = TRANSPORTS[transport]
    prog = [str(binary), test, "--max", str(max_bytes)] + (
        ["--quick"] if cfg.quick else []) + list(cfg.bench_args)
    cmd = [str(MPIEXEC), "-n", str(ranks)] + prog
    if spec.hosts:  # tools/cxlrun makes the hosts, the pool and the env
        cmd = [str(CXLRUN), "-t", spec.provider, "-H", str(spec.hosts),
               "--ppn", str(-(-ranks // spec.hosts)), "-n", str(ranks),
               "--coherence", cfg.cxl_mode,
               "--provider-dir", str(cfg.provider_dir)] + (
                   ["--stats"] if spec.provider == "cxl" else []) + [
                   "--"] + prog
        env = dict(base_env)
        env["MPIR_CVAR_DEBUG_SUMMARY"] = "1"
        start = time.monotonic()
        rc, out, err = execute(cmd, env, cfg.timeout)
        return rc, out, err, time.monotonic() - start
    pool_dir = None
    if is_cxl(transport):
        pool_dir = Path(tempfile.mkdtemp(prefix="cxlmpi-bench-",
                                         dir="/dev/shm"))
    try:
        env = run_environment(cfg, TRANSPORTS[transport], base_env, pool_dir)
        start = time.monotonic()
        rc, out, err = execute(cmd, env, cfg.timeout)
        return rc, out, err, time.monotonic() - start
    finally:
        if pool_dir is not None:
            shutil.rmtree(pool_dir, ignore_errors=True)


def provider_problem(transport: str, providers: list[str]) -> str | None:
    """Why the provider lines do not show the intended transport, if so."""
    want = TRANSPORTS[transport].provider
    if not providers:
        return ("no 'libfabric provider:' line in the MPIR_CVAR_DEBUG_SUMMARY"
                "=1 output: cannot tell which transport ran")
    if any(want not in p.split(";") for p in providers):
        return (f"expected libfabric provider {want}, the run used "
                f"{', '.join(sorted(set(providers)))}")
    return None


def failure_tail(out: str, err: str, lines: int = 12) -> str:
    """What explains a failure: the last stderr lines, and mpiexec's report
    of a crashed rank (hydra prints that to stdout)."""
    kept = [ln for ln in err.strip().splitlines() if ln.strip()][-lines:]
    kept += [ln.strip("= ") for ln in out.splitlines()
             if HYDRA_REPORT_RE.search(ln)]
    return "\n    ".join(kept)


def run_one(cfg: Config, binary: Path, transport: str, test: str,
            base_env: dict[str, str]) -> Run:
    ranks = TESTS[test].ranks or cfg.ranks
    run = Run(transport, test, ranks)
    rc, out, err, run.elapsed = invoke(cfg, binary, transport, test,
                                       cfg.max_bytes, base_env)
    text = out + "\n" + err
    for w in parse_results(run, out):
        log(f"{transport} {test}: {w}")
    run.hosts = {int(r): h for r, _, h in HOST_RE.findall(out)}
    providers = PROVIDER_RE.findall(text)
    match = PROVIDER_RE.search(text)
    run.provider_line = match.group(0).strip() if match else ""
    if is_cxl(transport):
        run.stats, run.stats_note = parse_stats(text, ranks)
        run.size_stats = parse_coh(out, ranks)
        if run.size_stats is not None:
            run.size_stats_how = "coh"

    partial = (f" after {len(run.points)} RESULT lines (last size "
               f"{max(run.points)})" if run.points else "")
    if rc is None:
        run.status = "failed"
        run.reason = f"timed out after {cfg.timeout:g} s{partial}"
    elif rc != 0:
        run.status, run.reason = "failed", f"mpiexec exit status {rc}{partial}"
    elif not run.points:
        run.status, run.reason = "failed", "no RESULT lines in the output"
    else:
        problem = provider_problem(transport, providers)
        run.status, run.reason = ("invalid", problem) if problem else ("ok", "")
    if run.status == "failed":
        tail = failure_tail(out, err)
        if tail:
            run.reason += "; last output lines:\n    " + tail
    return run


def cxl_stats_per_size(cfg: Config, binary: Path, run: Run,
                       base_env: dict[str, str]) -> dict[int, CxlStats]:
    """cxl's coherence counters of each message size of run, by difference.

    mpi_bench's iteration count depends only on the size, so a run with
    --max S does the work of the run with the next smaller --max plus the
    messages of size S; the first size is measured against --max 0 (MPI
    start-up and shutdown only). One extra invocation per size."""
    sizes = sorted(run.points)
    totals: dict[int, CxlStats | None] = {}
    for i, max_bytes in enumerate([0] + sizes):
        log(f"  cxl {run.test} counters [{i + 1}/{len(sizes) + 1}]: "
            f"--max {max_bytes}")
        rc, out, err, _ = invoke(cfg, binary, run.transport, run.test, max_bytes,
                                 base_env)
        text = out + "\n" + err
        stats, note = parse_stats(text, run.ranks)
        problem = provider_problem(run.transport, PROVIDER_RE.findall(text))
        if rc != 0 or problem or stats is None:
            why = ("timed out" if rc is None else f"exit status {rc}" if rc
                   else problem or note)
            log(f"  --max {max_bytes}: no counters ({why})")
            stats = None
        totals[max_bytes] = stats
    per_size = {}
    for prev, size in zip([0] + sizes, sizes):
        a, b = totals[size], totals[prev]
        if a and b:
            per_size[size] = a.minus(b)
    return per_size


# ---- reporting ----------------------------------------------------------------

def fmt(value: float | None, digits: int = 2) -> str:
    return "" if value is None else f"{value:.{digits}f}"


def fmt_size(n: int) -> str:
    for unit, shift in (("M", 20), ("K", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return str(n)


def ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b == 0:
        return None
    return a / b


def value_of(runs: dict[tuple[str, str], Run], transport: str, test: str,
             size: int) -> float | None:
    run = runs.get((transport, test))
    return run.points.get(size) if run and run.ok else None


def print_table(headers: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
              for i, h in enumerate(headers)]
    print("  ".join(h.rjust(w) for h, w in zip(headers, widths)))
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print("  ".join(c.rjust(w) for c, w in zip(r, widths)).rstrip())


def print_run_summary(cfg: Config, runs: dict[tuple[str, str], Run]) -> None:
    print(f"mpi_bench runs (sizes up to {fmt_size(cfg.max_bytes)} bytes"
          f"{', quick' if cfg.quick else ''}; cxl coherence {cfg.cxl_mode}):")
    rows = []
    for (transport, test), run in runs.items():
        rows.append([test, transport, str(run.ranks), run.status,
                     f"{run.elapsed:.1f}", run.provider_line or "(none)"])
    print_table(["test", "transport", "ranks", "status", "secs",
                 "provider line"], rows)
    if "mpich-shm" in cfg.transports:
        print("note: mpich-shm reports its netmod provider (tcp); the "
              "same-host traffic goes through MPICH's POSIX shm, which the "
              "debug summary does not show")
    for run in runs.values():
        if not run.ok:
            print(f"{run.status.upper()}: {run.transport} {run.test}: "
                  f"{run.reason}")
    print()


def print_test_table(cfg: Config, test: str,
                     runs: dict[tuple[str, str], Run]) -> None:
    spec = TESTS[test]
    ranks = spec.ranks or cfg.ranks
    better = "lower" if spec.unit == "us" else "higher"
    print(f"== {test}: {spec.title}, {ranks} ranks, {spec.unit} "
          f"({better} is better)")
    sizes = sorted({s for t in cfg.transports
                    for s in runs[(t, test)].points if runs[(t, test)].ok})
    headers = ["size"] + list(cfg.transports)
    cxl_t = next((t for t in cfg.transports
                  if is_cxl(t) and t != "cxl-coherent"), None)
    cxl_run = runs.get((cxl_t, test)) if cxl_t else None
    show_stats = test == "latency" and cxl_run is not None
    if show_stats:
        headers += [f"{cxl_t} flush/msg", f"{cxl_t} fences/msg"]
    ratios = [(a, b) for a, b in RATIOS.get(test, ())
              if a in cfg.transports and b in cfg.transports]
    headers += [f"{a}/{b}" for a, b in ratios]

    rows = []
    for size in sizes:
        row = [str(size)]
        for t in cfg.transports:
            run = runs[(t, test)]
            row.append(fmt(run.points.get(size)) if run.ok
                       else run.status.upper())
        if show_stats:
            st = cxl_run.stats_for(size) if cxl_run.ok else None
            row += [fmt(st.flush_per_msg if st else None),
                    fmt(st.fences_per_msg if st else None)]
        for a, b in ratios:
            row.append(fmt(ratio(value_of(runs, a, test, size),
                                 value_of(runs, b, test, size))))
        rows.append(row)
    if rows:
        print_table(headers, rows)
    else:
        print("(no valid results)")
    if show_stats and cxl_run.ok:
        print_stats_note(cxl_run)
    print()


def print_summary_table(cfg: Config,
                        runs: dict[tuple[str, str], Run]) -> None:
    """Latency and bandwidth of every transport in one table per size,
    with the coherence operations per message of the cxl transport."""
    ts = cfg.transports
    lat = {t: runs.get((t, "latency")) for t in ts}
    bw = {t: runs.get((t, "bw")) for t in ts}
    cxl_t = next((t for t in ts if is_cxl(t) and t != "cxl-coherent"), None)
    sizes = sorted({s for r in list(lat.values()) + list(bw.values())
                    if r and r.ok for s in r.points})
    print("== latency (us) and bandwidth (MB/s) per message size, "
          "2 ranks" + (f"; {cxl_t} coherence operations per message "
                       f"({cfg.cxl_mode} mode)" if cxl_t else ""))
    headers = (["size"] + [f"lat {t}" for t in ts] + [f"bw {t}" for t in ts]
               + ([f"{cxl_t} flush/msg", f"{cxl_t} fences/msg"]
                  if cxl_t else []))
    rows = []
    for size in sizes:
        row = [fmt_size(size)]
        for group in (lat, bw):
            for t in ts:
                r = group[t]
                row.append(fmt(r.points.get(size)) if r and r.ok else
                           ("" if r is None else r.status.upper()))
        if cxl_t:
            r = lat[cxl_t]
            st = r.stats_for(size) if r and r.ok else None
            row += [fmt(st.flush_per_msg if st else None),
                    fmt(st.fences_per_msg if st else None)]
        rows.append(row)
    print_table(headers, rows)
    if cxl_t and lat[cxl_t] and lat[cxl_t].ok:
        print_stats_note(lat[cxl_t])
    print()


def print_stats_note(run: Run) -> None:
    """Explain the cxl coherence columns of a latency table."""
    formula = ("flush/msg = flushed lines / messages sent, fences/msg = "
               "fences / (sent + received); the CSV also has invalidated "
               "lines / received. The invalidations and fences of polls "
               "(progress calls that found nothing; their number depends "
               "on how long a process waits) are counted apart and left "
               "out")
    if run.size_stats is not None and run.size_stats_how == "coh":
        print(f"cxl coherence columns: per message size, counted in that "
              f"size's timed rounds (warm-up included) by mpi_bench "
              f"(counters for {len(run.size_stats)} of {len(run.points)} "
              f"sizes); {formula}")
    elif run.size_stats is not None:
        print(f"cxl coherence columns: per message size, from the "
              f"differences of runs with --max S and the next smaller "
              f"(counters for {len(run.size_stats)} of {len(run.points)} "
              f"sizes); {formula}")
    elif run.stats:
        s = run.stats
        print(f"cxl coherence columns: averages over the whole latency run "
              f"(all sizes; the largest dominate), the same in every row: "
              f"{s.processes} processes sent {s.sent} and received {s.recv} "
              f"messages with {s.flush_lines} flushed lines, {s.fences} "
              f"fences and {s.inval_lines} invalidated lines, beside "
              f"{s.polls} polls with {s.poll_fences} fences; {formula}. "
              f"--cxl-stats-per-size gives them per size")
    else:
        print(f"cxl coherence columns left empty: {run.stats_note}")


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
        unit = TESTS[g.num[1]].unit
        (nt, _, _), (dt, _, _) = g.num, g.den
        lines.append(
            f"{'MET' if met else 'NOT MET':8} {g.text}: {nt} "
            f"{values[0]:.2f} {unit}, {dt} {values[1]:.2f} {unit}, "
            f"{nt}/{dt} = {r:.2f} (need {'<=' if g.at_most else '>='} "
            f"{g.limit:g})")
    return lines


def write_csv(cfg: Config, runs: dict[tuple[str, str], Run]) -> Path:
    path = cfg.out_dir / CSV_NAME
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(CSV_COLUMNS)
        for test in cfg.tests:
            for transport in cfg.transports:
                run = runs[(transport, test)]
                if not run.ok:
                    continue
                for size in sorted(run.points):
                    st = run.stats_for(size)
                    w.writerow([
                        test, transport, size, f"{run.points[size]:.10g}",
                        run.unit,
                        fmt(st.flush_per_msg, 4) if st else "",
                        fmt(st.fences_per_msg, 4) if st else "",
                        fmt(st.inval_per_msg, 4) if st else ""])
    return path


def plot_test(cfg: Config, test: str,
              runs: dict[tuple[str, str], Run]) -> Path | None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

    spec = TESTS[test]
    series = [runs[(t, test)] for t in cfg.transports
              if runs[(t, test)].ok and runs[(t, test)].points]
    if not series:
        return None
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for run in series:
        t = TRANSPORTS[run.transport]
        sizes = sorted(run.points)
        label = (f"{run.transport} ({cfg.cxl_mode})"
                 if run.transport in ("cxl", "cxl-hosts") else run.transport)
        ax.plot(sizes, [run.points[s] for s in sizes], marker=t.marker,
                color=t.color, markersize=4, linewidth=1.5, label=label)
    largest = max(max(run.points) for run in series)
    powers = [1 << k for k in range(largest.bit_length())]
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator(powers[::2]))  # 1, 4, 16, ...
    ax.xaxis.set_minor_locator(FixedLocator(powers))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: fmt_size(int(x))))
    ax.xaxis.set_minor_formatter(NullFormatter())
    if spec.log_y:
        ax.set_yscale("log")
    else:
        ax.set_ylim(bottom=0)
    ranks = spec.ranks or cfg.ranks
    ax.set_title(f"{spec.title}, {ranks} ranks")
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel(spec.ylabel)
    ax.grid(True, which="major", alpha=0.4)
    ax.legend()
    fig.tight_layout()
    path = cfg.out_dir / f"mpi_{test}.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


# ---- main ---------------------------------------------------------------------

def merge_runs(rs: list[Run]) -> Run:
    """One run from repetitions: the first failed one if any failed (a
    failure is never hidden by a median), else per size the median value
    over the repetitions, with the counters of the first."""
    bad = [r for r in rs if not r.ok]
    if bad or len(rs) == 1:
        return bad[0] if bad else rs[0]
    out = rs[0]
    sizes = set.intersection(*(set(r.points) for r in rs))
    out.points = {s: statistics.median(r.points[s] for r in rs)
                  for s in sorted(sizes)}
    out.elapsed = sum(r.elapsed for r in rs)
    return out


# ---- the providers without MPI ---------------------------------------------

PROVIDER_SIZES = 64  # fi_pingpong --max


# The libfabric core that the MPI runs load: the one the MPICH wheel bundles.
MPICH_FABRIC_DIR = REPO / ".venv" / "lib" / "mpich"
CORE_RE = re.compile(r"^CORE\s+(\S+)\s*$", re.M)


@dataclass
class ProviderColumn:
    """One column of the provider table: a provider, the coherence mode of
    the cxl pool (None for shm) and the libfabric core it runs under."""
    name: str
    provider: str
    mode: str | None
    core_dir: Path | None  # None: Debian's core, the one fi_pingpong links


def provider_columns(cfg: Config) -> list[ProviderColumn]:
    """cxl in both modes and shm under MPICH's core, which is what the MPI
    comparison runs on; shm under Debian's core too. The shm providers of
    the two cores differ (0.19 against 0.35 us at 8 B on the machine of
    docs/benchmarks.md), so the goal compares against MPICH's."""
    mpich = MPICH_FABRIC_DIR if (MPICH_FABRIC_DIR / "libfabric.so.1"
                                 ).exists() else None
    cols = [ProviderColumn("cxl", "cxl", cfg.cxl_mode, mpich),
            ProviderColumn("cxl-coherent", "cxl", "coherent", mpich),
            ProviderColumn("shm", "shm", None, mpich)]
    if mpich is not None:
        cols.append(ProviderColumn("shm-debian", "shm", None, None))
    return cols


def provider_latency(cfg: Config, base_env: dict[str, str]
                     ) -> tuple[dict[str, dict[int, float] | str],
                                dict[str, str]]:
    """One-way latency of the providers through the libfabric API alone
    (bench/fi_pingpong), --repeat times interleaved, median per size; per
    column the points or a failure, and the core version each ran on."""
    binary = cfg.provider_dir.parents[1] / "bench" / "fi_pingpong"
    cols = provider_columns(cfg)
    if not os.access(binary, os.X_OK):
        return {c.name: f"{binary} not built (ninja -C build)"
                for c in cols}, {}
    got: dict[str, list[dict[int, float]]] = {c.name: [] for c in cols}
    errors: dict[str, str] = {}
    cores: dict[str, str] = {}
    for _ in range(cfg.repeat):
        for col in cols:
            env = dict(base_env)
            env["FI_PROVIDER"] = col.provider
            if col.core_dir is not None:
                prepend_path(env, "LD_LIBRARY_PATH", col.core_dir)
            pool_dir = None
            if col.mode:
                pool_dir = Path(tempfile.mkdtemp(prefix="cxlmpi-fi-",
                                                 dir="/dev/shm"))
                env.update(cxl_env(cfg, pool_dir, col.mode))
            try:
                rc, out, err = execute(
                    [str(binary), "--max", str(PROVIDER_SIZES)], env,
                    cfg.timeout)
            finally:
                if pool_dir is not None:
                    shutil.rmtree(pool_dir, ignore_errors=True)
            pts = {int(m.group(2)): float(m.group(3))
                   for m in RESULT_RE.finditer(out)
                   if m.group(1) == "fi_latency"}
            core = CORE_RE.search(out)
            if rc != 0 or not pts:
                errors[col.name] = (f"fi_pingpong failed (exit {rc}): "
                                    + failure_tail(out, err))
            else:
                got[col.name].append(pts)
                if core:
                    cores[col.name] = core.group(1)
    res: dict[str, dict[int, float] | str] = {}
    for col in cols:
        if col.name in errors:
            res[col.name] = errors[col.name]
            continue
        sizes = set.intersection(*(set(p) for p in got[col.name]))
        res[col.name] = {sz: statistics.median(p[sz] for p in got[col.name])
                         for sz in sorted(sizes)}
    return res, cores


def print_provider_table(cfg: Config,
                         measured: tuple[dict[str, dict[int, float] | str],
                                         dict[str, str]]) -> list[str]:
    """The table, and the goal lines at the provider level."""
    res, cores = measured
    print(f"== provider latency without MPI (bench/fi_pingpong, libfabric "
          f"API, 2 pinned processes), us, cxl in {cfg.cxl_mode} mode")
    if cores:
        print("libfabric core of each column: " + ", ".join(
            f"{c} {v}" for c, v in cores.items())
            + " (the MPI runs use the core bundled with MPICH; shm-debian "
            "is Debian's, for reference)")
    ok = {c: v for c, v in res.items() if isinstance(v, dict)}
    for c, v in res.items():
        if not isinstance(v, dict):
            print(f"  {c}: {v}")
    sizes = sorted(set.intersection(*(set(v) for v in ok.values()))) \
        if ok else []
    against = [c for c in ok if not c.startswith("shm")] if "shm" in ok \
        else []
    headers = ["size"] + list(ok) + [f"{c}/shm" for c in against]
    rows = []
    for sz in sizes:
        row = [str(sz)] + [fmt(ok[c][sz], 3) for c in ok]
        row += [fmt(ratio(ok[c][sz], ok["shm"][sz])) for c in against]
        rows.append(row)
    if rows:
        print_table(headers, rows)
    print()
    goals = []
    for c in ("cxl", "cxl-coherent"):
        if c in ok and "shm" in ok and 8 in ok[c] and 8 in ok["shm"]:
            r = ok[c][8] / ok["shm"][8]
            core = f" (core {cores['shm']})" if "shm" in cores else ""
            goals.append(f"{'MET' if r <= 0.7 else 'NOT MET':8} provider "
                         f"8 B latency: {c} <= 0.7x shm{core}: {c} "
                         f"{ok[c][8]:.3f} us, shm {ok['shm'][8]:.3f} us, "
                         f"ratio {r:.2f}")
    return goals


def main(argv: list[str] | None = None) -> int:
    cfg = parse_args(argv)
    problems = check_setup(cfg)
    if problems:
        for p in problems:
            print(f"compare_transports: {p}", file=sys.stderr)
        return 2
    base_env, dropped = base_environment()
    if dropped:
        log("not passing on from the environment: " + ", ".join(dropped))
    try:
        cfg.out_dir.mkdir(parents=True, exist_ok=True)
        cfg.build_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        print(f"compare_transports: cannot create {e.filename}: "
              f"{e.strerror}; pass another --out or --build-dir",
              file=sys.stderr)
        return 2
    binary = build_bench(cfg)
    if cfg.without_yield:
        shim = build_noyield(cfg)
        prepend_path(base_env, "LD_PRELOAD", shim)
        log(f"DIAGNOSTIC: every rank runs with {shim} preloaded: "
            "sched_yield() does nothing")

    skip = {}
    for t in cfg.transports:
        problem = cxl_problem(cfg) if is_cxl(t) else None
        if problem:
            log(f"skipping {t}: {problem}")
            skip[t] = problem

    # Repetitions interleave the transports, so that a slow phase of the
    # machine hits all of them alike; each size keeps its median.
    tries: dict[tuple[str, str], list[Run]] = {}
    total = len(cfg.tests) * len(cfg.transports) * cfg.repeat
    n = 0
    for rep_ in range(cfg.repeat):
        for test in cfg.tests:
            for transport in cfg.transports:
                n += 1
                ranks = TESTS[test].ranks or cfg.ranks
                if transport in skip:
                    run = Run(transport, test, ranks, "failed",
                              skip[transport])
                else:
                    log(f"[{n}/{total}] {test} over {transport} "
                        f"({ranks} ranks)")
                    run = run_one(cfg, binary, transport, test, base_env)
                    if (cfg.cxl_stats_per_size and is_cxl(transport)
                            and test == "latency" and run.ok
                            and rep_ == 0 and run.size_stats is None):
                        run.size_stats = cxl_stats_per_size(
                            cfg, binary, run, base_env)
                        run.size_stats_how = "runs"
                    where = ", ".join(f"rank {r} on {h}" for r, h in
                                      sorted(run.hosts.items()))
                    log(f"[{n}/{total}] {test} over {transport}: "
                        f"{run.status} in {run.elapsed:.1f} s"
                        + (f" ({where})" if where and rep_ == 0 else "")
                        + ("" if run.ok
                           else f" ({run.reason.split(';')[0]})"))
                tries.setdefault((transport, test), []).append(run)
    runs = {key: merge_runs(rs) for key, rs in tries.items()}

    provider_goals: list[str] = []
    if "latency" in cfg.tests and not cfg.no_provider_table:
        log("provider latency without MPI (fi_pingpong)")
        provider_goals = print_provider_table(
            cfg, provider_latency(cfg, base_env))

    print_run_summary(cfg, runs)
    if cfg.summary and {"latency", "bw"} <= set(cfg.tests):
        print_summary_table(cfg, runs)
    else:
        for test in cfg.tests:
            print_test_table(cfg, test, runs)
    if cfg.without_yield:
        print("DIAGNOSTIC run (--without-yield): MPICH's sched_yield was a "
              "no-op in every rank, so these are not configurations to "
              "run; goals not evaluated")
    else:
        print("Goals (computed from this run):")
        for line in goal_lines(runs) + provider_goals:
            print("  " + line)
    print()

    csv_path = write_csv(cfg, runs)
    print(f"CSV:   {csv_path}")
    for test in cfg.tests:
        path = plot_test(cfg, test, runs)
        if path:
            print(f"plot:  {path}")
            continue
        stale = cfg.out_dir / f"mpi_{test}.png"
        if stale.exists():
            stale.unlink()  # an older run's plot would pass for this one's
        print(f"plot:  none for {test} (no valid results)")
    return 0 if all(r.ok for r in runs.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
