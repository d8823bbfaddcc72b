"""Annotate Dask dataframes with an lpmkit :class:`~lpmkit.Table`, partition by partition.

::

    import dask.dataframe as dd, lpmkit, lpmkit.dask
    from distributed import Client, LocalCluster

    client = Client(LocalCluster(n_workers=2))        # or Client("scheduler:8786")
    table = lpmkit.Table.from_file("ipv4-routeviews-2015-11-01-originas.txt.xz", value=lpmkit.asn)
    flows = dd.read_parquet("flows/")                  # a column "dst" of uint32 addresses
    out = lpmkit.dask.annotate(flows, "dst", table, value_column="origin_as")
    out.to_parquet("flows-annotated/")

The table travels to the workers once, not once per partition: it enters the task graph as
a single task (its pickle is :meth:`~lpmkit.Table.to_bytes`, a few MB for a full table),
which each worker computes or fetches once and keeps while the partitions that need it
run there; every partition task depends on that one key. Nothing here depends on the
cluster: the same code runs on a ``LocalCluster``, a real ``distributed`` cluster or the
local threaded scheduler.

An address column holds ``uint32`` IPv4 addresses (host order: the fast path, the
column's numpy array is looked up in place) or address strings (IPv4 or IPv6, parsed in
Rust). The value column is int64 when every value of the table is an int (misses -1, or
`default`), else object.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ._lpmkit import Table

__all__ = ["annotate", "annotate_partition"]


def annotate_partition(
    df: Any,
    column: str,
    table: Table,
    value_column: str = "value",
    prefix_column: Optional[str] = None,
    default: Any = None,
) -> Any:
    """Annotates one pandas dataframe (what :func:`annotate` maps over the partitions):
    adds `value_column` (and `prefix_column` if given) from the longest matching prefix of
    each address in `column`."""
    df = df.copy()
    col = df[column]
    if len(col) == 0:
        keys: Any = np.zeros(0, dtype=np.uint32) if table.family == 4 else []
    elif table.family == 4 and col.dtype.kind in "ui":
        keys = np.ascontiguousarray(col.to_numpy(), dtype=np.uint32)
    else:
        keys = col.astype(str).tolist()
    values = table.lookup(keys, default=default)
    if not isinstance(values, np.ndarray):
        if table.numeric:
            values = np.array([-1 if v is None else v for v in values], dtype=np.int64)
        else:
            values = np.asarray(values, dtype=object)
    df[value_column] = values
    if prefix_column is not None:
        if isinstance(keys, np.ndarray) and len(keys):
            nets, lens = table.lookup_prefix(keys)
            text = [None if l < 0 else f"{_v4(n)}/{l}" for n, l in zip(nets.tolist(), lens.tolist())]
        else:
            text = table.lookup_prefix(keys) if len(keys) else []
        df[prefix_column] = np.asarray(text, dtype=object)
    return df


def _v4(n: int) -> str:
    return f"{n >> 24}.{(n >> 16) & 255}.{(n >> 8) & 255}.{n & 255}"


def annotate(
    ddf: Any,
    column: str,
    table: Table,
    value_column: str = "value",
    prefix_column: Optional[str] = None,
    default: Any = None,
) -> Any:
    """A lazy Dask dataframe: `ddf` with `value_column` (the value of each address's
    longest matching prefix in `table`; `default` where none matches, -1 for an int64
    column when `default` is None) and, if `prefix_column` is given, the matched prefix
    as text. `column` holds uint32 IPv4 addresses or address strings.

    The table is shipped to the workers once (one key of the graph that every partition
    task depends on), not once per partition.
    """
    import dask
    import pandas as pd

    meta = ddf._meta.copy()
    meta[value_column] = pd.Series(dtype="int64" if table.numeric else object)
    if prefix_column is not None:
        meta[prefix_column] = pd.Series(dtype=object)
    shipped = dask.delayed(table, pure=True, traverse=False)
    return ddf.map_partitions(
        annotate_partition,
        column,
        shipped,
        value_column=value_column,
        prefix_column=prefix_column,
        default=default,
        meta=meta,
    )
