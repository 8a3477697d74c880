# SPDX-License-Identifier: BSD-3-Clause
"""The tables and the CSV of a comparison."""

from __future__ import annotations

import csv
from pathlib import Path

from plot_style import size_label as fmt_size

from .config import CSV_NAME, TESTS, Config
from .results import Run
from .transports import is_cxl

CSV_COLUMNS = ("test", "transport", "size_bytes", "value", "unit",
               "flush_lines_per_msg", "fences_per_msg", "inval_lines_per_msg")


# Ratio columns per test: (numerator, denominator).
RATIOS = {
    "latency": (("cxl", "mpich-shm"), ("cxl", "ofi-shm"), ("ofi-tcp", "cxl"),
                ("cxl-coherent", "mpich-shm"), ("cxl-coherent", "ofi-shm"),
                ("tcp-hosts", "cxl-hosts"), ("cxl-hosts", "mpich-shm")),
    "bw": (("cxl", "mpich-shm"), ("cxl-coherent", "mpich-shm"),
           ("cxl-hosts", "tcp-hosts"), ("cxl-hosts", "mpich-shm")),
}


def fmt(value: float | None, digits: int = 2) -> str:
    return "" if value is None else f"{value:.{digits}f}"


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
                     f"{run.elapsed:.1f}", f"{run.others_cpus:.2f}",
                     run.provider_line or "(none)"])
    print_table(["test", "transport", "ranks", "status", "secs",
                 "other CPUs busy", "provider line"], rows)
    print("other CPUs busy: CPUs that other processes of the machine kept "
          "busy on average during the run (the most of its repetitions)")
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
