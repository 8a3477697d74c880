#!/usr/bin/env python3
"""Compare MPI transports on this machine, side by side, in one run.

Builds bench/mpi/mpi_bench.c with the project's MPICH, then runs each
selected test once per transport (one mpiexec invocation each), or
--repeat times, interleaved, keeping the median of each size (or with
--best the best one):

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
import sys
from pathlib import Path

from mpi_compare.config import (CSV_NAME, DEFAULT_BUILD_DIR, DEFAULT_MAX,
                                DEFAULT_OUT_DIR, DEFAULT_PROVIDER_DIR,
                                DEFAULT_SOURCE, DEFAULT_TIMEOUT, PROVIDER_LIB,
                                QUICK_MAX, TESTS, Config, parse_choices,
                                parse_size)
from mpi_compare.fi_providers import provider_latency
from mpi_compare.goals import goal_lines
from mpi_compare.plot import plot_test
from mpi_compare.report import (print_provider_table, print_run_summary,
                                print_summary_table, print_test_table,
                                write_csv)
from mpi_compare.results import Run, merge_runs
from mpi_compare.runner import (build_bench, build_noyield, check_setup,
                                cxl_problem, cxl_stats_per_size, log,
                                run_one)
from mpi_compare.transports import (COST_MODELS, CXL_MODES, TRANSPORTS,
                                    base_environment, is_cxl, prepend_path)


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
        "--best", action="store_true",
        help="with --repeat: report per size the best of the runs (lowest "
             "time, highest bandwidth) instead of the median. Each run also "
             "measures how many CPUs other processes kept busy meanwhile; a "
             "goal missed beside such load reads BUSY, not NOT MET")
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
        repeat=a.repeat, best=a.best,
        no_provider_table=a.no_provider_table,
        summary=a.summary, without_yield=a.without_yield,
        cost_model=a.cost_model)


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
    runs = {key: merge_runs(rs, cfg.best) for key, rs in tries.items()}

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
