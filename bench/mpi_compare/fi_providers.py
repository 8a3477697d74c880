# SPDX-License-Identifier: BSD-3-Clause
"""Provider latency without MPI: bench/fi_pingpong through the libfabric
API alone."""

from __future__ import annotations

import os
import re
import shutil
import statistics
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .config import REPO, Config
from .results import RESULT_RE, failure_tail
from .runner import execute
from .transports import cxl_env, prepend_path

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
