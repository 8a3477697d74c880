"""Per-operation costs of CXL devices and of the comparison network, each
with its published source, and the per-message cost of cxlmpi's protocol
computed from them.

The device figures are those of the C presets of the CXL cost model
(src/shm/costmodel.c, docs/costmodel.md): `cmpi` and `cxl-b`.
check_presets() compares them with the built libcxlshm, and project.py
stops when they differ.

A message of up to 64 bytes through the cxl provider costs, on each side,
at most 2 flushed lines and 1 fence (README.md; src/shm/ring.c). As the C
model charges them:

  sender    2 lines written back + 1 fence: the fence waits for the first
            line's write-back (wb_ns) and the second line's transfer time
            behind it (64 B / host bandwidth). The store that fills the
            line is not charged (it may miss, costing a load; the C model
            leaves it out, and so does this one);
  receiver  2 lines invalidated + 1 fence, then the poll's load from the
            device: one device round trip (load_ns) and the second line's
            transfer time; and every HEAD_BATCH messages one head store
            written back + fence (src/shm/ring.c; 63 cells per ring,
            src/fabric/prov.c, so a batch of 15), wb_ns / 15 per message.

Both are CPU time: the core waits for the device. SimGrid charges them as
per-message overheads (on the sender, platforms.py), on top of the MPI
library's own software time, measured on this machine with the coherent
pool (no device cost). In an exchange (both partners send, then receive:
halo, recursive doubling, all-to-all) the C model's ranks pay the same
fence and poll in series each round; only a ping-pong hides part of the
receiver's poll behind the sender's fence, which this model does not
credit (docs/projection.md, "One message, two models").
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass
from pathlib import Path

LINE = 64  # bytes per cache line


@dataclass(frozen=True)
class Cost:
    value: float
    unit: str
    source: str


@dataclass(frozen=True)
class Device:
    name: str
    title: str
    preset: str           # the C preset (src/shm/costmodel.c) it mirrors
    load_ns: Cost         # load of a line not in the cache (idle device)
    wb_ns: Cost           # write-back of a flushed line, issue to completion
    host_bw: Cost         # one host's bandwidth to the device, bytes/s
    device_bw: Cost       # the device's total bandwidth, bytes/s, shared
    switch_ns: Cost       # added by a CXL switch hop, each way


CMPI = Device(
    "cmpi",
    "cMPI's Niagara 2.0 pool (FPGA, 4x DDR4-2400, PCIe 4.0 x8 per host)",
    "cmpi",
    Cost(790, "ns", "cMPI (seed 000) Table 1, CXL memory sharing with "
         "caching, no flushing: 790 ns (Intel MLC)"),
    Cost(1410, "ns", "cMPI (seed 000) Table 1, CXL memory sharing with "
         "cache flushing, 2.2 us (Sec. 4.5 / Fig. 11: memset + clflush + "
         "sfence, 2-3 us), less the memset's miss (790 ns): "
         "2200 - 790"),
    Cost(9.5e9, "B/s", "cMPI (seed 000) Table 1, with cache flushing: "
         "9.5 GB/s (9.9 GB/s without)"),
    Cost(76.8e9, "B/s", "cMPI (seed 000) Sec. 4.1: four DDR4-2400 "
         "channels of 19.2 GB/s"),
    Cost(0, "ns", "cMPI (seed 000) Sec. 2.2: hosts attach without a "
         "switch (multi-headed device); no switch latency is published "
         "in the seeds, so none is added"),
)

SEED002 = Device(
    "seed002",
    "CXL memory expander of seed 002, system B (Sapphire Rapids, "
    "1x DDR5 channel, PCIe 5.0 x16)",
    "cxl-b",
    Cost(362, "ns", "seed 002 Sec. 3, observation 2: on system B CXL "
         "adds 211 ns to local DRAM and is 2.4x local DRAM, so DRAM is "
         "211 / 1.4 = 151 ns and CXL 362 ns (idle)"),
    Cost(362, "ns", "assumption: seed 002 measures no write-back; a line "
         "written back is one round trip over the same link, as a load"),
    Cost(64.0e9, "B/s", "seed 002 Table 1, CXL B: 64.0 GB/s per channel "
         "(maximum; seed 002 Sec. 3 observation 3: it saturates at about "
         "8 threads)"),
    Cost(64.0e9, "B/s", "seed 002 Table 1, CXL B: single channel, "
         "64.0 GB/s"),
    Cost(0, "ns", "no switch latency in the seeds; none added"),
)

DEVICES = {d.name: d for d in (CMPI, SEED002)}


@dataclass(frozen=True)
class Network:
    name: str
    title: str
    link_bw: Cost
    nic_ns: Cost      # NIC to NIC, back to back
    hop_ns: Cost      # added by each switch on the path


IB_HDR = Network(
    "ib-hdr",
    "InfiniBand HDR (200 Gb/s), 2-level fat tree, full bisection",
    Cost(25.0e9, "B/s", "cMPI (seed 000) Table 1, InfiniBand over "
         "Mellanox CX-6: 25.0 GB/s (200 Gb/s HDR)"),
    Cost(600, "ns", "cMPI (seed 000) Table 1, InfiniBand over Mellanox "
         "CX-6: sub-600 ns"),
    Cost(130, "ns", "assumption (not in the seeds): about 130 ns per "
         "HDR switch, so that a 3-switch path is about 1 us as issue 17 "
         "states"),
)


HEAD_BATCH = 63 // 4  # ring.c: head_batch = ncells / 4; prov.c: 63 cells

TCP_CX6 = Network(
    "tcp-cx6",
    "TCP over 100 GbE (Mellanox CX-6 Dx), 2-level fat tree: the network "
    "cMPI compared with",
    Cost(11.5e9, "B/s", "cMPI (seed 000) Table 1, TCP over Mellanox "
         "CX-6 Dx: 11.5 GB/s"),
    Cost(18000, "ns", "cMPI (seed 000) Table 1, TCP over Mellanox "
         "CX-6 Dx: 18 us"),
    Cost(0, "ns", "included in the 18 us of cMPI's two-node figure"),
)

NETWORKS = {n.name: n for n in (IB_HDR, TCP_CX6)}


@dataclass(frozen=True)
class MessageCost:
    """One small message's device operations and CPU time per side."""
    send_flushed: int
    send_fences: int
    recv_invalidated: int
    recv_fences: int
    recv_loads: int
    recv_head_flushes: float  # head stores written back, per message
    send_ns: float
    recv_ns: float

    @property
    def one_way_ns(self) -> float:
        return self.send_ns + self.recv_ns


def small_message(dev: Device) -> MessageCost:
    """Device time of a message of up to 64 bytes (header line + payload
    line: 2 lines)."""
    line_ns = LINE / dev.host_bw.value * 1e9
    send = dev.wb_ns.value + line_ns + dev.switch_ns.value
    recv = dev.load_ns.value + line_ns + dev.switch_ns.value \
        + dev.wb_ns.value / HEAD_BATCH
    return MessageCost(2, 1, 2, 1, 1, 1 / HEAD_BATCH, send, recv)


def table_rows() -> list[tuple[str, str, str, str]]:
    """(entry, parameter, value, source) for every number in this file."""
    rows = []
    for d in DEVICES.values():
        for field in ("load_ns", "wb_ns", "host_bw", "device_bw",
                      "switch_ns"):
            c = getattr(d, field)
            rows.append((d.name, field, fmt_cost(c), c.source))
    for net in NETWORKS.values():
        for field in ("link_bw", "nic_ns", "hop_ns"):
            c = getattr(net, field)
            rows.append((net.name, field, fmt_cost(c), c.source))
    return rows


def fmt_cost(c: Cost) -> str:
    if c.unit == "B/s":
        return f"{c.value / 1e9:g} GB/s"
    return f"{c.value:g} {c.unit}"


class _CParams(ctypes.Structure):
    """struct cxl_cost_params (include/cxlshm/pool.h)."""
    _fields_ = [("name", ctypes.c_char * 16), ("load_ns", ctypes.c_uint32),
                ("wb_ns", ctypes.c_uint32), ("nt_ns", ctypes.c_uint32),
                ("fence_ns", ctypes.c_uint32), ("bw_gbs", ctypes.c_double)]


def check_presets(lib: Path) -> list[str]:
    """Differences between each device here and its C preset, read from
    the built libcxlshm (cxl_cost_preset); empty when they agree."""
    so = ctypes.CDLL(str(lib))
    so.cxl_cost_preset.argtypes = [ctypes.c_char_p,
                                   ctypes.POINTER(_CParams)]
    bad = []
    for d in DEVICES.values():
        c = _CParams()
        if so.cxl_cost_preset(d.preset.encode(), ctypes.byref(c)) != 0:
            bad.append(f"{d.name}: no C preset {d.preset!r} in {lib}")
            continue
        pairs = (("load_ns", d.load_ns.value, c.load_ns),
                 ("wb_ns", d.wb_ns.value, c.wb_ns),
                 ("host_bw", d.host_bw.value, c.bw_gbs * 1e9))
        for field, here, there in pairs:
            if abs(here - there) > 1e-6 * max(abs(there), 1):
                bad.append(f"{d.name}.{field} = {here:g} here, {there:g} "
                           f"in the C preset {d.preset!r} "
                           "(src/shm/costmodel.c): make them agree")
    return bad
