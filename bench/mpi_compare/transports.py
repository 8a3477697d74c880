# SPDX-License-Identifier: BSD-3-Clause
"""The transports compared, and the environment each run gets."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .config import Config

# Variables of the calling environment that could change the transport.
STRIPPED_PREFIXES = ("FI_", "MPIR_CVAR_", "MPIR_PARAM_", "MPICH_", "CXL_")


@dataclass(frozen=True)
class TransportSpec:
    name: str
    provider: str  # expected name on the "libfabric provider:" line
    env: tuple[tuple[str, str], ...]  # fixed variables (cxl adds its own)
    hosts: int = 0  # > 0: launched by tools/cxlrun on that many hosts


TRANSPORTS = {
    t.name: t
    for t in (
        TransportSpec(
            "cxl", "cxl",
            (("FI_PROVIDER", "cxl"), ("MPIR_CVAR_CH4_NETMOD", "ofi"),
             ("MPIR_CVAR_NOLOCAL", "1"), ("FI_CXL_STATS", "1"))),
        # across emulated hosts (network + UTS namespaces, tools/cxlrun)
        TransportSpec("cxl-hosts", "cxl", (), hosts=2),
        TransportSpec("tcp-hosts", "tcp", (), hosts=2),
        TransportSpec(
            "cxl-coherent", "cxl",
            (("FI_PROVIDER", "cxl"), ("MPIR_CVAR_CH4_NETMOD", "ofi"),
             ("MPIR_CVAR_NOLOCAL", "1"), ("FI_CXL_STATS", "1"))),
        # NOLOCAL unset: ch4 POSIX shm carries the same-host traffic, the
        # tcp netmod only wires up.
        TransportSpec(
            "mpich-shm", "tcp",
            (("MPIR_CVAR_CH4_NETMOD", "ofi"), ("FI_PROVIDER", "tcp"),
             ("FI_TCP_IFACE", "lo"))),
        TransportSpec(
            "ofi-shm", "shm",
            (("FI_PROVIDER", "shm"), ("MPIR_CVAR_CH4_NETMOD", "ofi"),
             ("MPIR_CVAR_NOLOCAL", "1"))),
        TransportSpec(
            "ofi-tcp", "tcp",
            (("FI_PROVIDER", "tcp"), ("FI_TCP_IFACE", "lo"),
             ("MPIR_CVAR_CH4_NETMOD", "ofi"), ("MPIR_CVAR_NOLOCAL", "1"))),
    )
}

CXL_MODES = ("coherent", "flush", "emulated")
# CXL_COST_MODEL presets (src/shm/costmodel.c, docs/costmodel.md)
COST_MODELS = ("none", "cmpi", "cxl-a", "cxl-b")
CXL_POOL_SIZE = "512M"
CXL_ARENA_CAPACITY = "8192"


def prepend_path(env: dict[str, str], key: str, path: Path) -> None:
    """Put path first in the search-path variable key of env."""
    env[key] = os.pathsep.join(p for p in (str(path), env.get(key)) if p)


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
