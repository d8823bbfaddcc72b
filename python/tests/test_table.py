"""lpmkit.Table: answers equal to the Rust library's on every real table, numpy in and
out, updates, pickling, and bad input raising exceptions with the reason."""

import csv
import io
import ipaddress
import pickle
import subprocess
import threading

import numpy as np
import pytest

import lpmkit
from conftest import fib_tables


SMALL = [
    ("0.0.0.0/0", "default"),
    ("10.0.0.0/8", 1),
    ("10.1.0.0/16", 2),
    ("10.1.2.3/32", 1),
]


def small():
    return lpmkit.Table.from_routes(SMALL)


def boundary_keys(prefixes, family, step):
    """First and last address of every `step`-th prefix, and their neighbours."""
    top = (1 << (32 if family == 4 else 128)) - 1
    keys = []
    for p in prefixes[::step]:
        net = ipaddress.ip_network(p)
        for a in (int(net.network_address), int(net.broadcast_address)):
            keys.extend(k for k in (a - 1, a, a + 1) if 0 <= k <= top)
    return keys


def library_answers(lpmkit_bin, table, keys, family):
    """The Rust library's answers (`lpmkit annotate` with the reference trie)."""
    cls = ipaddress.IPv4Address if family == 4 else ipaddress.IPv6Address
    text = "".join(f"{cls(k)}\n" for k in keys)
    out = subprocess.run(
        [str(lpmkit_bin), "annotate", "-t", str(table), "-s", "trie"],
        input=text.encode(),
        capture_output=True,
        check=True,
    ).stdout.decode()
    rows = list(csv.reader(io.StringIO(out)))
    assert rows[0] == ["address", "prefix", "value"]
    return rows[1:]


@pytest.mark.parametrize("path", fib_tables(), ids=lambda p: p.name)
def test_real_tables_agree_with_the_library(path, lpmkit_bin):
    t = lpmkit.Table.from_file(path)
    assert len(t) > 0
    routes = [p for p, _ in t.routes()]
    rng = np.random.default_rng(1)
    if t.family == 4:
        keys = rng.integers(0, 1 << 32, 30_000, dtype=np.uint64).tolist()
    else:
        # Random keys inside random routes, plus uniform ones.
        keys = [int(ipaddress.ip_network(p).network_address) | int(rng.integers(0, 1 << 20))
                for p in rng.choice(routes, 10_000)]
        keys = [k if k < 1 << 128 else 0 for k in keys]
        keys += [int(x) << 64 for x in rng.integers(0, 1 << 63, 5_000, dtype=np.uint64)]
    keys += boundary_keys(routes, t.family, max(1, len(routes) // 5_000))
    want = library_answers(lpmkit_bin, path, keys, t.family)
    assert len(want) == len(keys)

    if t.family == 4:
        arr = np.array(keys, dtype=np.uint32)
    else:
        arr = np.array([list(k.to_bytes(16, "big")) for k in keys], dtype=np.uint8)
    got = t.lookup(arr)
    assert got.dtype == object and len(got) == len(keys)
    nets, lens = t.lookup_prefix(arr)
    for i, (addr, prefix, value) in enumerate(want):
        assert (got[i] if got[i] is not None else "") == value, (addr, prefix)
        if prefix:
            n = nets[i] if t.family == 4 else bytes(nets[i])
            net = ipaddress.IPv4Address(int(n)) if t.family == 4 else ipaddress.IPv6Address(n)
            assert f"{net}/{lens[i]}" == prefix, addr
        else:
            assert lens[i] == -1, addr
    # The convenience paths answer the same: strings, ipaddress objects, one at a time.
    sample = list(range(0, len(keys), 97))
    as_text = [want[i][0] for i in sample]
    assert t.lookup(as_text) == [got[i] for i in sample]
    assert t.lookup([ipaddress.ip_address(a) for a in as_text]) == [got[i] for i in sample]
    assert t.lookup_prefix(as_text) == [want[i][1] or None for i in sample]
    for i in sample[:50]:
        assert t.lookup(want[i][0]) == got[i]


def test_origin_as_values_are_ints(data):
    t = lpmkit.Table.from_file(
        data / "fib" / "ipv4-routeviews-2015-11-01-originas.txt.xz", value=lpmkit.asn
    )
    assert t.numeric and t.scheme in ("d18r", "d16r", "poptrie18")
    # auto timed its candidates on this table and says which it took.
    assert t.auto_choice is None or t.auto_choice.startswith(f"auto chose {t.scheme},")
    assert t.lookup("8.8.8.8") == 15169
    r = t.lookup(np.array([0x08080808, 0], dtype=np.uint32))
    assert r.dtype == np.int64 and r.tolist() == [15169, -1]
    assert t.lookup(np.array([0], dtype=np.uint32), default=0).tolist() == [0]


def test_lookups_of_every_input_kind():
    t = small()
    assert repr(t) == "<lpmkit.Table IPv4, 4 routes, 3 values, scheme d16r>"
    assert (t.family, t.scheme, t.model, len(t)) == (4, "d16r", "in place, one instance", 4)
    assert t.lookup("10.1.2.3") == 1
    assert t.lookup(ipaddress.IPv4Address("10.1.2.4")) == 2
    assert t.lookup(0x0B000000) == "default"
    assert t.lookup(["10.1.0.1", "10.2.0.0"]) == [2, 1]
    assert t.lookup(("10.1.0.1",)) == [2]
    assert t.lookup_prefix("10.1.2.3") == "10.1.2.3/32"
    assert t.lookup_prefix(["10.1.9.9"]) == ["10.1.0.0/16"]
    a = np.array([0x0A010203, 0x0A010204, 0x0B000000], dtype=np.uint32)
    assert t.lookup(a).tolist() == [1, 2, "default"]
    # A non-contiguous view is read too.
    assert t.lookup(np.repeat(a, 2)[::2]).tolist() == [1, 2, "default"]
    assert t.values() == ["default", 1, 2]
    ids = t.lookup_ids(a)
    assert ids.dtype == np.uint32 and [t.values()[i - 1] for i in ids] == [1, 2, "default"]


def test_numpy_output_in_place():
    t = lpmkit.Table.from_routes([("10.0.0.0/8", 7), ("10.1.0.0/16", 8)])
    assert t.numeric
    keys = np.array([0x0A000001, 0x0A010001, 0x0B000000] * 1000, dtype=np.uint32)
    out = np.empty(len(keys), dtype=np.int64)
    r = t.lookup(keys, out=out)
    assert r is out and out[:3].tolist() == [7, 8, -1]
    ids = np.zeros(len(keys), dtype=np.uint32)
    assert t.lookup_ids(keys, out=ids) is ids and ids[:3].tolist() == [1, 2, 0]
    with pytest.raises(ValueError, match="out has 2 elements"):
        t.lookup(keys, out=np.empty(2, dtype=np.int64))
    with pytest.raises(TypeError):
        t.lookup(keys, out=np.empty(len(keys), dtype=np.int32))
    with pytest.raises(TypeError, match="default must be an int"):
        t.lookup(keys, default="none")


def test_ipv6():
    t = lpmkit.Table.from_routes([("::/0", "up"), ("2001:db8::/32", 32), ("2001:db8:1::/48", 48)])
    assert t.family == 6 and t.scheme == "poptrie16"
    assert t.lookup("2001:db8:1::5") == 48
    assert t.lookup(ipaddress.IPv6Address("2001:db8:2::")) == 32
    keys = np.array(
        [list(ipaddress.IPv6Address(a).packed) for a in ("2001:db8:1::5", "2001:db9::", "2001:db8::1")],
        dtype=np.uint8,
    )
    assert t.lookup(keys).tolist() == [48, "up", 32]
    nets, lens = t.lookup_prefix(keys)
    assert nets.shape == (3, 16) and lens.tolist() == [48, 0, 32]
    assert ipaddress.IPv6Address(bytes(nets[0])) == ipaddress.IPv6Address("2001:db8:1::")


def test_updates_while_other_threads_look_up():
    t = small()
    assert t.insert("10.2.0.0/16", "new") is None
    assert t.insert(ipaddress.ip_network("10.1.0.0/16"), 3) == 2
    assert t.remove("0.0.0.0/0") == "default"
    assert t.remove("0.0.0.0/0") is None
    assert t.lookup(["10.2.0.1", "10.1.0.1", "11.0.0.0"]) == ["new", 3, None]
    assert t.lookup_prefix("11.0.0.0") is None

    keys = np.arange(0xC0000000, 0xC0000000 + 65536, dtype=np.uint32)
    errors, stop = [], threading.Event()

    def reader():
        try:
            while not stop.is_set():
                r = t.lookup(keys)
                ok = set(r.tolist()) <= {None} | set(range(100, 400))
                if not ok:
                    errors.append(set(r.tolist()))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=reader) for _ in range(2)]
    for th in threads:
        th.start()
    for i in range(256):
        t.insert(f"192.0.{i}.0/24", 100 + i)
        if i % 3 == 0:
            t.remove(f"192.0.{i}.0/24")
    stop.set()
    for th in threads:
        th.join()
    assert not errors


def test_the_gil_is_released_during_a_batch():
    t = lpmkit.Table.from_routes([("10.0.0.0/8", 1)])
    keys = np.random.default_rng(0).integers(0, 1 << 32, 1 << 22, dtype=np.uint64).astype(np.uint32)
    ticks = []
    running = threading.Event()

    def ticker():
        running.set()
        while len(ticks) < 10_000_000 and not done.is_set():
            ticks.append(1)

    done = threading.Event()
    th = threading.Thread(target=ticker)
    th.start()
    running.wait()
    before = len(ticks)
    for _ in range(5):
        t.lookup_ids(keys)
    during = len(ticks) - before
    done.set()
    th.join()
    assert during > 0


def test_pickle_and_bytes_round_trip():
    t = small()
    t.insert("198.51.100.0/24", -5)
    u = pickle.loads(pickle.dumps(t))
    assert u.routes() == t.routes() and u.scheme == t.scheme
    assert u.lookup("198.51.100.7") == -5
    v = lpmkit.Table.from_bytes(t.to_bytes())
    assert v.routes() == t.routes()
    big = lpmkit.Table.from_routes([("2001:db8::/32", 2**100), ("2001:db9::/32", "s")], scheme="trie")
    w = pickle.loads(pickle.dumps(big, protocol=pickle.HIGHEST_PROTOCOL))
    assert w.lookup("2001:db8::1") == 2**100 and w.scheme == "trie"


def test_bad_input_raises_with_the_reason(tmp_path):
    t = small()
    with pytest.raises(ValueError, match=r'"10\.0\.0\.256" is not an IPv4 address \(item 1\)'):
        t.lookup(["10.0.0.1", "10.0.0.256"])
    with pytest.raises(ValueError, match="not an IPv4 address"):
        t.lookup("not an address")
    with pytest.raises(ValueError, match="is an IPv6 address, the table is IPv4"):
        t.lookup(ipaddress.IPv6Address("::1"))
    with pytest.raises(ValueError, match="too large"):
        t.lookup(1 << 40)
    with pytest.raises(TypeError, match="dtype uint32.*dtype int64"):
        t.lookup(np.array([1, 2], dtype=np.int64))
    with pytest.raises(TypeError, match="dtype float64"):
        t.lookup_ids(np.array([1.5]))
    with pytest.raises(TypeError, match="2-D array of dtype uint32"):
        t.lookup(np.zeros((2, 2), dtype=np.uint32))
    t6 = lpmkit.Table.from_routes([("::/0", 1)])
    with pytest.raises(TypeError, match=r"shape \(n, 16\)"):
        t6.lookup(np.zeros((3, 4), dtype=np.uint8))
    with pytest.raises(TypeError, match="addresses are str, int"):
        t.lookup(3.5)
    with pytest.raises(TypeError, match="addresses are str, int"):
        t.lookup([None])
    with pytest.raises(ValueError, match="host bits"):
        t.insert("10.0.0.1/8", 1)
    with pytest.raises(TypeError, match="route values are int or str, not float"):
        t.insert("10.0.0.0/8", 1.5)
    with pytest.raises(TypeError, match=r"route 0 is not a \(prefix, value\) pair"):
        lpmkit.Table.from_routes(["10.0.0.0/8"])
    with pytest.raises(ValueError, match='unknown scheme "nope"'):
        lpmkit.Table(4, scheme="nope")
    with pytest.raises(ValueError, match="family must be 4 or 6"):
        lpmkit.Table(5)
    with pytest.raises(ValueError, match="unknown setting"):
        lpmkit.Table(4, scheme="d18r", settings="bogus=1")
    with pytest.raises(FileNotFoundError):
        lpmkit.Table.from_file(tmp_path / "missing.txt")
    bad = tmp_path / "bad.txt"
    bad.write_text("10.0.0.0/8 a\n10.0.0.1/8 b\n")
    with pytest.raises(ValueError, match=r"bad\.txt:2: prefix 10\.0\.0\.1/8 has host bits set"):
        lpmkit.Table.from_file(bad)
    with pytest.raises(ValueError, match="not an AS number"):
        lpmkit.Table.from_file(bad.with_name("ok.txt") if False else _write(tmp_path, "ok.txt", "10.0.0.0/8 x\n"), value=lpmkit.asn)
    # Foreign, corrupt and truncated blobs.
    blob = t.to_bytes()
    for junk, why in [
        (b"", "shorter than the header"),
        (b"PK\x03\x04" + bytes(40), "no LPMKITRT magic"),
        (blob[:-1], "checksum mismatch"),
        (blob[:20], "checksum mismatch|truncated"),
        (blob[:30] + bytes([blob[30] ^ 1]) + blob[31:], "checksum mismatch"),
    ]:
        with pytest.raises(ValueError, match=why):
            lpmkit.Table.from_bytes(junk)
    with pytest.raises(ValueError, match="not a valid serialised table"):
        pickle.loads(pickle.dumps(t).replace(b"LPMKITRT", b"LPMKITXX"))


def _write(d, name, text):
    p = d / name
    p.write_text(text)
    return p


def test_schemes_and_every_scheme_answers_alike():
    assert lpmkit.schemes(6)[0] == "auto" and "d18r" not in lpmkit.schemes(6)
    keys = np.random.default_rng(3).integers(0, 1 << 32, 5000, dtype=np.uint64).astype(np.uint32)
    routes = [(f"{a}.0.0.0/8", a) for a in range(0, 256, 3)] + [("10.1.0.0/16", 999)]
    want = lpmkit.Table.from_routes(routes, scheme="trie").lookup(keys)
    for s in lpmkit.schemes(4):
        if s == "dpdk-fib":
            continue
        t = lpmkit.Table.from_routes(routes, scheme=s)
        assert (t.lookup(keys) == want).all(), s


def test_packed_bytes_networks_and_buffers():
    t = small()
    # Packed bytes are one address (network order), as ipaddress.ip_address takes them,
    # not a sequence of four addresses.
    packed = ipaddress.IPv4Address("10.1.2.3").packed
    assert t.lookup(packed) == t.lookup("10.1.2.3") == 1
    assert t.lookup(bytearray(packed)) == 1
    assert t.lookup(memoryview(packed)) == 1
    assert t.lookup([packed, b"\x0b\x00\x00\x00"]) == [1, "default"]
    assert t.lookup_prefix(packed) == "10.1.2.3/32"
    with pytest.raises(ValueError, match="packed IPv4 address is 4 bytes, not 3"):
        t.lookup(b"\x0a\x01\x02")
    with pytest.raises(ValueError, match=r"is 4 bytes, not 16 \(item 0\)"):
        t.lookup([bytes(16)])
    t6 = lpmkit.Table.from_routes([("2001:db8::/32", 6)])
    assert t6.lookup(ipaddress.IPv6Address("2001:db8::1").packed) == 6
    # A network is not an address: refused, never expanded into its addresses.
    for net in [ipaddress.ip_network("10.0.0.0/8"), ipaddress.ip_network("0.0.0.0/0")]:
        with pytest.raises(TypeError, match="is a network, not an address"):
            t.lookup(net)
        with pytest.raises(TypeError, match="is a network, not an address"):
            t.lookup_prefix(net)
        with pytest.raises(TypeError, match="is a network, not an address"):
            t.lookup([net])
    assert t.lookup(ipaddress.ip_network("10.1.2.0/30").network_address) == 2
    # Any bytes-like blob loads.
    blob = t.to_bytes()
    for b in [bytearray(blob), memoryview(blob), memoryview(bytearray(blob))]:
        assert lpmkit.Table.from_bytes(b).routes() == t.routes()
    with pytest.raises(TypeError, match="from_bytes takes bytes, bytearray or memoryview, not str"):
        lpmkit.Table.from_bytes("LPMKITRT")
