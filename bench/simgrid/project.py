#!/usr/bin/env python3
"""Project cxlmpi to many ranks with SimGrid (SMPI): one command.

  .venv/bin/python bench/simgrid/project.py [--quick] [--out DIR]

1. Builds the three programs of bench/simgrid/apps (halo3d, cg, alltoall)
   twice: with MPICH's mpicc (real runs) and with SimGrid's smpicc.
2. Calibrates this machine: bench/compare_transports.py measures the MPI
   ping-pong latency and bandwidth over the cxl provider (flush mode, and
   coherent mode, whose 8 B latency is the MPI software time per message).
3. Model check: runs each program for real on this machine with 2, 4 and
   8 ranks over the cxl provider (tests/mpi/run_mpi.sh, one emulated host
   per rank) and in SMPI on the calibrated "machine" platform; prints the
   error of the prediction. Goal: within 25% where the ranks fit on the
   cores (ranks <= cores). Beyond, the real ranks busy-poll on shared
   cores and wait for time slices, which SMPI does not model: those
   points are printed with the spread of the real runs, not judged.
4. Projection: each program in SMPI on N hosts on one CXL switch (device
   presets of bench/simgrid/costs.py), on an InfiniBand HDR fat tree and
   on TCP over 100 GbE (the network cMPI compared with), and on pods
   of 16 hosts, each pod one CXL device, joined by InfiniBand (and, in
   the full run, by TCP): the machine a job spans when it outgrows one
   pool (docs/multipool.md); the full run adds pods of seed 002's
   device. From 2 ranks up; time to solution per rank
   count, the crossover points, a check of the shared device model
   against the partitioned one, and two checks of the pod model: one
   pod against cxl-cmpi (device time as latency against CPU time) and
   pods of one host against ib-hdr (every message over the network).

Writes DIR/projection.csv, DIR/model_check.csv, DIR/projection_<prog>.png
and DIR/model_check.png (default DIR: results/projection). Full: 2-4096 ranks. --quick: fewer
repetitions and rank counts, up to 64 (1-3 minutes). Exit status 0 if every run
worked, 1 if a run failed, 77 if SimGrid is not installed.
"""
from __future__ import annotations

import argparse
import csv
import math
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(HERE.parent))
import costs  # noqa: E402
import platforms as plat  # noqa: E402
import plot_style as ps  # noqa: E402

MPICC = REPO / ".venv" / "bin" / "mpicc"
MPIEXEC = REPO / ".venv" / "bin" / "mpiexec"
RUN_MPI = REPO / "tests" / "mpi" / "run_mpi.sh"
COMPARE = REPO / "bench" / "compare_transports.py"
PROVIDER_DIR = REPO / "build" / "src" / "fabric"
LIBCXLSHM = REPO / "build" / "src" / "shm" / "libcxlshm.so"
APPS = HERE / "apps"
SKIP = 77
RESULT_RE = re.compile(r"^RESULT\s+(\S+)\s+(\d+)\s+(\S+)\s+(\S+)\s*$", re.M)
SW_US_DEFAULT = 1.3  # docs/benchmarks.md: 1.17-1.33 us, cxl-coherent, MPI
GOAL = 0.25  # model check: |predicted / measured - 1| <= 25 %


@dataclass(frozen=True)
class Program:
    name: str
    check_args: tuple[str, ...]  # model check: real and simulated
    proj_args: tuple[str, ...]   # projection, simulated iterations
    sim_iters: int               # iterations the projection simulates
    iters: int                   # iterations of the time to solution
    what: str


PROGRAMS = (
    Program("halo3d", ("--n", "64", "--iters", "20"),
            ("--n", "256"), 2, 100,
            "Jacobi on 256^3, 100 sweeps, 6-face halo exchange"),
    Program("cg", ("--n", "48", "--iters", "50"),
            ("--n", "128"), 3, 200,
            "CG on 128^3, 200 iterations, halo + 2 allreduce each"),
    Program("alltoall", ("--mib", "16", "--iters", "10"),
            ("--mib", "64"), 2, 20,
            "64 MiB transposed, 20 times (MPI_Alltoall)"),
)
CHECK_RANKS = (2, 4, 8)
POD = "pods16-cmpi-ib-hdr"  # pods of 16 hosts on cMPI's device, HDR between
POD_TCP = "pods16-cmpi-tcp-cx6"
POD_B = "pods16-seed002-ib-hdr"  # the faster device of seed 002
DEVICE_MODEL = "shared"  # see platforms.py; compared with "partitioned"


def log(msg: str) -> None:
    print(f"[project {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr,
          flush=True)


def run(cmd: list[str], timeout: float, env: dict | None = None
        ) -> tuple[int, str]:
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True,
                           timeout=timeout, env=env)
        return p.returncode, p.stdout
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else ""
        return -1, (out or "") + f"\ntimed out after {timeout:.0f} s"


def children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def result_seconds(out: str, prog: str) -> float | None:
    for m in RESULT_RE.finditer(out):
        if m.group(1) == prog:
            v = float(m.group(3))
            return v if math.isfinite(v) and v > 0 else None
    return None


# ---- build ----------------------------------------------------------------

def build(bin_dir: Path) -> dict[str, dict[str, Path]]:
    """{'real': {prog: path}, 'sim': {prog: path}}"""
    bin_dir.mkdir(parents=True, exist_ok=True)
    out: dict[str, dict[str, Path]] = {"real": {}, "sim": {}}
    for kind, cc in (("real", str(MPICC)), ("sim", "smpicc")):
        for p in PROGRAMS:
            exe = bin_dir / f"{p.name}-{kind}"
            cmd = [cc, "-O2", "-Wall", "-Wextra", "-Werror", "-o", str(exe),
                   str(APPS / f"{p.name}.c"), str(APPS / "app.c"), "-lm"]
            rc, text = run(cmd, 300)
            if rc != 0:
                sys.exit(f"project: building {exe.name} failed:\n{text}")
            out[kind][p.name] = exe
    return out


# ---- calibration ----------------------------------------------------------

@dataclass(frozen=True)
class Calibration:
    lat_flush_s: float   # MPI 8 B one-way latency, cxl flush mode
    lat_coh_s: float     # the same, coherent pool: MPI software time
    bw: float            # B/s, cxl flush mode, 64 KiB - 1 MiB median


def calibrate(out_dir: Path, repeat: int) -> Calibration:
    cal = out_dir / "calibration"
    cmd = [sys.executable, str(COMPARE), "--transports", "cxl,cxl-coherent",
           "--tests", "latency,bw", "--quick", "--no-provider-table",
           "--repeat", str(repeat), "--max", "1M", "--out", str(cal)]
    rc, text = run(cmd, 900)
    if rc != 0:
        sys.exit(f"project: calibration failed ({' '.join(cmd)}):\n"
                 + text[-2000:])
    pts: dict[tuple[str, str], dict[int, float]] = {}
    with (cal / "mpi_transports.csv").open() as f:
        for r in csv.DictReader(f):
            pts.setdefault((r["test"], r["transport"]), {})[
                int(r["size_bytes"])] = float(r["value"])
    bws = [v for s, v in pts[("bw", "cxl")].items() if 65536 <= s <= 1 << 20]
    return Calibration(pts[("latency", "cxl")][8] * 1e-6,
                       pts[("latency", "cxl-coherent")][8] * 1e-6,
                       statistics.median(bws) * 1e6)


# ---- runs -----------------------------------------------------------------

def real_run(exe: Path, prog: Program, ranks: int) -> float | None:
    env = dict(os.environ, CXL_MPI_TIMEOUT="300")
    rc, out = run([str(RUN_MPI), "mpich", str(MPIEXEC), str(PROVIDER_DIR),
                   "flush", str(ranks), str(ranks), str(exe),
                   *prog.check_args], 330, env)
    t = result_seconds(out, prog.name)
    if rc != 0 or t is None:
        log(f"real run of {prog.name} with {ranks} ranks failed (exit "
            f"{rc}): {out[-500:]}")
        return None
    return t


def sim_run(exe: Path, prog: Program, p: plat.Platform, ranks: int,
            args: tuple[str, ...], work: Path,
            env: dict[str, str] | None = None) -> float | None:
    xml = work / f"{p.name}-{ranks}.xml"
    hosts = work / f"{p.name}-{ranks}.hosts"
    xml.write_text(p.xml)
    hosts.write_text(p.hostfile(ranks))
    cmd = ["smpirun", "-np", str(ranks), "-platform", str(xml),
           "-hostfile", str(hosts), "-no-privatize",
           "--log=root.thresh:error", *p.smpi_options(),
           str(exe), *args]
    rc, out = run(cmd, 3600, dict(os.environ, **(env or {})))
    t = result_seconds(out, prog.name)
    if rc != 0 or t is None:
        log(f"SMPI run of {prog.name} on {p.name} with {ranks} ranks "
            f"failed (exit {rc}): {out[-800:]}")
        return None
    return t


# ---- output ---------------------------------------------------------------

def print_table(headers: list[str], rows: list[list[str]]) -> None:
    w = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
         for i, h in enumerate(headers)]
    print("  ".join(h.rjust(w[i]) for i, h in enumerate(headers)))
    print("  ".join("-" * x for x in w))
    for r in rows:
        print("  ".join(c.rjust(w[i]) for i, c in enumerate(r)))
    print()


def fmt(v: float | None, digits: int = 4) -> str:
    return "failed" if v is None else f"{v:.{digits}g}"


def crossover(ranks: list[int], cxl: dict[int, float],
              ib: dict[int, float], net: str, cx: str = "cxl-cmpi") -> str:
    """Where the faster platform changes, in words."""
    both = [r for r in ranks if r in cxl and r in ib]
    if not both:
        return "no common points"
    mine = "pod platform" if cx.startswith("pods") else "CXL switch"
    faster = ["cxl" if cxl[r] < ib[r] else "ib" for r in both]
    changes = [(both[i - 1], both[i]) for i in range(1, len(both))
               if faster[i] != faster[i - 1]]
    if not changes:
        who = f"the {mine}" if faster[0] == "cxl" else net
        return f"none: {who} is faster at every count ({both[0]}-{both[-1]})"
    return "; ".join(
        f"between {a} and {b} ranks ("
        f"{net if faster[both.index(b)] == 'ib' else mine}"
        f" faster from {b})" for a, b in changes)


def plot_projection(out_dir: Path, prog: Program, ranks: list[int],
                    series: dict[str, dict[int, float]]) -> Path:
    fig, ax = ps.figure()
    for name, pts in series.items():
        xs = [r for r in ranks if r in pts]
        ps.line(ax, name, xs, [pts[r] for r in xs])
    # crossovers of cxl-cmpi with each network: a dotted line between the
    # two rank counts where the faster platform changes
    for net in [n for n in series if not n.startswith("cxl-")]:
        a, b = series.get("cxl-cmpi", {}), series[net]
        both = [r for r in ranks if r in a and r in b]
        for r0, r1 in zip(both, both[1:]):
            if (a[r0] < b[r0]) != (a[r1] < b[r1]):
                ax.axvline(math.sqrt(r0 * r1), linestyle=":",
                           color=ps.style(net).color,
                           label=f"crossover cxl-cmpi / {net}")
    ps.size_axis(ax, max(ranks))
    ps.value_axis(ax, True)
    ps.finish(ax, f"{prog.name}: {prog.what} (SMPI)", "ranks (one per host)",
              "time to solution (s)")
    return ps.save(fig, out_dir / f"projection_{prog.name}.png")


def plot_check(out_dir: Path, rows: list[tuple], cores: int) -> Path:
    fig, ax = ps.figure()
    for i, p in enumerate(PROGRAMS):
        mine = [(r, m, s) for n, r, m, s, *_ in rows
                if n == p.name and m and s]
        ps.line(ax, p.name, [r for r, _, _ in mine],
                [m for _, m, _ in mine], label=f"{p.name} measured", index=i)
        ps.line(ax, p.name, [r for r, _, _ in mine],
                [s for _, _, s in mine], label=f"{p.name} SMPI", index=i,
                marker="x", linestyle="--")
    ax.axvspan(cores * 1.25, max(r for _, r, *_ in rows) * 1.25,
               color="tab:gray", alpha=0.15,
               label=f"ranks > {cores} cores: not judged")
    ps.size_axis(ax, max((r for _, r, *_ in rows), default=1))
    ps.value_axis(ax, True)
    ps.finish(ax, "Model check: this machine, cxl provider (flush mode)",
              "ranks", "time (s)")
    return ps.save(fig, out_dir / "model_check.png")


# ---- main -----------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="1 repetition, ranks up to 64, no seed002 curve, "
                         "sharing check at 16 ranks only (about a minute)")
    ap.add_argument("--out", type=Path, default=REPO / "results" /
                    "projection", help="output directory (default "
                                       "%(default)s)")
    ap.add_argument("--max-ranks", type=int, default=None,
                    help="largest rank count of the projection (default "
                         "4096, 64 with --quick)")
    ap.add_argument("--sw-us", default=str(SW_US_DEFAULT),
                    help="MPI software time per message on the projected "
                         "platforms, us, or 'measured' for this run's "
                         "coherent-mode 8 B latency (default %(default)s: "
                         "docs/benchmarks.md, cxl-coherent through MPICH "
                         "on this VM unloaded; a loaded machine measures "
                         "many times more)")
    ap.add_argument("--repeat", type=int, default=None,
                    help="real runs and calibration per point, median "
                         "(default 3, 1 with --quick)")
    a = ap.parse_args(argv)
    quick = a.quick or os.environ.get("QUICK") == "1"
    max_ranks = a.max_ranks or (64 if quick else 4096)
    cores = len(os.sched_getaffinity(0))
    started = time.monotonic()
    repeat = a.repeat or (1 if quick else 3)

    missing = [t for t in ("smpicc", "smpirun") if not shutil.which(t)]
    if missing:
        print(f"project: SKIP: SimGrid is not installed ({', '.join(missing)}"
              " not found): install Debian's libsimgrid-dev 3.32 "
              "(scripts/setup.sh does)", file=sys.stderr)
        return SKIP
    for path, fix in ((MPICC, "run scripts/setup.sh"),
                      (PROVIDER_DIR / "libcxl-fi.so",
                       "build first: ninja -C build"),
                      (LIBCXLSHM, "build first: ninja -C build")):
        if not path.exists():
            print(f"project: {path} is missing: {fix}", file=sys.stderr)
            return 2
    # one device model: the SimGrid costs are the C presets' figures
    bad = costs.check_presets(LIBCXLSHM)
    if bad:
        print("project: bench/simgrid/costs.py disagrees with the C cost "
              "model:\n  " + "\n  ".join(bad), file=sys.stderr)
        return 2
    print("== device costs agree with the C presets (src/shm/costmodel.c): "
          + ", ".join(f"{d.name} = {d.preset}"
                      for d in costs.DEVICES.values()))

    out_dir = a.out.resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="cxl-projection-"))
    failed = False
    try:
        log("building the programs (mpicc and smpicc)")
        exes = build(work / "bin")
        log(f"calibrating (compare_transports.py, repeat {repeat})")
        cal = calibrate(out_dir, repeat)
        machine = plat.machine(cal.lat_flush_s, cal.bw)
        print("== this machine, MPICH over the cxl provider "
              "(bench/compare_transports.py --quick)")
        print(f"8 B one-way latency: flush mode {cal.lat_flush_s * 1e6:.3f}"
              f" us, coherent mode {cal.lat_coh_s * 1e6:.3f} us (= MPI "
              "software time per message on every projected platform)")
        print(f"bandwidth (median 64 KiB - 1 MiB, flush mode): "
              f"{cal.bw / 1e9:.3f} GB/s")
        print(f"machine platform: {machine.note}\n")

        # model check
        check_rows = []
        load = os.getloadavg()[0]
        for p in PROGRAMS:
            for r in CHECK_RANKS:
                log(f"model check: {p.name}, {r} ranks")
                meas = [t for t in (real_run(exes["real"][p.name], p, r)
                                    for _ in range(repeat)) if t]
                m = statistics.median(meas) if meas else None
                s = sim_run(exes["sim"][p.name], p, machine, r,
                            p.check_args, work)
                failed |= m is None or s is None
                check_rows.append((p.name, r, m, s,
                                   min(meas) if meas else None,
                                   max(meas) if meas else None))
        print("== model check: SMPI on the machine platform vs real runs "
              f"(cxl provider, flush mode, median of {repeat}; "
              f"{cores} cores)")
        rows, agree, judged = [], 0, 0
        for n, r, m, s, lo, hi in check_rows:
            err = s / m - 1 if m and s else None
            ok = err is not None and abs(err) <= GOAL
            if r <= cores:
                judged += 1
                agree += ok
            rows.append([n, str(r), fmt(m), fmt(lo), fmt(hi), fmt(s),
                         "-" if err is None else f"{err * 100:+.0f}%",
                         ("yes" if ok else "NO") if r <= cores else
                         f"({r // cores} ranks/core)"])
        print_table(["program", "ranks", "measured s", "min", "max",
                     "SMPI s", "error", f"within {GOAL * 100:.0f}%"], rows)
        print(f"model check: {agree} of {judged} points with ranks <= "
              f"cores ({cores}) within {GOAL * 100:.0f}% (the goal); "
              "points with more ranks than cores are not judged: their "
              "ranks busy-poll on shared cores and wait for time slices, "
              "which SMPI does not model")
        print(f"load average before the real runs: {load:.1f} on {cores} "
              "cores" + (": other processes compete for the cores, and the "
                         "judged points measure them too" if load >= 1
                         else "") + "\n")
        with (out_dir / "model_check.csv").open("w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["program", "ranks", "measured_s", "smpi_s",
                        "measured_min_s", "measured_max_s", "judged"])
            for row in check_rows:
                w.writerow([*row, int(row[1] <= cores)])

        # projection
        ranks = [2 ** i for i in range(1, 13) if 2 ** i <= max_ranks]
        names = ["cxl-cmpi", "ib-hdr", "tcp-cx6", POD] + \
            ([] if quick else ["cxl-seed002", POD_TCP, POD_B])
        sw = cal.lat_coh_s if a.sw_us == "measured" else \
            float(a.sw_us) * 1e-6
        print("== platforms (bench/simgrid/costs.py; device "
              f"{DEVICE_MODEL})")
        for name in names:
            print(f"{name} at {max_ranks} ranks: "
                  f"{plat.build(name, max_ranks, sw, DEVICE_MODEL).note}")
        msg = costs.small_message(costs.CMPI)
        print(f"cxl-cmpi small message: sender {msg.send_flushed} flushed "
              f"lines + {msg.send_fences} fence = {msg.send_ns:.0f} ns; "
              f"receiver {msg.recv_invalidated} invalidated lines + "
              f"{msg.recv_fences} fence + {msg.recv_loads} device load + "
              f"{msg.recv_head_flushes:.3f} head write-back = "
              f"{msg.recv_ns:.0f} ns; one way {msg.one_way_ns:.0f} ns + "
              f"{sw * 1e6:.3f} us software = "
              f"{msg.one_way_ns / 1e3 + sw * 1e6:.2f} us\n")
        # compute cost per grid point of each compute block, measured
        # once per program (SMPI, 2 ranks, this machine), then charged
        # alike on every platform and rank count
        compute: dict[str, dict[str, str]] = {}
        print("== compute per point, measured once per program (2 ranks, "
              "SMPI on this machine), charged on every platform")
        for p in PROGRAMS:
            f = work / f"{p.name}.compute"
            log(f"compute cost of {p.name}")
            args = p.proj_args + ("--iters", str(p.sim_iters))
            if sim_run(exes["sim"][p.name], p, machine, 2, args, work,
                       {"PROJ_COMPUTE_SAVE": str(f)}) is None \
                    or not f.exists():
                failed = True
                continue
            compute[p.name] = {"PROJ_COMPUTE_LOAD": str(f)}
            print(f"{p.name}: " + ", ".join(
                f"line {ln}: {ns} ns" for ln, ns in
                (x.split() for x in f.read_text().splitlines())))
        print()
        results: dict[tuple[str, str], dict[int, float]] = {}
        sim_cost: dict[int, tuple[float, float]] = {}  # ranks: wall, CPU
        for p in PROGRAMS:
            args = p.proj_args + ("--iters", str(p.sim_iters))
            scale = p.iters / p.sim_iters
            if p.name not in compute:
                continue
            for name in names:
                for r in ranks:
                    log(f"projection: {p.name} on {name}, {r} ranks")
                    t0, c0 = time.monotonic(), children_cpu()
                    t = sim_run(exes["sim"][p.name], p,
                                plat.build(name, r, sw, DEVICE_MODEL), r,
                                args, work, compute[p.name])
                    cost = (time.monotonic() - t0, children_cpu() - c0)
                    log(f"  {cost[0]:.1f} s wall, {cost[1]:.1f} s CPU")
                    sim_cost[r] = tuple(
                        x + y for x, y in zip(sim_cost.get(r, (0, 0)),
                                              cost))
                    failed |= t is None
                    if t is not None:
                        results.setdefault((p.name, name), {})[r] = \
                            t * scale
        # the shared device (the curves) against the partitioned one
        share_ranks = [r for r in ((16,) if quick else (16, 64))
                       if r <= max_ranks]
        share_rows = []
        for p in PROGRAMS:
            args = p.proj_args + ("--iters", str(p.sim_iters))
            for r in share_ranks:
                log(f"sharing check: {p.name}, {r} ranks")
                t = sim_run(exes["sim"][p.name], p,
                            plat.build("cxl-cmpi", r, sw, "partitioned"),
                            r, args, work, compute.get(p.name))
                part = t * p.iters / p.sim_iters if t else None
                full = results.get((p.name, "cxl-cmpi"), {}).get(r)
                share_rows.append([p.name, str(r), fmt(full), fmt(part),
                                   f"{(part / full - 1) * 100:+.1f}%"
                                   if full and part else "-"])

        # the pod model against the two it is built from: one pod (16
        # ranks) against cxl-cmpi, where only the charge of the device
        # time differs (latency here, CPU time there); pods of one host
        # against ib-hdr at 64 ranks, where every message takes the
        # network (a non-blocking core here, a fat tree there)
        pod_rows = []
        for p in PROGRAMS:
            args = p.proj_args + ("--iters", str(p.sim_iters))
            scale = p.iters / p.sim_iters
            for ref, name, r in (("cxl-cmpi", POD, 16),
                                 ("ib-hdr", "pods1-cmpi-ib-hdr", 64)):
                if r > max_ranks or p.name not in compute:
                    continue
                got = results.get((p.name, name), {}).get(r)
                if got is None:
                    log(f"pod check: {p.name} on {name}, {r} ranks")
                    t = sim_run(exes["sim"][p.name], p,
                                plat.build(name, r, sw, DEVICE_MODEL), r,
                                args, work, compute[p.name])
                    failed |= t is None
                    got = t * scale if t else None
                want = results.get((p.name, ref), {}).get(r)
                pod_rows.append([p.name, str(r), ref, fmt(want), name,
                                 fmt(got),
                                 f"{(got / want - 1) * 100:+.1f}%"
                                 if got and want else "-"])

        with (out_dir / "projection.csv").open("w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["program", "platform", "ranks", "seconds"])
            for (pn, name), pts in results.items():
                for r in sorted(pts):
                    w.writerow([pn, name, r, f"{pts[r]:.9g}"])

        for p in PROGRAMS:
            print(f"== {p.name}: {p.what}; time to solution (s), SMPI "
                  f"({p.sim_iters} iterations simulated, scaled to "
                  f"{p.iters})")
            series = {n: results.get((p.name, n), {}) for n in names}
            rows = []
            for r in ranks:
                row = [str(r)] + [fmt(series[n].get(r)) for n in names]
                i = series["ib-hdr"].get(r)
                for n in ("cxl-cmpi", POD):
                    c = series[n].get(r)
                    row.append(fmt(c / i, 3) if c and i else "-")
                rows.append(row)
            print_table(["ranks"] + names + ["cxl-cmpi/ib-hdr",
                                             "pods/ib-hdr"], rows)
            nets = [n for n in names if n in costs.NETWORKS]
            for cx in [n for n in names if n not in costs.NETWORKS]:
                for net in nets:
                    print(f"crossover {cx} vs {net}: " + crossover(
                        ranks, series[cx], series[net], net, cx))
            print(f"plot:  {plot_projection(out_dir, p, ranks, series)}\n")
        print("== device sharing: one shared device link (max-min, used "
              "above) vs the partitioned model, cxl-cmpi, s")
        print_table(["program", "ranks", "shared", "partitioned",
                     "difference"], share_rows)
        print("== the pod model against its parts: one pod of 16 (device "
              "time as latency) vs cxl-cmpi (as CPU time); pods of one "
              "host (non-blocking core) vs ib-hdr (fat tree), s")
        print_table(["program", "ranks", "reference", "s", "pods",
                     "s", "difference"], pod_rows)
        print("== cost of the projection runs per rank count (all "
              "programs and platforms), s")
        print_table(["ranks", "wall", "CPU"],
                    [[str(r), f"{w:.1f}", f"{c:.1f}"]
                     for r, (w, c) in sorted(sim_cost.items())])
        print(f"plot:  {plot_check(out_dir, check_rows, cores)}")
        print(f"CSV:   {out_dir / 'projection.csv'}")
        print(f"CSV:   {out_dir / 'model_check.csv'}")
        print(f"run time: {time.monotonic() - started:.0f} s wall, "
              f"{children_cpu():.0f} s CPU (children)")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
