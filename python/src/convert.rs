//! Conversions between Python objects and lpmkit's types: values, addresses, prefixes,
//! families, and numpy arrays of addresses read chunk by chunk.

use lpmkit::facade::{TableError, Value};
use lpmkit::prefix::parse_addr;
use lpmkit::{Address, Family, Prefix};
use numpy::{
    PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods,
};
use pyo3::exceptions::{PyOverflowError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyMemoryView, PyString};

use crate::CHUNK;

pub(crate) fn table_error(e: TableError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// A Python value as a table value.
pub(crate) fn to_value(v: &Bound<'_, PyAny>) -> PyResult<Value> {
    if let Ok(s) = v.downcast::<PyString>() {
        return Ok(Value::Str(s.to_cow()?.to_string()));
    }
    if v.is_instance_of::<pyo3::types::PyInt>() {
        return v
            .extract::<i128>()
            .map(Value::Int)
            .map_err(|_| PyOverflowError::new_err("an int value must fit in 128 bits"));
    }
    Err(PyTypeError::new_err(format!(
        "route values are int or str, not {}",
        v.get_type().name()?
    )))
}

pub(crate) fn from_value(py: Python<'_>, v: &Value) -> PyResult<PyObject> {
    Ok(match v {
        Value::Int(i) => i.into_pyobject(py)?.into_any().unbind(),
        Value::Str(s) => PyString::new(py, s).into_any().unbind(),
    })
}

pub(crate) fn family_name(f: Family) -> &'static str {
    match f {
        Family::V4 => "IPv4",
        Family::V6 => "IPv6",
    }
}

/// The bytes of a `bytes`, `bytearray` or `memoryview`, or `None` for other objects.
pub(crate) fn bytes_like(v: &Bound<'_, PyAny>) -> PyResult<Option<Vec<u8>>> {
    if let Ok(b) = v.downcast::<PyBytes>() {
        return Ok(Some(b.as_bytes().to_vec()));
    }
    if let Ok(b) = v.downcast::<PyByteArray>() {
        return Ok(Some(b.to_vec()));
    }
    if v.is_instance_of::<PyMemoryView>() {
        let b = v.call_method0("tobytes")?;
        return Ok(Some(b.downcast::<PyBytes>()?.as_bytes().to_vec()));
    }
    Ok(None)
}

/// True for an `ipaddress` network (which iterates over every address it holds).
pub(crate) fn is_network(v: &Bound<'_, PyAny>) -> PyResult<bool> {
    Ok(v.hasattr("network_address")? && v.hasattr("prefixlen")?)
}

/// A TypeError for a network given where addresses are expected.
pub(crate) fn network_given(v: &Bound<'_, PyAny>) -> PyErr {
    PyTypeError::new_err(format!(
        "{} is a network, not an address: look up its .network_address, or list(...) its \
         addresses to look up each of them",
        v.str().map(|s| s.to_string()).unwrap_or_default()
    ))
}

/// One address from a Python object: a string, an int, an `ipaddress` address, or the
/// address packed in network order as 4 (IPv4) or 16 (IPv6) bytes (`bytes`, `bytearray`,
/// `memoryview`), as `ipaddress.ip_address` takes it.
pub(crate) fn to_addr<A: Address>(v: &Bound<'_, PyAny>, at: Option<usize>) -> PyResult<A> {
    let whence = at.map_or(String::new(), |i| format!(" (item {i})"));
    if let Some(b) = bytes_like(v)? {
        let n = A::BITS as usize / 8;
        if b.len() != n {
            return Err(PyValueError::new_err(format!(
                "a packed {} address is {n} bytes, not {}{whence}",
                family_name(A::FAMILY),
                b.len()
            )));
        }
        let mut a = [0u8; 16];
        a[16 - n..].copy_from_slice(&b);
        return Ok(A::from_u128(u128::from_be_bytes(a)));
    }
    if is_network(v)? {
        return Err(network_given(v));
    }
    if let Ok(s) = v.downcast::<PyString>() {
        let s = s.to_cow()?;
        return parse_addr::<A>(s.trim()).ok_or_else(|| {
            let shown: String = s.chars().take(60).collect();
            PyValueError::new_err(format!(
                "{shown:?} is not an {} address{whence}",
                family_name(A::FAMILY)
            ))
        });
    }
    let is_ip = v.hasattr("packed")? && v.hasattr("version")?;
    if is_ip {
        let version: u8 = v.getattr("version")?.extract()?;
        if version != if A::BITS == 32 { 4 } else { 6 } {
            return Err(PyValueError::new_err(format!(
                "{} is an IPv{version} address, the table is {}{whence}",
                v.str()?,
                family_name(A::FAMILY)
            )));
        }
    }
    if is_ip || v.is_instance_of::<pyo3::types::PyInt>() {
        let n: u128 = v.call_method0("__int__")?.extract().map_err(|_| {
            PyValueError::new_err(format!("{} is not an address{whence}", v.str().unwrap()))
        })?;
        if A::BITS < 128 && n >> A::BITS != 0 {
            return Err(PyValueError::new_err(format!(
                "{n} is too large for an {} address{whence}",
                family_name(A::FAMILY)
            )));
        }
        return Ok(A::from_u128(n));
    }
    Err(PyTypeError::new_err(format!(
        "addresses are str, int, packed bytes, ipaddress objects or numpy arrays, not {}{whence}",
        v.get_type().name()?
    )))
}

/// An iterator over a collection of addresses, or a TypeError naming what was given.
pub(crate) fn iter_addrs<'py>(
    v: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, pyo3::types::PyIterator>> {
    if is_network(v)? {
        return Err(network_given(v));
    }
    v.try_iter().map_err(|_| {
        PyTypeError::new_err(format!(
            "addresses are str, int, ipaddress objects, numpy arrays or iterables of those, \
             not {}",
            v.get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default()
        ))
    })
}

/// A prefix from a string or an `ipaddress` network.
pub(crate) fn to_prefix<A: Address>(v: &Bound<'_, PyAny>) -> PyResult<Prefix<A>> {
    let s = v.str()?;
    let s = s.to_cow()?;
    s.trim()
        .parse::<Prefix<A>>()
        .map_err(|e| PyValueError::new_err(format!("{s:?}: {e}")))
}

pub(crate) fn prefix_family(v: &Bound<'_, PyAny>) -> PyResult<Family> {
    Ok(if v.str()?.to_cow()?.contains(':') {
        Family::V6
    } else {
        Family::V4
    })
}

pub(crate) fn parse_family(f: &Bound<'_, PyAny>) -> PyResult<Family> {
    if let Ok(n) = f.extract::<u8>() {
        match n {
            4 => return Ok(Family::V4),
            6 => return Ok(Family::V6),
            _ => {}
        }
    }
    if let Ok(s) = f.extract::<String>() {
        match s.to_ascii_lowercase().as_str() {
            "4" | "v4" | "ipv4" => return Ok(Family::V4),
            "6" | "v6" | "ipv6" => return Ok(Family::V6),
            _ => {}
        }
    }
    Err(PyValueError::new_err(format!(
        "family must be 4 or 6, not {}",
        f.repr()?
    )))
}

/// Addresses of a numpy array: an IPv4 `uint32` vector or IPv6 `(n, 16)` `uint8` rows.
pub(crate) enum Keys<'py> {
    V4(PyReadonlyArray1<'py, u32>),
    V6(PyReadonlyArray2<'py, u8>),
}

pub(crate) fn numpy_keys<'py>(
    arr: &Bound<'py, PyAny>,
    family: Family,
) -> PyResult<Option<Keys<'py>>> {
    let np = arr.py().import("numpy")?;
    if !arr.is_instance(&np.getattr("ndarray")?)? {
        return Ok(None);
    }
    let dtype = arr.getattr("dtype")?.str()?.to_string();
    let ndim: usize = arr.getattr("ndim")?.extract()?;
    match family {
        Family::V4 => match arr.downcast::<PyArray1<u32>>() {
            Ok(a) => Ok(Some(Keys::V4(a.readonly()))),
            Err(_) => Err(PyTypeError::new_err(format!(
                "IPv4 lookups take a 1-D numpy array of dtype uint32 (host-order addresses), \
                 not a {ndim}-D array of dtype {dtype}"
            ))),
        },
        Family::V6 => match arr.downcast::<PyArray2<u8>>() {
            Ok(a) if a.shape()[1] == 16 => Ok(Some(Keys::V6(a.readonly()))),
            _ => Err(PyTypeError::new_err(format!(
                "IPv6 lookups take a numpy array of shape (n, 16) and dtype uint8 (addresses \
                 in network byte order), not a {ndim}-D array of dtype {dtype} and shape {}",
                arr.getattr("shape")?.str()?
            ))),
        },
    }
}

/// Runs `f` on every chunk of keys: (offset, keys). IPv4 keys of a contiguous array are
/// the array itself; others are converted into a buffer a chunk at a time.
pub(crate) fn for_chunks_v4(
    keys: &numpy::ndarray::ArrayView1<'_, u32>,
    mut f: impl FnMut(usize, &[u32]),
) {
    if let Some(s) = keys.as_slice() {
        for (i, c) in s.chunks(CHUNK).enumerate() {
            f(i * CHUNK, c);
        }
    } else {
        let mut buf = Vec::with_capacity(CHUNK);
        for (i, c) in keys.exact_chunks(CHUNK).into_iter().enumerate() {
            buf.clear();
            buf.extend(c.iter().copied());
            f(i * CHUNK, &buf);
        }
        let rest = keys.len() % CHUNK;
        if rest > 0 {
            buf.clear();
            buf.extend(keys.iter().skip(keys.len() - rest).copied());
            f(keys.len() - rest, &buf);
        }
    }
}

pub(crate) fn for_chunks_v6(
    keys: &numpy::ndarray::ArrayView2<'_, u8>,
    mut f: impl FnMut(usize, &[u128]),
) {
    let n = keys.shape()[0];
    let mut buf = Vec::with_capacity(CHUNK);
    let mut start = 0;
    while start < n {
        let end = (start + CHUNK).min(n);
        buf.clear();
        for row in keys.slice(numpy::ndarray::s![start..end, ..]).rows() {
            let mut b = [0u8; 16];
            for (d, s) in b.iter_mut().zip(row.iter()) {
                *d = *s;
            }
            buf.push(u128::from_be_bytes(b));
        }
        f(start, &buf);
        start = end;
    }
}
