"""Type stubs of the Rust extension module (see lpmkit/__init__.py)."""

from os import PathLike
from typing import Any, Callable, Iterable, Optional, Sequence, Tuple, Union, overload
import ipaddress

import numpy as np
import numpy.typing as npt

__version__: str

Address = Union[str, int, bytes, bytearray, memoryview, ipaddress.IPv4Address, ipaddress.IPv6Address]
Prefix = Union[str, ipaddress.IPv4Network, ipaddress.IPv6Network]
Value = Union[int, str]

def schemes(family: Optional[Union[int, str]] = None) -> list[str]:
    """The scheme names a table can use (``"auto"`` first), for one family or both."""

class Table:
    """A longest-prefix-match routing table: prefixes with int or str values.

    The table owns its routes, its values and a lookup scheme (``"auto"``: DXR for IPv4,
    Poptrie for IPv6, chosen by size; or any name of :func:`schemes`). Lookups of numpy
    arrays read the input in place, write the output in place and release the GIL for
    the whole batch, so threads look up in parallel; :meth:`insert` and :meth:`remove`
    may run while other threads look up (each lookup sees each route before or after a
    change). Tables pickle (through :meth:`to_bytes`), so they ship to Dask or
    multiprocessing workers.
    """

    def __init__(
        self, family: Union[int, str, None] = 4, scheme: str = "auto", settings: Optional[str] = None
    ) -> None:
        """An empty table of `family` (4 or 6). `settings` are scheme settings,
        ``"key=value,..."`` (``lpmkit schemes`` lists them)."""

    @staticmethod
    def from_file(
        path: Union[str, "PathLike[str]"],
        scheme: str = "auto",
        value: Optional[Callable[[str], Value]] = None,
        settings: Optional[str] = None,
        assign_next_hops: int = 200,
    ) -> "Table":
        """Loads a routing table file: text ``PREFIX/LEN NEXTHOP`` lines (``.xz``/``.gz``
        read transparently), ``bgpdump -m`` text or an MRT RIB dump; the family is
        detected. Each next hop's text becomes its value, or ``value(text)`` if given
        (called once per distinct next hop; e.g. :func:`lpmkit.asn`). Prefix-only files
        get next hops ``nh1`` ... ``nh<assign_next_hops>``.

        Raises FileNotFoundError, or ValueError naming the file and line of bad input."""

    @staticmethod
    def from_routes(
        routes: Iterable[Tuple[Prefix, Value]],
        family: Union[int, str, None] = None,
        scheme: str = "auto",
        settings: Optional[str] = None,
    ) -> "Table":
        """A table of ``(prefix, value)`` pairs; the family is that of the first prefix
        unless given. A later route for a prefix replaces an earlier one."""

    @staticmethod
    def from_bytes(data: Union[bytes, bytearray, memoryview]) -> "Table":
        """A table from :meth:`to_bytes` (any bytes-like object). A corrupt, truncated or
        foreign blob raises ValueError saying what is wrong."""

    def to_bytes(self) -> bytes:
        """The table serialised: versioned, checksummed; routes, values, scheme."""

    @property
    def family(self) -> int:
        """4 or 6."""
    @property
    def scheme(self) -> str:
        """The scheme lookups run on (``auto`` resolved)."""
    @property
    def auto_choice(self) -> Optional[str]:
        """How ``auto`` chose the scheme by timing its candidates on this table (their
        rates), or None: a scheme named, or a table too small to measure."""
    @property
    def model(self) -> str:
        """How updates reach the scheme: in place, left-right twins, or rebuild."""
    @property
    def numeric(self) -> bool:
        """True if every value is an int that fits in int64: numpy lookups then return
        int64 arrays, else object arrays."""
    @property
    def memory_bytes(self) -> int:
        """Bytes of the lookup structure."""

    def __len__(self) -> int:
        """The number of routes."""

    def values(self) -> list[Value]:
        """Every distinct value; the value of id ``i`` (see :meth:`lookup_ids`) is
        ``values()[i - 1]``."""

    def routes(self) -> list[Tuple[str, Value]]:
        """Every route as ``(prefix, value)``, in prefix order."""

    def insert(self, prefix: Prefix, value: Value) -> Optional[Value]:
        """Sets the route of `prefix`; returns its previous value (or None)."""

    def remove(self, prefix: Prefix) -> Optional[Value]:
        """Removes the route of `prefix`; returns its value (or None if it had none)."""

    @overload
    def lookup(self, addrs: Address, default: Any = None) -> Any: ...
    @overload
    def lookup(
        self, addrs: npt.NDArray[Any], default: Any = None, out: Optional[npt.NDArray[np.int64]] = None
    ) -> npt.NDArray[Any]: ...
    @overload
    def lookup(self, addrs: Iterable[Address], default: Any = None) -> list[Any]: ...
    def lookup(self, addrs: Any, default: Any = None, out: Any = None) -> Any:
        """The value of the longest matching prefix of each address.

        * one address (str, int, ``ipaddress`` object, or the address packed in network
          order: 4 or 16 ``bytes``/``bytearray``/``memoryview``, as
          ``ipaddress.ip_address`` takes it): its value, or `default`;
        * a numpy array — IPv4: 1-D ``uint32`` (host order); IPv6: ``(n, 16)`` ``uint8``
          (network order): an int64 array if :attr:`numeric` (misses are `default`, -1
          if None; written into `out` if given), else an object array;
        * any other iterable of addresses: a list.

        Raises TypeError for a wrong dtype or shape, or for an ``ipaddress`` network (a
        network is not an address: look up its ``network_address``, or ``list()`` it to
        look up every address it holds), ValueError for a malformed address or packed
        bytes of the wrong length (naming the item)."""

    def lookup_ids(
        self, addrs: npt.NDArray[Any], out: Optional[npt.NDArray[np.uint32]] = None
    ) -> npt.NDArray[np.uint32]:
        """Value ids (0 = no route; see :meth:`values`) of a numpy array of addresses,
        written into `out` if given: the raw batch lookup, e.g. for
        ``pandas.Categorical.from_codes(ids.astype(int) - 1, table.values())``."""

    @overload
    def lookup_prefix(self, addrs: Address) -> Optional[str]: ...
    @overload
    def lookup_prefix(
        self, addrs: npt.NDArray[Any]
    ) -> Tuple[npt.NDArray[Any], npt.NDArray[np.int16]]: ...
    @overload
    def lookup_prefix(self, addrs: Iterable[Address]) -> list[Optional[str]]: ...
    def lookup_prefix(self, addrs: Any) -> Any:
        """The longest matching prefix of each address: ``"a.b.c.d/len"`` or None; for a
        numpy array, ``(networks, lengths)`` in the input's layout with length -1 for no
        route. (Answered by a reference trie, a few million per second.)"""

    def __reduce__(self) -> Any: ...

def _table_from_bytes(data: Union[bytes, bytearray, memoryview]) -> Table: ...
