"""Lookup speed of lpmkit.Table against the Rust `lpmkit bench` figure of the same scheme
and against pytricia's per-call loop, on the bart IPv4 table and 2^24 uniform keys.

    python python/bench/lookup_speed.py [--table T] [--scheme d18r] [--runs 5]

Needs the lpmkit binary (target/release/lpmkit or $LPMKIT_BIN) and pytricia
(`pip install pytricia`). Prints the figures and the two ratios the issue asks for.
"""

import argparse
import os
import pathlib
import re
import statistics
import subprocess
import time

import numpy as np

import lpmkit

REPO = pathlib.Path(__file__).resolve().parents[2]


def rust_bench(binary, table, scheme, runs):
    out = subprocess.run(
        [str(binary), "bench", "-t", str(table), "-s", scheme, "--pattern", "rnd",
         "--threads", "1", "--runs", str(runs)],
        capture_output=True, text=True, check=True,
    ).stdout
    for line in out.splitlines():
        f = line.split()
        if f and f[0] == scheme and f[2] == "1":
            return float(f[3]), line
    raise SystemExit(f"no {scheme} line in:\n{out}")


def timed(f, runs):
    ts = []
    for _ in range(runs):
        t0 = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def main():
    ap = argparse.ArgumentParser()
    data = pathlib.Path(os.environ.get("LPMKIT_DATA", REPO.parent / "shared" / "data"))
    ap.add_argument("--table", default=data / "fib" / "ipv4-bart-tier1-prefixes.txt.xz")
    ap.add_argument("--scheme", default="d18r")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--keys", type=int, default=1 << 24)
    ap.add_argument("--bin", default=os.environ.get("LPMKIT_BIN", REPO / "target" / "release" / "lpmkit"))
    a = ap.parse_args()

    # Values: the assigned next hops nh1..nh200 as ints (an int64 result, as the Rust
    # bench's next-hop ids).
    t = lpmkit.Table.from_file(a.table, scheme=a.scheme, value=lambda s: int(s[2:]))
    keys = np.random.default_rng(1).integers(0, 1 << 32, a.keys, dtype=np.uint64).astype(np.uint32)
    out = np.empty(len(keys), dtype=np.int64)
    t.lookup(keys, out=out)  # warm up
    py_s = timed(lambda: t.lookup(keys, out=out), a.runs)
    ids = np.empty(len(keys), dtype=np.uint32)
    ids_s = timed(lambda: t.lookup_ids(keys, out=ids), a.runs)
    py_mlps, ids_mlps = len(keys) / py_s / 1e6, len(keys) / ids_s / 1e6

    rust_mlps, rust_line = rust_bench(a.bin, a.table, t.scheme, a.runs)

    import pytricia

    pyt = pytricia.PyTricia(32)
    for prefix, value in t.routes():
        pyt[prefix] = value
    strs = [f"{k >> 24}.{(k >> 16) & 255}.{(k >> 8) & 255}.{k & 255}" for k in keys.tolist()]
    get = pyt.get
    t0 = time.perf_counter()
    res = [get(s) for s in strs]
    tri_s = time.perf_counter() - t0
    tri_mlps = len(keys) / tri_s / 1e6
    # Same answers (pytricia None = no route = -1 here).
    assert [(-1 if r is None else r) for r in res[:100000]] == out[:100000].tolist()

    print(f"table {pathlib.Path(a.table).name}: {len(t)} routes, scheme {t.scheme}, {len(keys)} uniform keys")
    print(f"rust  lpmkit bench (1 thread, median of {a.runs}): {rust_mlps:8.1f} Mlps   [{rust_line.strip()}]")
    print(f"python Table.lookup(numpy, out=int64):   {py_mlps:8.1f} Mlps  = {py_mlps / rust_mlps:.2f}x rust")
    print(f"python Table.lookup_ids(numpy, out=u32): {ids_mlps:8.1f} Mlps  = {ids_mlps / rust_mlps:.2f}x rust")
    print(f"pytricia per-call loop (str keys):       {tri_mlps:8.2f} Mlps  -> Table.lookup = {py_mlps / tri_mlps:.0f}x pytricia")


if __name__ == "__main__":
    main()
