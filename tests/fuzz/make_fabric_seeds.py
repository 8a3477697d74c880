#!/usr/bin/env python3
"""Write the seed inputs of fuzz_fabric (tests/fuzz/fabric_seeds/).

Each seed is a valid record list (see fuzz_fabric.c) that reaches one of
the provider's paths, so that the fuzzer mutates from there: chunked and
bulk messages, a first cell naming its data slot, pointer descriptors,
acknowledgements, RMA writes, read requests and answers, and patched
transfer-area and region-table fields.
"""
import struct
from pathlib import Path

EAGER, FIRST, CONT, BULK, PTR, ACK = 1, 2, 3, 4, 5, 6
TAGGED, DATA, WRITE, READREQ, READRSP = 256, 512, 1024, 2048, 4096
SLOT = 32768


def msg(op, payload):
    return bytes([0]) + struct.pack("<HH", op, len(payload)) + payload


def recv(n, tag, flags):
    return bytes([5]) + struct.pack("<IQB", n, tag, flags)


def progress(n=15):
    return bytes([6, n])


def rma(w, key, addr, n):
    return bytes([7]) + struct.pack("<BQQI", w, key, addr, n)


def patch(kind, off, data, wide=False):
    head = struct.pack("<I" if wide else "<H", off)
    return bytes([kind]) + head + bytes([len(data)]) + data


SEEDS = {
    "first_bulk": msg(FIRST | TAGGED, struct.pack("<QQ", 5, 100000) + b"x" * 32)
    + msg(BULK, struct.pack("<IIQ", 0, 65536, 1))
    + msg(BULK, struct.pack("<IIQ", 1, 34000, 1))
    + recv(200000, 5, 1) + progress(),
    "first_slot": msg(FIRST | TAGGED | SLOT, struct.pack("<IIQ", 0, 3000, 1)
                      + struct.pack("<QQ", 4, 3000))
    + recv(4096, 4, 1) + progress(),
    "first_chunks": msg(FIRST, struct.pack("<QQ", 0, 700) + b"y" * 200)
    + msg(CONT, b"z" * 200) + msg(CONT, b"z" * 280) + recv(1000, 0, 0)
    + progress(),
    "ptr": msg(FIRST | TAGGED, struct.pack("<QQ", 9, 5000) + b"p" * 16)
    + msg(PTR, struct.pack("<IIQQQ", 40, 0, 1, 1 << 20, 5000 - 16))
    + recv(8000, 9, 3) + progress(),
    "ack": msg(EAGER | TAGGED, struct.pack("<Q", 3) + b"hello")
    + msg(ACK, struct.pack("<IIQ", 35, 0, 7)) + recv(64, 3, 1) + progress(),
    "write": msg(EAGER | WRITE | DATA, struct.pack("<QQQ", 7, 128, 99) + b"w" * 64)
    + msg(FIRST | WRITE, struct.pack("<QQQ", 7, 0, 70000) + b"w" * 100)
    + msg(BULK, struct.pack("<IIQ", 2, 65536, 1)) + progress(),
    "readreq": msg(EAGER | READREQ, struct.pack("<Q", 0)
                   + struct.pack("<QQQQ", 7, 0, 4096, 1)) + progress(),
    "readrsp": rma(0, 7, 0, 3000) + msg(EAGER | READRSP, struct.pack("<Q", 1)
                                        + b"r" * 100) + progress(),
    "rma_direct": rma(3, 7, 0, 1000) + rma(2, 7, 100, 5000)
    + rma(1, 99, 0, 64) + progress(),
    "xa_header": patch(1, 8, struct.pack("<Q", 1 << 40), wide=True)
    + msg(BULK, struct.pack("<IIQ", 3, 4096, 1)) + progress(),
    "mrtab_entry": patch(3, 64 + 8, struct.pack("<Q", (1 << 62)))
    + patch(3, 64 + 16, struct.pack("<Q", 1 << 40)) + rma(2, 7, 0, 4096)
    + progress(),
    "inbox": patch(4, 0, b"\xff" * 32) + patch(2, 32, b"\x00" * 16)
    + progress(),
    "multi_recv": recv(4096, 0, 8) + msg(EAGER, struct.pack("<Q", 0) + b"m" * 100)
    + msg(EAGER, struct.pack("<Q", 0) + b"n" * 200) + progress(),
}

out = Path(__file__).resolve().parent / "fabric_seeds"
out.mkdir(exist_ok=True)
for name, data in SEEDS.items():
    (out / name).write_bytes(data)
print(f"wrote {len(SEEDS)} seeds to {out}")
