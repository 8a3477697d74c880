#!/usr/bin/env python3
"""SimGrid platforms for the projection, and the SMPI options that go with
each (per-message CPU overheads, no hidden SMPI correction factors).

  cxl-<device>  N hosts on one CXL switch in front of one memory device
                (bench/simgrid/costs.py): each host's link to the device
                (full duplex, host_bw each way) and the device itself
                (device_bw / 2: a two-sided message crosses it twice,
                written by the sender, read by the receiver) are shared
                resources; per-message device costs are CPU time.
                sharing "shared" (project.py's curves): the device is
                one SimGrid link that all flows share (max-min fairness);
                "partitioned": each host gets its fair share of the
                device, device_bw / 2 / N each way, as the shared link
                gives when all hosts communicate at once; project.py
                compares the two at 16 and 64 ranks. With the options of
                smpi_options the shared one is the cheaper to simulate
                (halo3d, 4096 ranks, 2 sweeps: 6 s of CPU against 49 s).
  ib-hdr        N hosts on a 2-level InfiniBand HDR fat tree (32 hosts per
                leaf, 32 spines, full bisection), every link full duplex.
  tcp-cx6       the same tree with TCP over 100 GbE (cMPI's comparison).
  pods<P>-<device>-<network>
                pods of P hosts, each pod one CXL device as in cxl-<device>
                (shared), every host also on the network; pods joined by
                a non-blocking core of that network (full bisection: one
                uplink of P links' bandwidth per pod). Within a pod a
                message goes through the pool, between pods through the
                network, as the provider routes them (docs/multipool.md).
                SMPI's per-message CPU time cannot differ by route, so
                here the device time of a message is latency on the
                pool path (half on each host's device link) and only the
                MPI software time is CPU; project.py measures what that
                changes against cxl-<device> (one pod, CPU-charged).
  machine       this machine, calibrated: one host with 2 cores that runs
                every rank, one shared link with the measured bandwidth of
                the cxl provider, the measured one-way latency as CPU time.

Every platform charges the same MPI software time per message (measured
here through MPICH over the cxl provider on a coherent pool, where the
pool costs nothing), all of it and the device time on the sender
(smpi_options says why).

  .venv/bin/python bench/simgrid/platforms.py cxl-cmpi --hosts 64 --sw-us 1.2 -o p.xml
"""
from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import costs  # noqa: E402

HOST_SPEED = "1Gf"  # the simulated hosts compute as fast as this machine:
# smpi/host-speed is the same value, so measured compute time maps 1:1
LEAF_PORTS = 32     # fat tree: hosts per leaf switch, and spines
HEADER = ("<?xml version='1.0'?>\n"
          '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n'
          '<platform version="4.1">\n')


@dataclass(frozen=True)
class Platform:
    name: str
    xml: str
    hostnames: tuple[str, ...]  # rank r runs on hostnames[r % len]
    send_s: float               # CPU time per message, sender
    recv_s: float               # CPU time per message, receiver
    # (both charged to the sender: smpi_options)
    note: str

    def hostfile(self, ranks: int) -> str:
        return "".join(self.hostnames[r % len(self.hostnames)] + "\n"
                       for r in range(ranks))

    def smpi_options(self) -> list[str]:
        """smpirun options: the platform's per-message overheads, and none
        of SMPI's default correction factors (those were fitted to an
        Ethernet cluster; here latency and bandwidth are as given)."""
        return [
            "--cfg=smpi/host-speed:" + HOST_SPEED,
            # the programs charge their compute themselves (APP_COMPUTE
            # in bench/simgrid/apps/app.h): nothing else is timed
            "--cfg=smpi/simulate-computation:no",
            # the per-message CPU time, sender's and receiver's, all
            # charged to the sender (smpi/ois for MPI_Isend and the
            # sends inside collectives, smpi/os for MPI_Send): SMPI
            # 3.32 charges smpi/or only for messages from a detached
            # (eager) send, and detached sends are off (below). The
            # exchanges timed here are symmetric (each rank sends as
            # many messages as it receives per step) and one message
            # still costs os + wire; against the split, detached model
            # at 64 ranks: -0.5 to +0.7 % (docs/projection.md).
            "--cfg=smpi/os:0:%.9g:0" % (self.send_s + self.recv_s),
            "--cfg=smpi/ois:0:%.9g:0" % (self.send_s + self.recv_s),
            "--cfg=smpi/or:0:0:0",
            "--cfg=smpi/bw-factor:0:1",
            "--cfg=smpi/lat-factor:0:1",
            "--cfg=network/TCP-gamma:0",
            # MPICH's collective algorithms: the real runs use MPICH
            "--cfg=smpi/coll-selector:mpich",
            # ... but named for the small allreduce and reduce: SMPI's
            # mpich selector sends every commutative one through its
            # SMP-aware two-level variant, which first builds per-host
            # communicators with a ring allgather (N^2 messages: 56 s of
            # CPU at 1024 ranks, once). With one rank per host, what is
            # left is what MPICH picks for a flat communicator and
            # <= 2048 B, the only sizes these programs reduce.
            "--cfg=smpi/allreduce:rdb",
            "--cfg=smpi/reduce:binomial",
            # no detached (eager) sends: SMPI 3.32 removes each finished
            # detached comm from a std::list, linearly (in
            # CommImpl::finish); at 2048 ranks this took 85 % of the
            # CPU (2.9 s per halo sweep against 0.43 s without)
            "--cfg=smpi/send-is-detached-thresh:0",
        ]


def cluster_hosts(n: int) -> tuple[str, ...]:
    return tuple(f"node-{i}" for i in range(n))


SHARINGS = ("shared", "partitioned")


def cxl_switch(dev: costs.Device, hosts: int, sw_s: float,
               sharing: str = "shared") -> Platform:
    msg = costs.small_message(dev)
    if sharing == "shared":
        link_bw = dev.host_bw.value
        backbone = (f'bb_bw="{dev.device_bw.value / 2:.6g}Bps" '
                    'bb_lat="0s" bb_sharing_policy="SHARED" ')
    elif sharing == "partitioned":
        link_bw = min(dev.host_bw.value, dev.device_bw.value / 2 / hosts)
        backbone = ""
    else:
        raise ValueError(f"sharing {sharing!r}: choose from "
                         f"{', '.join(SHARINGS)}")
    xml = (HEADER +
           f'  <!-- {hosts} hosts, one CXL switch, device {dev.name}: '
           f'{dev.title} (bench/simgrid/costs.py); device {sharing} -->\n'
           f'  <cluster id="cxl" prefix="node-" suffix="" '
           f'radical="0-{hosts - 1}" speed="{HOST_SPEED}" '
           f'bw="{link_bw:.6g}Bps" lat="0s" '
           f'sharing_policy="SPLITDUPLEX" {backbone}/>\n'
           '</platform>\n')
    note = (f"device {sharing}, host link {link_bw / 1e9:.4g} GB/s each "
            f"way, device "
            f"{dev.device_bw.value / 1e9:g} GB/s shared (messages "
            f"{dev.device_bw.value / 2e9:g} GB/s), per message "
            f"{msg.send_ns / 1e3:.3f} us send + {msg.recv_ns / 1e3:.3f} us "
            f"receive device time + {sw_s * 1e6:.3f} us MPI software")
    return Platform(f"cxl-{dev.name}", xml, cluster_hosts(hosts),
                    sw_s / 2 + msg.send_ns * 1e-9,
                    sw_s / 2 + msg.recv_ns * 1e-9, note)


def fat_tree(net: costs.Network, hosts: int, sw_s: float) -> Platform:
    # whole leaves; ranks go to the first hosts (one leaf up to 32)
    leaves = max(1, -(-hosts // LEAF_PORTS))
    hosts = leaves * LEAF_PORTS
    # 4 links host-leaf-spine-leaf-host carry the NIC-to-NIC latency and
    # 3 switch hops (TCP: the software stack's time is in the NIC figure)
    end_to_end = net.nic_ns.value + 3 * net.hop_ns.value
    link_lat = end_to_end / 4 * 1e-9
    topo = f"2;{LEAF_PORTS},{leaves};1,{LEAF_PORTS};1,1"
    xml = (HEADER +
           f'  <!-- {hosts} hosts, {net.title} (bench/simgrid/costs.py) '
           f'-->\n'
           f'  <cluster id="ib" prefix="node-" suffix="" '
           f'radical="0-{hosts - 1}" speed="{HOST_SPEED}" '
           f'bw="{net.link_bw.value:.6g}Bps" lat="{link_lat:.6g}s" '
           f'sharing_policy="SPLITDUPLEX" topology="FAT_TREE" '
           f'topo_parameters="{topo}"/>\n'
           '</platform>\n')
    note = (f"{leaves} leaves x {LEAF_PORTS} hosts, {LEAF_PORTS} spines, "
            f"links {net.link_bw.value / 1e9:g} GB/s each way, "
            f"{end_to_end / 1e3:.2f} us across the tree, "
            f"{sw_s * 1e6:.3f} us MPI software per message")
    return Platform(net.name, xml, cluster_hosts(hosts), sw_s / 2,
                    sw_s / 2, note)


def pods(dev: costs.Device, net: costs.Network, per_pod: int, hosts: int,
         sw_s: float) -> Platform:
    """Pods of per_pod hosts on one device each, joined by the network."""
    msg = costs.small_message(dev)
    npods = -(-hosts // per_pod)
    dev_lat = (msg.send_ns + msg.recv_ns) / 2 * 1e-9  # per device link
    net_lat = (net.nic_ns.value + 3 * net.hop_ns.value) / 4 * 1e-9
    up_bw = per_pod * net.link_bw.value
    out = [HEADER,
           f'  <!-- {hosts} hosts in {npods} pods of {per_pod}: each pod '
           f'{dev.title}; between pods {net.title}, non-blocking core '
           f'(bench/simgrid/costs.py) -->\n',
           '  <zone id="world" routing="Full">\n']
    for k in range(npods):
        first = k * per_pod
        members = range(first, min(first + per_pod, hosts))
        out.append(f'    <zone id="pod{k}" routing="Full">\n')
        for i in members:
            out.append(f'      <host id="node-{i}" speed="{HOST_SPEED}"/>\n')
        out.append(f'      <router id="pod{k}-gw"/>\n')
        out.append(f'      <link id="pod{k}-dev" '
                   f'bandwidth="{dev.device_bw.value / 2:.6g}Bps" '
                   'latency="0s" sharing_policy="SHARED"/>\n')
        for i in members:
            out.append(f'      <link id="cxl-{i}" '
                       f'bandwidth="{dev.host_bw.value:.6g}Bps" '
                       f'latency="{dev_lat:.6g}s" '
                       'sharing_policy="SPLITDUPLEX"/>\n'
                       f'      <link id="nic-{i}" '
                       f'bandwidth="{net.link_bw.value:.6g}Bps" '
                       f'latency="{net_lat:.6g}s" '
                       'sharing_policy="SPLITDUPLEX"/>\n')
        for i in members:
            out.append(f'      <route src="node-{i}" dst="pod{k}-gw">'
                       f'<link_ctn id="nic-{i}" direction="UP"/>'
                       '</route>\n')
            for j in members:
                if j > i:
                    out.append(
                        f'      <route src="node-{i}" dst="node-{j}">'
                        f'<link_ctn id="cxl-{i}" direction="UP"/>'
                        f'<link_ctn id="pod{k}-dev"/>'
                        f'<link_ctn id="cxl-{j}" direction="DOWN"/>'
                        '</route>\n')
        out.append('    </zone>\n')
    for k in range(npods):
        out.append(f'    <link id="up-{k}" bandwidth="{up_bw:.6g}Bps" '
                   f'latency="{net_lat:.6g}s" '
                   'sharing_policy="SPLITDUPLEX"/>\n')
    for k in range(npods):
        for m in range(k + 1, npods):
            out.append(f'    <zoneRoute src="pod{k}" dst="pod{m}" '
                       f'gw_src="pod{k}-gw" gw_dst="pod{m}-gw">'
                       f'<link_ctn id="up-{k}" direction="UP"/>'
                       f'<link_ctn id="up-{m}" direction="DOWN"/>'
                       '</zoneRoute>\n')
    out.append('  </zone>\n</platform>\n')
    note = (f"{npods} pod(s) of {per_pod} hosts; in a pod {dev.name} "
            f"shared, {(msg.send_ns + msg.recv_ns) / 1e3:.3f} us device "
            f"time per message as latency; between pods {net.name}, "
            f"{4 * net_lat * 1e6:.2f} us, uplinks "
            f"{up_bw / 1e9:g} GB/s; {sw_s * 1e6:.3f} us MPI software per "
            "message")
    return Platform(f"pods{per_pod}-{dev.name}-{net.name}", "".join(out),
                    cluster_hosts(hosts), sw_s / 2, sw_s / 2, note)


POD_RE = re.compile(r"^pods(\d+)-([a-z0-9]+)-(.+)$")


def machine(latency_s: float, bw: float, cores: int = 2) -> Platform:
    xml = (HEADER +
           '  <!-- this machine, calibrated from MPICH over the cxl '
           'provider (bench/simgrid/project.py) -->\n'
           '  <zone id="machine" routing="Full">\n'
           f'    <host id="machine" speed="{HOST_SPEED}" core="{cores}"/>\n'
           f'    <link id="pool" bandwidth="{bw:.6g}Bps" latency="0s" '
           'sharing_policy="SHARED"/>\n'
           '    <route src="machine" dst="machine">'
           '<link_ctn id="pool"/></route>\n'
           '  </zone>\n'
           '</platform>\n')
    note = (f"1 host, {cores} cores, pool link {bw / 1e9:.3g} GB/s shared, "
            f"{latency_s * 1e6:.3f} us per message (CPU, on the sender)")
    return Platform("machine", xml, ("machine",), latency_s / 2,
                    latency_s / 2, note)


def build(name: str, hosts: int, sw_s: float,
          sharing: str = "shared") -> Platform:
    if name.startswith("cxl-"):
        dev = costs.DEVICES.get(name[4:])
        if dev is None:
            raise ValueError(f"unknown CXL device {name[4:]!r}: choose "
                             f"from {', '.join(costs.DEVICES)}")
        return cxl_switch(dev, hosts, sw_s, sharing)
    if name in costs.NETWORKS:
        return fat_tree(costs.NETWORKS[name], hosts, sw_s)
    m = POD_RE.match(name)
    if m:
        dev = costs.DEVICES.get(m.group(2))
        net = costs.NETWORKS.get(m.group(3))
        per_pod = int(m.group(1))
        if dev is None or net is None or per_pod < 1:
            raise ValueError(f"{name!r}: pods<hosts per pod>-<device>-"
                             f"<network>, device {'|'.join(costs.DEVICES)},"
                             f" network {'|'.join(costs.NETWORKS)}")
        return pods(dev, net, per_pod, hosts, sw_s)
    raise ValueError(f"unknown platform {name!r}: cxl-"
                     f"{'|cxl-'.join(costs.DEVICES)}|"
                     f"{'|'.join(costs.NETWORKS)}|pods<P>-<device>-"
                     "<network> "
                     "(the machine platform needs measurements: "
                     "bench/simgrid/project.py)")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("platform", help="cxl-cmpi, cxl-seed002, ib-hdr or "
                   "tcp-cx6")
    p.add_argument("--hosts", type=int, default=4096)
    p.add_argument("--sw-us", type=float, default=1.2,
                   help="MPI software time per message, us (default "
                        "%(default)s; project.py measures it)")
    p.add_argument("--sharing", choices=SHARINGS, default="shared",
                   help="cxl: how the device's bandwidth is shared "
                        "(default %(default)s)")
    p.add_argument("-o", "--out", type=Path, required=True,
                   help="platform XML to write")
    a = p.parse_args(argv)
    try:
        plat = build(a.platform, a.hosts, a.sw_us * 1e-6, a.sharing)
    except ValueError as e:
        p.error(str(e))
    a.out.write_text(plat.xml)
    print(f"{a.out}: {plat.name}: {plat.note}")
    print("smpirun options: " + " ".join(plat.smpi_options()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
