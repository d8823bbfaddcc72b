"""lpmkit: longest-prefix-match route lookup on numpy arrays.

The schemes of the LPM literature (DXR, Poptrie, Spider, DIR-24-8, ...) from Rust,
behind one class, :class:`Table`::

    import numpy as np, lpmkit
    t = lpmkit.Table.from_file("ipv4-routeviews-2015-11-01-originas.txt.xz", value=lpmkit.asn)
    t.lookup("8.8.8.8")                                    # 15169
    t.lookup(np.array([0x08080808, 0x01010101], dtype=np.uint32))   # array([15169, 13335])
    t.lookup_prefix("8.8.8.8")                             # '8.8.8.0/24'

Lookups of numpy arrays read the array in place, write the result in place and release
the GIL for the whole batch. :mod:`lpmkit.dask` annotates Dask dataframes partition by
partition.
"""

from ._lpmkit import Table, __version__, schemes

__all__ = ["Table", "asn", "schemes", "__version__"]


def asn(name: str) -> int:
    """An origin AS written ``AS15169`` (or ``15169``) as the int 15169.

    Meant as the ``value`` converter of :meth:`Table.from_file` for origin-AS tables.
    """
    s = name.strip()
    if s[:2].upper() == "AS":
        s = s[2:]
    try:
        return int(s)
    except ValueError:
        raise ValueError(f"{name!r} is not an AS number") from None
