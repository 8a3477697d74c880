# SPDX-License-Identifier: BSD-3-Clause
"""Building mpi_bench and running it, one mpiexec invocation per
transport and test."""

from __future__ import annotations

import importlib.util
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .config import (CXLRUN, KILL_GRACE, MPICC, MPIEXEC, PROVIDER_LIB, TESTS,
                     Config)


from .results import (HOST_RE, PROVIDER_RE, CxlStats, Run,
                      failure_tail, parse_coh, parse_results, parse_stats,
                      provider_problem)


from .transports import TRANSPORTS, is_cxl, run_environment


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


def _machine_busy_s() -> float:
    """CPU seconds the whole machine has spent busy since boot (every
    CPU; steal time, taken by other guests of a VM, counts as busy)."""
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:9]]
    except (OSError, ValueError):
        return 0.0
    user, nice, system, _idle, _iowait, irq, softirq, steal = v
    return (user + nice + system + irq + softirq + steal) / os.sysconf(
        "SC_CLK_TCK")


def _own_cpu_s() -> float:
    """CPU seconds of this process and of its children reaped so far (an
    mpiexec run's ranks are reaped before it returns)."""
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        ru = resource.getrusage(who)
        total += ru.ru_utime + ru.ru_stime
    return total


class CpuProbe:
    """How busy the rest of the machine was while a run ran: busy CPU time
    of the machine less that of this process and the run's processes, as
    an average number of CPUs. A figure measured beside a busy machine
    says more about the machine than about the transport."""

    def __init__(self) -> None:
        self.t0 = time.monotonic()
        self.busy0 = _machine_busy_s()
        self.own0 = _own_cpu_s()

    def others_cpus(self) -> float:
        dt = time.monotonic() - self.t0
        if dt <= 0:
            return 0.0
        others = ((_machine_busy_s() - self.busy0)
                  - (_own_cpu_s() - self.own0))
        return max(0.0, others / dt)


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


def run_one(cfg: Config, binary: Path, transport: str, test: str,
            base_env: dict[str, str]) -> Run:
    ranks = TESTS[test].ranks or cfg.ranks
    run = Run(transport, test, ranks)
    probe = CpuProbe()
    rc, out, err, run.elapsed = invoke(cfg, binary, transport, test,
                                       cfg.max_bytes, base_env)
    run.others_cpus = probe.others_cpus()
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
