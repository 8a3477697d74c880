#!/usr/bin/env python3
"""Projected MPI figures on a real CXL device, next to cMPI's and tcp's.

Runs MPICH ping-pong latency and streaming bandwidth (bench/mpi/mpi_bench.c,
2 ranks, 8 B to --max) over three transports, interleaved, --repeat times
(median per size):

  cxl+MODEL  the cxl provider with CXL_COST_MODEL=MODEL (default cmpi, the
             device cMPI measured on): every coherence operation also
             waits for what it costs on that device (docs/costmodel.md)
  cxl        the same provider without the model: this machine's DRAM
  ofi-tcp    libfabric's tcp provider over loopback

and prints them next to cMPI's published two-sided results (seed 000,
SC'25, Sec. 4.2: about 12 us from 1 B to 16 KiB; bandwidth peaks of
6.05 GB/s two-sided and 8.6 GB/s one-sided, with 16 to 32 processes).

For the cxl+MODEL runs it also gives, per message size, the count of each
costed operation per message and the time charged by the model per
message, from extra runs with --max S differenced per size (the method of
compare_transports.py --cxl-stats-per-size), so that the projection can be
checked by hand. Writes OUT/cxl_projection.csv and OUT/cxl_projection.png.

The machinery (building mpi_bench, the environment of each transport, a
fresh pool per run, the checks that the intended provider ran) is
compare_transports.py's (bench/mpi_compare).
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import plot_style as ps  # noqa: E402
from mpi_compare.config import (DEFAULT_BUILD_DIR,  # noqa: E402
                                DEFAULT_OUT_DIR, DEFAULT_PROVIDER_DIR,
                                DEFAULT_SOURCE, DEFAULT_TIMEOUT, TESTS,
                                Config, parse_choices, parse_size)
from mpi_compare.fi_providers import provider_latency  # noqa: E402
from mpi_compare.goals import verdict  # noqa: E402
from mpi_compare.report import fmt, fmt_size, print_table  # noqa: E402
from mpi_compare.results import CxlStats, Run, merge_runs  # noqa: E402
from mpi_compare.runner import (build_bench, check_setup,  # noqa: E402
                                cxl_problem, cxl_stats_per_size, run_one)
from mpi_compare.transports import COST_MODELS, base_environment  # noqa: E402

MiB = 1 << 20
MIN_SIZE = 8

# cMPI's published figures (seed 000_4ee06303db60d7d3.txt, Sec. 4.2).
CMPI_LATENCY_US = 12.0  # two-sided, "around 12 us", Figure 8
CMPI_LATENCY_MAX_SIZE = 16 << 10  # "from 1 B to 16 KB" (one-sided text)
CMPI_BW_TWO_SIDED = 6050.0  # MB/s, two-sided peak (Figure 9 text)
CMPI_BW_ONE_SIDED = 8600.0  # MB/s, one-sided peak, 16 processes
GOAL_8B_US = 2.0  # issue 17: projected 8 B latency under the cmpi model

COUNTERS = ("flush_lines", "inval_lines", "fences", "nt_stores", "nt_loads",
            "nt_lines")
SHORT = {"flush_lines": "flush", "inval_lines": "inval", "fences": "fence",
         "nt_stores": "nt_st", "nt_loads": "nt_ld", "nt_lines": "nt_ln"}


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="cmpi",
                   choices=[m for m in COST_MODELS if m != "none"],
                   help="CXL_COST_MODEL preset (default: %(default)s)")
    p.add_argument("--cxl-mode", default="emulated",
                   choices=("emulated", "flush"),
                   help="CXL_COHERENCE of the cxl runs. The model's time "
                        "adds to what the mode's own operations cost here: "
                        "emulated (the default) costs 14 ns per written "
                        "line here, flush (clwb, clflushopt) 186 to 405 ns "
                        "(docs/benchmarks.md), which real hardware "
                        "includes in the device's figures")
    p.add_argument("--max", type=parse_size, default=MiB, metavar="BYTES",
                   help="largest message size (default: 1M)")
    p.add_argument("--quick", action="store_true",
                   help="mpi_bench --quick: fewer iterations per size")
    p.add_argument("--repeat", type=int, default=1, metavar="N",
                   help="runs per transport, interleaved; median per size "
                        "(default: %(default)s)")
    p.add_argument("--tests", default="latency,bw",
                   type=lambda t: parse_choices(t, ("latency", "bw"),
                                                   "test"),
                   help="latency, bw or both (default: %(default)s)")
    p.add_argument("--no-provider", action="store_true",
                   help="skip the provider-alone line (bench/fi_pingpong)")
    p.add_argument("--batches", type=int, default=20, metavar="B",
                   help="latency: the median of B batches' means "
                        "(mpi_bench --batches), less disturbed by other "
                        "jobs than one mean (default: %(default)s)")
    p.add_argument("--best", action="store_true",
                   help="per size the best of the --repeat runs (lowest "
                        "latency, highest bandwidth) instead of the median: "
                        "on a shared machine the least disturbed run")
    p.add_argument("--no-counts", action="store_true",
                   help="skip the per-size operation counts (they take one "
                        "extra run per size and test)")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT_DIR,
                   metavar="DIR", help="where the CSV and the plot go "
                                       "(default: %(default)s)")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                   metavar="SECONDS",
                   help="limit of each mpiexec run (default: %(default)s)")
    a = p.parse_args(argv)
    if a.repeat < 1:
        p.error("--repeat must be at least 1")
    if a.batches < 1:
        p.error("--batches must be at least 1")
    if a.max < MIN_SIZE:
        p.error(f"--max must be at least {MIN_SIZE}")
    return a


def log(msg: str) -> None:
    print(f"project_cxl: {msg}", file=sys.stderr, flush=True)


def per_msg(st: CxlStats | None, field: str) -> float | None:
    """A counter per message sent, None when the difference is unusable
    (polling made it negative) or no message was sent."""
    if st is None or st.sent <= 0:
        return None
    v = getattr(st, field)
    return v / st.sent if v >= 0 else None


def count_cell(st: CxlStats | None, field: str, scale: float = 1.0,
               digits: int = 2) -> str:
    """A counts table cell, never empty: the count per message, "~0" when
    the difference of two runs came out negative (below the noise of
    their polls), "n/a" when the size has no counters."""
    if st is None or st.sent <= 0:
        return "n/a"
    v = per_msg(st, field)
    return "~0" if v is None else fmt(v / scale, digits)


def provider_line(cfg: Config, plain: Config, label: str,
                  base_env: dict[str, str]) -> str:
    """8 B latency of the provider alone (bench/fi_pingpong, no MPI), with
    and without the model: what MPICH adds is then visible."""
    got = {}
    for name, c in ((label, cfg), ("cxl", plain)):
        res, _ = provider_latency(c, base_env)
        v = res.get("cxl")
        got[name] = (f"{v[8]:.2f} us" if isinstance(v, dict) and 8 in v
                     else f"failed ({v})")
    return ("provider alone (bench/fi_pingpong, no MPI), 8 B one-way: "
            + ", ".join(f"{n} {v}" for n, v in got.items()))


def main(argv=None) -> int:
    a = parse_args(argv)
    label = f"cxl+{a.model}"
    cfg = Config(
        transports=("cxl", "ofi-tcp"), tests=a.tests, ranks=2,
        max_bytes=a.max, quick=a.quick, out_dir=a.out.resolve(),
        build_dir=DEFAULT_BUILD_DIR, source=DEFAULT_SOURCE,
        provider_dir=DEFAULT_PROVIDER_DIR, cxl_mode=a.cxl_mode,
        timeout=a.timeout, cxl_stats_per_size=not a.no_counts,
        repeat=a.repeat, cost_model=a.model,
        bench_args=("--batches", str(a.batches)) if a.batches > 1 else ())
    plain = dataclasses.replace(cfg, cost_model="none")
    problems = check_setup(cfg)
    if cxl_problem(cfg):
        problems.append(cxl_problem(cfg))
    if problems:
        for pr in problems:
            log(pr)
        return 2
    cfg.out_dir.mkdir(parents=True, exist_ok=True)
    cfg.build_dir.mkdir(parents=True, exist_ok=True)
    base_env, _ = base_environment()
    binary = build_bench(cfg)

    # (series label, config, transport of compare_transports)
    series = ((label, cfg, "cxl"), ("cxl", plain, "cxl"),
              ("ofi-tcp", plain, "ofi-tcp"))
    tries: dict[tuple[str, str], list[Run]] = {}
    counts: dict[str, dict[int, CxlStats]] = {}
    for rep in range(a.repeat):
        for test in cfg.tests:
            for name, c, transport in series:
                log(f"[{rep + 1}/{a.repeat}] {test} over {name}")
                run = run_one(c, binary, transport, test, base_env)
                log(f"  {run.status} in {run.elapsed:.1f} s"
                    + ("" if run.ok else f": {run.reason}"))
                tries.setdefault((name, test), []).append(run)
                if (rep == 0 and name == label and run.ok
                        and not a.no_counts):
                    # mpi_bench's in-loop counters (latency), else
                    # differences of runs
                    counts[test] = run.size_stats or cxl_stats_per_size(
                        c, binary, run, base_env)
    runs = {k: merge_runs(v, a.best) for k, v in tries.items()}
    names = [s[0] for s in series]
    sizes = sorted({s for r in runs.values() if r.ok for s in r.points
                    if s >= MIN_SIZE})

    def val(name, test, size):
        r = runs.get((name, test))
        return r.points.get(size) if r and r.ok else None

    prov = ""
    if not a.no_provider:
        log("provider alone (fi_pingpong)")
        prov = provider_line(cfg, plain, label, base_env)
    print(f"== projected MPI figures on a CXL device: {label} is the cxl "
          f"provider in the {a.cxl_mode} mode with CXL_COST_MODEL="
          f"{a.model}; 2 ranks, MPICH, {'best' if a.best else 'median'} of "
          f"{a.repeat} run(s); this machine is shared, so compare the "
          "columns of one run")
    headers = (["size"] + [f"lat {n}" for n in names] + ["lat cMPI"]
               + ([f"bw {n}" for n in names] + ["bw cMPI 2s/1s"]
                  if "bw" in cfg.tests else []))
    rows = []

    def cell(name, test, size, digits):
        """A measured value, never an empty cell."""
        r = runs.get((name, test))
        if r is None:
            return "not run"
        if not r.ok:
            return r.status
        v = r.points.get(size)
        return "no result" if v is None else fmt(v, digits)

    for size in sizes:
        cm = (f"{CMPI_LATENCY_US:.2f}" if size <= CMPI_LATENCY_MAX_SIZE
              else "n/p")
        rows.append([fmt_size(size)]
                    + [cell(n, "latency", size, 2) for n in names]
                    + [cm]
                    + ([cell(n, "bw", size, 0) for n in names]
                       + [f"{CMPI_BW_TWO_SIDED:.0f}/{CMPI_BW_ONE_SIDED:.0f}"
                          " peak" if size == sizes[-1] else "n/p"]
                       if "bw" in cfg.tests else []))
    print_table(headers, rows)
    print(f"latency: one-way us (median of {a.batches} batch means); bw: "
          "MB/s (1e6 B/s); n/p: cMPI published no figure for that size. "
          "cMPI: published "
          "two-sided latency (about 12 us up to 16 KiB, Fig. 8) and peak "
          "bandwidths with 16-32 processes (6.05 GB/s two-sided, 8.6 GB/s "
          "one-sided), seed 000 Sec. 4.2; not a 2-rank measurement")
    if prov:
        print(prov)
    print()

    for test in cfg.tests:
        per = counts.get(test)
        if not per:
            continue
        print(f"== {label}, {test} run: costed operations per message sent "
              "(both ranks; polls are left out of the counts, not of the "
              "charged time) and the time the model charged per message")
        headers = (["size"] + [SHORT[c] for c in COUNTERS]
                   + ["charged us", f"{test} {'us' if test == 'latency' else 'MB/s'}"])
        rows = []
        for size in sizes:
            st = per.get(size)
            rows.append([fmt_size(size)]
                        + [count_cell(st, c) for c in COUNTERS]
                        + [count_cell(st, "cost_ns", 1000, 3),
                           fmt(val(label, test, size),
                               2 if test == "latency" else 0) or "failed"])
        print_table(headers, rows)
        print("charged us: the model's waits of both ranks per message; a "
              "waiting rank's polls are charged too but overlap the "
              "sender's work, so this exceeds the one-way time's share. "
              "~0: a count per message below the noise of the two runs' "
              "polls (their difference came out negative); n/a: no "
              "counters for that size")
        print()

    v8 = val(label, "latency", 8)
    if v8 is not None and a.model == "cmpi":
        verdict_label, note = verdict(v8 <= GOAL_8B_US,
                                      [runs[(label, "latency")]])
        print(f"{verdict_label:8} projected 8 B "
              f"latency under the cmpi model <= {GOAL_8B_US:g} us: "
              f"{v8:.2f} us (cMPI measured {CMPI_LATENCY_US:g} us on that "
              f"device: {CMPI_LATENCY_US / v8:.1f}x lower){note}")
        print()

    csv_path = cfg.out_dir / "cxl_projection.csv"
    with csv_path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["test", "series", "size_bytes", "value", "unit"]
                   + [f"{c}_per_msg" for c in COUNTERS]
                   + ["charged_ns_per_msg"])
        for test in cfg.tests:
            for name in names:
                for size in sizes:
                    v = val(name, test, size)
                    if v is None:
                        continue
                    st = counts.get(test, {}).get(size) if name == label \
                        else None
                    w.writerow([test, name, size, f"{v:.6g}",
                                TESTS[test].unit]
                               + [fmt(per_msg(st, c), 4)
                                  for c in COUNTERS + ("cost_ns",)])
    print(f"CSV:   {csv_path}")
    png = plot(cfg.out_dir / "cxl_projection.png", label, names, sizes, val)
    print(f"plot:  {png}")
    return 0 if all(r.ok for r in runs.values()) else 1


def plot(path: Path, label, names, sizes, val) -> Path:
    # the modelled series takes cxl's look, the unmodelled one the next
    looks = {label: "cxl", "cxl": "cxl-coherent", "ofi-tcp": "ofi-tcp"}
    # with one test only, its panel stays empty but for cMPI's lines
    fig, (lat, bw) = ps.figure(2)
    for name in names:
        for ax, test, scale in ((lat, "latency", 1.0), (bw, "bw", 1e-3)):
            pts = [(s, val(name, test, s)) for s in sizes]
            pts = [(s, v * scale) for s, v in pts if v is not None]
            if pts:
                ps.line(ax, looks[name], *zip(*pts), label=name)
    small = [s for s in sizes if s <= CMPI_LATENCY_MAX_SIZE]
    if small:
        lat.plot(small, [CMPI_LATENCY_US] * len(small), color=ps.REFERENCE,
                 linestyle="--", label="cMPI published (~12 us)")
    lat.axhline(GOAL_8B_US, color="tab:green", linestyle=":",
                label=f"goal at 8 B ({GOAL_8B_US:g} us)")
    bw.axhline(CMPI_BW_TWO_SIDED / 1e3, color=ps.REFERENCE, linestyle="--",
               label="cMPI two-sided peak (6.05 GB/s)")
    bw.axhline(CMPI_BW_ONE_SIDED / 1e3, color=ps.REFERENCE, linestyle=":",
               label="cMPI one-sided peak (8.6 GB/s)")
    for ax, title, ylabel, log in ((lat, "Ping-pong latency", "one-way (us)",
                                    True),
                                   (bw, "Bandwidth", "GB/s", False)):
        ps.size_axis(ax, max(sizes))
        ps.value_axis(ax, log)
        ps.finish(ax, f"{title}, 2 ranks, MPICH", "message size (bytes)",
                  ylabel)
    return ps.save(fig, path)


if __name__ == "__main__":
    sys.exit(main())
