"""Per-operation costs of CXL devices and of the comparison network, each
with its published source, and the per-message cost of cxlmpi's protocol
computed from them.

These figures must agree with the C presets of the CXL cost model in
src/shm (issue 17, first bullet); where the two differ, the lead engineer
reconciles them, and this table follows.

A message of up to 64 bytes through the cxl provider costs, on each side,
at most 2 flushed lines and 1 fence (README.md; src/shm/ring.c). The model
charges:

  sender    2 lines written back + 1 fence: one flushed write
            (flush_fence_ns: store, flush and the fence that waits for the
            write-back); the second line is flushed in parallel
            (clflushopt) and adds only its transfer time;
  receiver  2 lines invalidated + 1 fence, then the poll's load from the
            device sees the message: one device round trip (load_ns), the
            second line loaded in parallel (its transfer time); and every
            HEAD_BATCH messages one head store written back + fence
            (src/shm/ring.c; 63 cells per ring, src/fabric/prov.c, so a
            batch of 15), i.e. flush_fence_ns / 15 per message.

Both are CPU time: the core waits for the device. SimGrid charges them as
per-message send and receive overheads (smpi/os, smpi/or), on top of the
MPI library's own software time, measured on this machine with the
coherent pool (no device cost).
"""
from __future__ import annotations

from dataclasses import dataclass

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
    load_ns: Cost         # load of a line not in the cache (idle device)
    flush_fence_ns: Cost  # store + flush + fence of one line
    host_bw: Cost         # one host's bandwidth to the device, bytes/s
    device_bw: Cost       # the device's total bandwidth, bytes/s, shared
    switch_ns: Cost       # added by a CXL switch hop, each way


CMPI = Device(
    "cmpi",
    "cMPI's Niagara 2.0 pool (FPGA, 4x DDR4-2400, PCIe 4.0 x8 per host)",
    Cost(790, "ns", "cMPI (seed 000) Table 1, CXL memory sharing with "
         "caching, no flushing: 790 ns (Intel MLC)"),
    Cost(2200, "ns", "cMPI (seed 000) Table 1, CXL memory sharing with "
         "cache flushing: 2.2 us; Sec. 4.5 / Fig. 11: 1-64 B memset + "
         "clflush(opt) + sfence, 2-3 us"),
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
    Cost(311, "ns", "seed 002 Sec. 3, observation 2: CXL adds 211 ns to "
         "local DRAM on system B; local DRAM 100 ns from cMPI (seed 000) "
         "Table 1"),
    Cost(622, "ns", "assumption: seed 002 gives no flush figure; a "
         "flushed write is taken as 2 device round trips (the store's "
         "read for ownership, then the write-back the fence waits for), "
         "the ratio that cMPI's Table 1 shows (2.2 us vs 0.79 us)"),
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
    send = dev.flush_fence_ns.value + line_ns + dev.switch_ns.value
    recv = dev.load_ns.value + line_ns + dev.switch_ns.value \
        + dev.flush_fence_ns.value / HEAD_BATCH
    return MessageCost(2, 1, 2, 1, 1, 1 / HEAD_BATCH, send, recv)


def table_rows() -> list[tuple[str, str, str, str]]:
    """(entry, parameter, value, source) for every number in this file."""
    rows = []
    for d in DEVICES.values():
        for field in ("load_ns", "flush_fence_ns", "host_bw", "device_bw",
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
