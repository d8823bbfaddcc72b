"""lpmkit.dask.annotate on a small Parquet dataset and a 2-worker LocalCluster: the
answers equal Table.lookup's, and the table enters the graph once."""

import os

import numpy as np
import pytest

import lpmkit

if os.environ.get("LPMKIT_REQUIRE_DASK"):
    import dask.dataframe as dd  # noqa: F401  (a failure, not a skip, in CI)
dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")
pd = pytest.importorskip("pandas")
pytest.importorskip("pyarrow")

import lpmkit.dask  # noqa: E402


def table():
    routes = [(f"{a}.0.0.0/8", 64500 + a) for a in range(1, 224, 2)]
    routes += [("10.1.0.0/16", 1), ("10.1.2.0/24", 2)]
    return lpmkit.Table.from_routes(routes)


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    )
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


def test_annotate_on_a_local_cluster(tmp_path, client):
    t = table()
    rng = np.random.default_rng(5)
    addrs = rng.integers(0, 1 << 32, 40_000, dtype=np.uint64).astype(np.uint32)
    df = pd.DataFrame({"dst": addrs, "bytes": np.arange(len(addrs))})
    dd.from_pandas(df, npartitions=8).to_parquet(tmp_path / "flows")
    flows = dd.read_parquet(tmp_path / "flows")

    out = lpmkit.dask.annotate(flows, "dst", t, value_column="asn", prefix_column="prefix")
    # The table is one key of the graph, whatever the number of partitions.
    graph = dict(out.__dask_graph__())
    tables = [
        k
        for k, v in graph.items()
        if isinstance(v, lpmkit.Table) or isinstance(getattr(v, "value", None), lpmkit.Table)
    ]
    assert len(tables) == 1, tables
    got = out.compute().sort_values("bytes")
    assert got["asn"].dtype == np.int64
    want = t.lookup(np.ascontiguousarray(got["dst"].to_numpy(dtype=np.uint32)))
    assert (got["asn"].to_numpy() == want).all()
    # (Dask may turn None into NaN in a text column.)
    prefixes = [p if isinstance(p, str) else None for p in got["prefix"]]
    assert prefixes == t.lookup_prefix([int(a) for a in got["dst"]])
    assert len(got) == len(addrs)


def test_string_columns_and_ipv6(client):
    t6 = lpmkit.Table.from_routes([("2001:db8::/32", "doc"), ("::/0", "up")])
    df = pd.DataFrame({"ip": ["2001:db8::1", "2001:db9::1", "::1"] * 10})
    out = lpmkit.dask.annotate(dd.from_pandas(df, npartitions=3), "ip", t6).compute()
    assert out["value"].tolist() == ["doc", "up", "up"] * 10
