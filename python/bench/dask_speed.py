"""Dask throughput of lpmkit.dask.annotate: N uint32 addresses in Parquet (under /tmp),
annotated with origin AS (the RouteViews origin-AS table) on a LocalCluster of 1 and of
2 workers, written back to Parquet.

    python python/bench/dask_speed.py [--n 100000000] [--dir /tmp/lpmkit-dask]
"""

import argparse
import os
import pathlib
import shutil
import time

import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[2]


def main():
    ap = argparse.ArgumentParser()
    data = pathlib.Path(os.environ.get("LPMKIT_DATA", REPO.parent / "shared" / "data"))
    ap.add_argument("--table", default=data / "fib" / "ipv4-routeviews-2015-11-01-originas.txt.xz")
    ap.add_argument("--n", type=int, default=100_000_000)
    ap.add_argument("--partitions", type=int, default=40)
    ap.add_argument("--dir", default="/tmp/lpmkit-dask")
    ap.add_argument("--workers", default="1,2")
    a = ap.parse_args()

    import dask.dataframe as dd
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq
    from distributed import Client, LocalCluster

    import lpmkit
    import lpmkit.dask

    d = pathlib.Path(a.dir)
    src = d / "addrs"
    if not src.exists():
        src.mkdir(parents=True)
        rng = np.random.default_rng(7)
        per = a.n // a.partitions
        for i in range(a.partitions):
            n = per if i < a.partitions - 1 else a.n - per * (a.partitions - 1)
            addrs = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
            pq.write_table(pa.table({"dst": addrs}), src / f"part.{i:03d}.parquet")
    table = lpmkit.Table.from_file(a.table, value=lpmkit.asn)
    print(f"{a.n:,} addresses in {a.partitions} Parquet files; table {table}")
    for w in [int(x) for x in a.workers.split(",")]:
        out = d / f"out-{w}"
        shutil.rmtree(out, ignore_errors=True)
        with LocalCluster(n_workers=w, threads_per_worker=1, processes=True,
                          dashboard_address=None, memory_limit="6GiB") as cluster, Client(cluster):
            flows = dd.read_parquet(src)
            t0 = time.perf_counter()
            lpmkit.dask.annotate(flows, "dst", table, value_column="origin_as").to_parquet(out)
            s = time.perf_counter() - t0
        print(f"{w} worker(s): {s:6.1f} s, {a.n / s / 1e6:6.2f} M addresses/s")


if __name__ == "__main__":
    main()
