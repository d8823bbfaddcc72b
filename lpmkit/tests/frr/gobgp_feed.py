"""Feeds routes to gobgpd's global RIB over its gRPC API (AddPathStream, what `gobgp mrt
inject global` uses), read from standard input one per line:

    A PREFIX NEXTHOP      announce (or replace) PREFIX via NEXTHOP
    W PREFIX              withdraw PREFIX
    sync                  wait until gobgpd has taken everything sent so far, then print
                          "synced N" (N: lines taken in all)

Paths are sent in order, up to 256 per request, as BGP wire-format NLRI and attributes
(ORIGIN, NEXT_HOP or MP_REACH_NLRI; gobgpd prepends its AS when it advertises them). Needs
Python's grpcio (Debian: python3-grpcio). Usage: gobgp_feed.py HOST:PORT
"""

import ipaddress
import sys

import grpc

METHOD = "/apipb.GobgpApi/AddPathStream"


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(number, data):
    """A length-delimited protobuf field."""
    return varint(number << 3 | 2) + varint(len(data)) + data


def number_field(number, value):
    return varint(number << 3) + varint(value)


def path(op, prefix, nexthop=None):
    """An apipb.Path: is_withdraw (5), family (9: afi 1, safi 2), nlri_binary (20),
    pattrs_binary (21)."""
    net = ipaddress.ip_network(prefix)
    v6 = net.version == 6
    nlri = bytes([net.prefixlen]) + net.network_address.packed[: (net.prefixlen + 7) // 8]
    p = number_field(5, 1) if op == "W" else b""
    p += field(9, number_field(1, 2 if v6 else 1) + number_field(2, 1))
    p += field(20, nlri)
    if op == "A":
        p += field(21, bytes([0x40, 1, 1, 0]))  # ORIGIN IGP
        nh = ipaddress.ip_address(nexthop).packed
        if v6:
            mp = bytes([0, 2, 1, len(nh)]) + nh + bytes([0]) + nlri
            p += field(21, bytes([0x80, 14, len(mp)]) + mp)
        else:
            p += field(21, bytes([0x40, 3, 4]) + nh)
    return p


def request(paths):
    """An apipb.AddPathStreamRequest: table_type GLOBAL (0, the default), paths (3)."""
    return b"".join(field(3, p) for p in paths)


def batches(lines):
    """The stream's requests, up to the next `sync` line (or the end)."""
    paths = []
    for line in lines:
        words = line.split()
        if not words:
            continue
        if words[0] == "sync":
            break
        paths.append(path(*words))
        if len(paths) == 256:
            yield request(paths)
            paths = []
    if paths:
        yield request(paths)


def main():
    channel = grpc.insecure_channel(sys.argv[1])
    call = channel.stream_unary(METHOD)
    lines = iter(sys.stdin.readline, "")
    taken = 0
    while True:
        counted = []

        def counting():
            for line in lines:
                counted.append(line)
                yield line

        call(batches(counting()), timeout=3600, wait_for_ready=True)
        taken += sum(1 for line in counted if line.split()[:1] in (["A"], ["W"]))
        if not counted:
            return
        print("synced", taken, flush=True)


if __name__ == "__main__":
    main()
