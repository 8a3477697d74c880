# SPDX-License-Identifier: BSD-3-Clause
"""What one run produced, and how it is read from mpi_bench's output."""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field

from .config import TESTS
from .transports import TRANSPORTS

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
    # CPUs that other processes of the machine kept busy, on average,
    # while this run ran (runner.cpu_probe); the most of all repetitions
    others_cpus: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def stats_for(self, size: int) -> CxlStats | None:
        """Counters to report for one size: that size's own, when they
        were measured, else those of the whole run."""
        if self.size_stats is not None:
            return self.size_stats.get(size)
        return self.stats


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


def merge_runs(rs: list[Run], best: bool = False) -> Run:
    """One run from repetitions: the first failed one if any failed (a
    failure is never hidden by a median), else per size the median value
    over the repetitions, or with best the best one (lowest time, highest
    bandwidth: what the machine can do when nothing disturbs it), with the
    counters of the first."""
    bad = [r for r in rs if not r.ok]
    if bad or len(rs) == 1:
        return bad[0] if bad else rs[0]
    out = rs[0]
    sizes = set.intersection(*(set(r.points) for r in rs))
    pick = ((min if TESTS[out.test].unit == "us" else max) if best
            else statistics.median)
    out.points = {s: pick(r.points[s] for r in rs) for s in sorted(sizes)}
    out.elapsed = sum(r.elapsed for r in rs)
    out.others_cpus = max(r.others_cpus for r in rs)
    return out
