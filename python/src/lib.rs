//! `lpmkit._lpmkit`: the Python extension behind the `lpmkit` package — `Table`, a
//! [`lpmkit::facade::RouteTable`] of either family with [`Value`]s (Python `int` or `str`).
//!
//! Numpy input is read in place (a contiguous `uint32` array is handed to the scheme's
//! batch lookup as a slice), the output array is allocated once and written in place, and
//! the GIL is released for the whole batch. Everything Python-facing is documented in
//! `python/lpmkit/_lpmkit.pyi`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use lpmkit::facade::{RouteTable, TableError, Value, AUTO};
use lpmkit::io::TableOptions;
use lpmkit::{Address, AnyTable, BuildOptions, Family, Prefix};
use numpy::ndarray::{Array1, Array2};
use numpy::{IntoPyArray, PyArray1, PyArrayMethods, PyUntypedArrayMethods};
use pyo3::exceptions::{PyFileNotFoundError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString, PyTuple};

/// Keys per call of the scheme's batch lookup.
pub(crate) const CHUNK: usize = 2048;

mod convert;
use convert::*;

enum Inner {
    V4(RouteTable<u32, Value>),
    V6(RouteTable<u128, Value>),
}

/// What numpy lookups map value ids through: `ints[id]` (index 0 unused), and whether
/// every value so far is an `int` that fits in int64.
struct IntCache {
    ints: Arc<Vec<i64>>,
    numeric: bool,
}

/// A longest-prefix-match routing table (see `python/lpmkit/_lpmkit.pyi`).
#[pyclass(module = "lpmkit", name = "Table", frozen)]
struct Table {
    inner: Inner,
    ints: Mutex<IntCache>,
    /// Python objects of the values (`objects[id]`, index 0 unused), made once.
    objects: Mutex<Vec<PyObject>>,
}

impl Table {
    fn new(inner: Inner) -> Self {
        Table {
            inner,
            ints: Mutex::new(IntCache {
                ints: Arc::new(vec![0]),
                numeric: true,
            }),
            objects: Mutex::new(Vec::new()),
        }
    }

    fn family(&self) -> Family {
        match self.inner {
            Inner::V4(_) => Family::V4,
            Inner::V6(_) => Family::V6,
        }
    }

    fn value(&self, id: u32) -> Option<&Value> {
        match &self.inner {
            Inner::V4(t) => t.value(id),
            Inner::V6(t) => t.value(id),
        }
    }

    fn value_count(&self) -> usize {
        match &self.inner {
            Inner::V4(t) => t.value_count(),
            Inner::V6(t) => t.value_count(),
        }
    }

    /// The int mapping, brought up to date.
    fn int_cache(&self) -> (Arc<Vec<i64>>, bool) {
        let mut c = self.ints.lock().unwrap_or_else(|e| e.into_inner());
        let n = self.value_count();
        if c.ints.len() <= n {
            let start = c.ints.len();
            let mut numeric = c.numeric;
            let ints = Arc::make_mut(&mut c.ints);
            for id in start..=n {
                let v = match self.value(id as u32) {
                    Some(Value::Int(i)) if i64::try_from(*i).is_ok() => *i as i64,
                    _ => {
                        numeric = false;
                        0
                    }
                };
                ints.push(v);
            }
            c.numeric = numeric;
        }
        (Arc::clone(&c.ints), c.numeric)
    }

    /// The Python object of value `id` (`default` for 0).
    fn object(&self, py: Python<'_>, id: u32, default: &PyObject) -> PyResult<PyObject> {
        if id == 0 {
            return Ok(default.clone_ref(py));
        }
        let mut objs = self.objects.lock().unwrap_or_else(|e| e.into_inner());
        if objs.is_empty() {
            objs.push(py.None());
        }
        while objs.len() <= id as usize {
            let v = self
                .value(objs.len() as u32)
                .ok_or_else(|| PyValueError::new_err("value id out of range"))?;
            objs.push(from_value(py, v)?);
        }
        Ok(objs[id as usize].clone_ref(py))
    }

    /// Value ids of a numpy array, GIL released.
    fn ids_numpy(&self, py: Python<'_>, keys: &Keys<'_>) -> Vec<u32> {
        match (&self.inner, keys) {
            (Inner::V4(t), Keys::V4(k)) => {
                let k = k.as_array();
                let mut out = vec![0u32; k.len()];
                py.allow_threads(|| {
                    for_chunks_v4(&k, |at, c| t.lookup_ids(c, &mut out[at..at + c.len()]))
                });
                out
            }
            (Inner::V6(t), Keys::V6(k)) => {
                let k = k.as_array();
                let mut out = vec![0u32; k.shape()[0]];
                py.allow_threads(|| {
                    for_chunks_v6(&k, |at, c| t.lookup_ids(c, &mut out[at..at + c.len()]))
                });
                out
            }
            _ => unreachable!("numpy_keys checked the family"),
        }
    }

    /// Value ids of a Python sequence of addresses.
    fn ids_seq(&self, py: Python<'_>, seq: &Bound<'_, PyAny>) -> PyResult<Vec<u32>> {
        fn run<A: Address>(
            py: Python<'_>,
            t: &RouteTable<A, Value>,
            seq: &Bound<'_, PyAny>,
        ) -> PyResult<Vec<u32>> {
            let keys = iter_addrs(seq)?
                .enumerate()
                .map(|(i, v)| to_addr::<A>(&v?, Some(i)))
                .collect::<PyResult<Vec<A>>>()?;
            let mut out = vec![0u32; keys.len()];
            py.allow_threads(|| t.lookup_ids(&keys, &mut out));
            Ok(out)
        }
        match &self.inner {
            Inner::V4(t) => run(py, t, seq),
            Inner::V6(t) => run(py, t, seq),
        }
    }

    fn ids_one(&self, v: &Bound<'_, PyAny>) -> PyResult<u32> {
        let mut out = [0u32];
        match &self.inner {
            Inner::V4(t) => t.lookup_ids(&[to_addr::<u32>(v, None)?], &mut out),
            Inner::V6(t) => t.lookup_ids(&[to_addr::<u128>(v, None)?], &mut out),
        }
        Ok(out[0])
    }

    /// `true` if `v` is one address rather than a collection of them (packed bytes are
    /// one address, not a sequence of byte values).
    fn is_scalar(v: &Bound<'_, PyAny>) -> PyResult<bool> {
        Ok(v.is_instance_of::<PyString>()
            || v.is_instance_of::<pyo3::types::PyInt>()
            || v.is_instance_of::<PyBytes>()
            || v.is_instance_of::<pyo3::types::PyByteArray>()
            || v.is_instance_of::<pyo3::types::PyMemoryView>()
            || (v.hasattr("packed")? && v.hasattr("version")?))
    }

    fn with_routes<A: Address>(
        py: Python<'_>,
        routes: Vec<(Prefix<A>, Value)>,
        scheme: &str,
        options: &BuildOptions,
    ) -> PyResult<RouteTable<A, Value>> {
        py.allow_threads(|| RouteTable::from_routes(routes, scheme, options))
            .map_err(table_error)
    }
}

fn build_options(settings: Option<&str>) -> PyResult<BuildOptions> {
    BuildOptions::default()
        .with_settings(settings.unwrap_or(""))
        .map_err(|e| PyValueError::new_err(e.to_string()))
}

#[pymethods]
impl Table {
    #[new]
    #[pyo3(signature = (family = None, scheme = AUTO, settings = None))]
    fn py_new(
        py: Python<'_>,
        family: Option<&Bound<'_, PyAny>>,
        scheme: &str,
        settings: Option<&str>,
    ) -> PyResult<Self> {
        let family = family.map(parse_family).transpose()?.unwrap_or(Family::V4);
        let o = build_options(settings)?;
        Ok(Table::new(match family {
            Family::V4 => Inner::V4(Self::with_routes(py, vec![], scheme, &o)?),
            Family::V6 => Inner::V6(Self::with_routes(py, vec![], scheme, &o)?),
        }))
    }

    #[staticmethod]
    #[pyo3(signature = (path, scheme = AUTO, value = None, settings = None, assign_next_hops = 200))]
    fn from_file(
        py: Python<'_>,
        path: std::path::PathBuf,
        scheme: &str,
        value: Option<&Bound<'_, PyAny>>,
        settings: Option<&str>,
        assign_next_hops: u32,
    ) -> PyResult<Self> {
        if !path.exists() {
            return Err(PyFileNotFoundError::new_err(format!(
                "{}: no such file",
                path.display()
            )));
        }
        if assign_next_hops == 0 {
            return Err(PyValueError::new_err("assign_next_hops must be at least 1"));
        }
        let o = build_options(settings)?;
        let opts = TableOptions {
            assign_next_hops,
            ..TableOptions::default()
        };
        let table = py
            .allow_threads(|| lpmkit::io::read_table(&path, &opts))
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        // Each distinct next-hop name through `value`, with the GIL, before the build.
        let names: Vec<String> = match &table {
            AnyTable::V4(t) => t.next_hops.iter().map(|(_, n)| n.clone()).collect(),
            AnyTable::V6(t) => t.next_hops.iter().map(|(_, n)| n.clone()).collect(),
        };
        let mut map: HashMap<String, Value> = HashMap::with_capacity(names.len());
        for n in names {
            let v = match value {
                Some(f) => to_value(&f.call1((n.as_str(),))?)?,
                None => Value::Str(n.clone()),
            };
            map.insert(n, v);
        }
        let conv = |n: &str| map[n].clone();
        let inner = py
            .allow_threads(|| -> Result<Inner, TableError> {
                Ok(match table {
                    AnyTable::V4(t) => Inner::V4(RouteTable::from_table_with(t, scheme, &o, conv)?),
                    AnyTable::V6(t) => Inner::V6(RouteTable::from_table_with(t, scheme, &o, conv)?),
                })
            })
            .map_err(table_error)?;
        Ok(Table::new(inner))
    }

    #[staticmethod]
    #[pyo3(signature = (routes, family = None, scheme = AUTO, settings = None))]
    fn from_routes(
        py: Python<'_>,
        routes: &Bound<'_, PyAny>,
        family: Option<&Bound<'_, PyAny>>,
        scheme: &str,
        settings: Option<&str>,
    ) -> PyResult<Self> {
        let o = build_options(settings)?;
        let mut items = Vec::new();
        for (i, r) in routes.try_iter()?.enumerate() {
            let r = r?;
            let pair = r
                .downcast::<PyTuple>()
                .ok()
                .filter(|t| t.len() == 2)
                .ok_or_else(|| {
                    PyTypeError::new_err(format!("route {i} is not a (prefix, value) pair"))
                })?;
            items.push((pair.get_item(0)?, to_value(&pair.get_item(1)?)?));
        }
        let family = match family {
            Some(f) => parse_family(f)?,
            None => match items.first() {
                Some((p, _)) => prefix_family(p)?,
                None => Family::V4,
            },
        };
        let inner = match family {
            Family::V4 => {
                let r = items
                    .into_iter()
                    .map(|(p, v)| Ok((to_prefix::<u32>(&p)?, v)))
                    .collect::<PyResult<Vec<_>>>()?;
                Inner::V4(Self::with_routes(py, r, scheme, &o)?)
            }
            Family::V6 => {
                let r = items
                    .into_iter()
                    .map(|(p, v)| Ok((to_prefix::<u128>(&p)?, v)))
                    .collect::<PyResult<Vec<_>>>()?;
                Inner::V6(Self::with_routes(py, r, scheme, &o)?)
            }
        };
        Ok(Table::new(inner))
    }

    #[staticmethod]
    fn from_bytes(py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<Self> {
        let data = bytes_like(data)?.ok_or_else(|| {
            PyTypeError::new_err(format!(
                "from_bytes takes bytes, bytearray or memoryview, not {}",
                data.get_type()
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_default()
            ))
        })?;
        let data = data.as_slice();
        let family = lpmkit::facade::blob_family(data).map_err(table_error)?;
        let inner = py
            .allow_threads(|| -> Result<Inner, TableError> {
                Ok(match family {
                    Family::V4 => Inner::V4(RouteTable::from_bytes(data)?),
                    Family::V6 => Inner::V6(RouteTable::from_bytes(data)?),
                })
            })
            .map_err(table_error)?;
        Ok(Table::new(inner))
    }

    fn to_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        let b = py.allow_threads(|| match &self.inner {
            Inner::V4(t) => t.to_bytes(),
            Inner::V6(t) => t.to_bytes(),
        });
        PyBytes::new(py, &b)
    }

    fn __reduce__<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, PyBytes>,))> {
        let f = py.import("lpmkit._lpmkit")?.getattr("_table_from_bytes")?;
        Ok((f, (self.to_bytes(py),)))
    }

    #[getter(family)]
    fn family_number(&self) -> u8 {
        match self.family() {
            Family::V4 => 4,
            Family::V6 => 6,
        }
    }

    #[getter]
    fn scheme(&self) -> &'static str {
        match &self.inner {
            Inner::V4(t) => t.scheme(),
            Inner::V6(t) => t.scheme(),
        }
    }

    /// How `auto` chose the scheme by timing its candidates on this table, or None.
    #[getter]
    fn auto_choice(&self) -> Option<String> {
        match &self.inner {
            Inner::V4(t) => t.auto_choice().map(|c| c.to_string()),
            Inner::V6(t) => t.auto_choice().map(|c| c.to_string()),
        }
    }

    #[getter]
    fn model(&self) -> &'static str {
        match &self.inner {
            Inner::V4(t) => t.model(),
            Inner::V6(t) => t.model(),
        }
    }

    #[getter]
    fn numeric(&self) -> bool {
        self.int_cache().1
    }

    #[getter]
    fn memory_bytes(&self) -> usize {
        match &self.inner {
            Inner::V4(t) => t.memory_bytes(),
            Inner::V6(t) => t.memory_bytes(),
        }
    }

    fn __len__(&self) -> usize {
        match &self.inner {
            Inner::V4(t) => t.len(),
            Inner::V6(t) => t.len(),
        }
    }

    fn __repr__(&self) -> String {
        format!(
            "<lpmkit.Table {}, {} routes, {} values, scheme {}>",
            family_name(self.family()),
            self.__len__(),
            self.value_count(),
            self.scheme()
        )
    }

    fn values<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let n = self.value_count();
        let none = py.None();
        let items = (1..=n as u32)
            .map(|id| self.object(py, id, &none))
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, items)
    }

    fn routes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        fn pairs<A: Address>(py: Python<'_>, t: &RouteTable<A, Value>) -> PyResult<Vec<PyObject>> {
            t.routes()
                .into_iter()
                .map(|(p, v)| {
                    Ok((p.to_string(), from_value(py, &v)?)
                        .into_pyobject(py)?
                        .into_any()
                        .unbind())
                })
                .collect()
        }
        let items = match &self.inner {
            Inner::V4(t) => pairs(py, t)?,
            Inner::V6(t) => pairs(py, t)?,
        };
        PyList::new(py, items)
    }

    fn insert(
        &self,
        py: Python<'_>,
        prefix: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<PyObject> {
        let v = to_value(value)?;
        let old = match &self.inner {
            Inner::V4(t) => {
                let p = to_prefix::<u32>(prefix)?;
                py.allow_threads(|| t.insert(p, v))
            }
            Inner::V6(t) => {
                let p = to_prefix::<u128>(prefix)?;
                py.allow_threads(|| t.insert(p, v))
            }
        }
        .map_err(table_error)?;
        old.map_or(Ok(py.None()), |v| from_value(py, &v))
    }

    fn remove(&self, py: Python<'_>, prefix: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        let old = match &self.inner {
            Inner::V4(t) => {
                let p = to_prefix::<u32>(prefix)?;
                py.allow_threads(|| t.remove(&p))
            }
            Inner::V6(t) => {
                let p = to_prefix::<u128>(prefix)?;
                py.allow_threads(|| t.remove(&p))
            }
        }
        .map_err(table_error)?;
        old.map_or(Ok(py.None()), |v| from_value(py, &v))
    }

    #[pyo3(signature = (addrs, default = None, out = None))]
    fn lookup(
        &self,
        py: Python<'_>,
        addrs: &Bound<'_, PyAny>,
        default: Option<PyObject>,
        out: Option<&Bound<'_, PyArray1<i64>>>,
    ) -> PyResult<PyObject> {
        let default = default.unwrap_or_else(|| py.None());
        if Self::is_scalar(addrs)? {
            let id = self.ids_one(addrs)?;
            return self.object(py, id, &default);
        }
        if let Some(keys) = numpy_keys(addrs, self.family())? {
            let (ints, numeric) = self.int_cache();
            if numeric {
                let d: i64 = if default.is_none(py) {
                    -1
                } else {
                    default.extract(py).map_err(|_| {
                        PyTypeError::new_err("default must be an int for an int64 result")
                    })?
                };
                return self.lookup_ints(py, &keys, &ints, d, out);
            }
            if out.is_some() {
                return Err(PyTypeError::new_err(
                    "out= needs a table whose values are all int64 (this one has other values)",
                ));
            }
            let ids = self.ids_numpy(py, &keys);
            let objs = ids
                .iter()
                .map(|&id| self.object(py, id, &default))
                .collect::<PyResult<Vec<_>>>()?;
            let np = py.import("numpy")?;
            let arr = np.call_method1("empty", (objs.len(), "object"))?;
            for (i, o) in objs.into_iter().enumerate() {
                arr.set_item(i, o)?;
            }
            return Ok(arr.unbind());
        }
        let ids = self.ids_seq(py, addrs)?;
        let items = ids
            .iter()
            .map(|&id| self.object(py, id, &default))
            .collect::<PyResult<Vec<_>>>()?;
        Ok(PyList::new(py, items)?.into_any().unbind())
    }

    #[pyo3(signature = (addrs, out = None))]
    fn lookup_ids(
        &self,
        py: Python<'_>,
        addrs: &Bound<'_, PyAny>,
        out: Option<&Bound<'_, PyArray1<u32>>>,
    ) -> PyResult<PyObject> {
        let keys = numpy_keys(addrs, self.family())?
            .ok_or_else(|| PyTypeError::new_err("lookup_ids takes a numpy array"))?;
        let n = match &keys {
            Keys::V4(k) => k.len(),
            Keys::V6(k) => k.shape()[0],
        };
        let arr = match out {
            Some(o) => {
                check_out(o.len(), n)?;
                o.clone()
            }
            None => Array1::<u32>::zeros(n).into_pyarray(py),
        };
        {
            let mut w = arr.try_readwrite().map_err(|_| {
                PyValueError::new_err("out is not writeable (or is borrowed elsewhere)")
            })?;
            let o = w
                .as_slice_mut()
                .map_err(|_| PyValueError::new_err("out must be C-contiguous"))?;
            self.ids_into(py, &keys, o);
        }
        Ok(arr.into_any().unbind())
    }

    fn lookup_prefix(&self, py: Python<'_>, addrs: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        fn prefixes<A: Address>(
            py: Python<'_>,
            t: &RouteTable<A, Value>,
            keys: &[A],
        ) -> Vec<Option<(Prefix<A>, u32)>> {
            let mut out = vec![None; keys.len()];
            py.allow_threads(|| t.lookup_prefix_batch(keys, &mut out));
            out
        }
        let as_str = |p: Option<String>| -> PyObject {
            p.map_or(py.None(), |s| PyString::new(py, &s).into_any().unbind())
        };
        if Self::is_scalar(addrs)? {
            let s = match &self.inner {
                Inner::V4(t) => t
                    .lookup_prefix(to_addr::<u32>(addrs, None)?)
                    .map(|(p, _)| p.to_string()),
                Inner::V6(t) => t
                    .lookup_prefix(to_addr::<u128>(addrs, None)?)
                    .map(|(p, _)| p.to_string()),
            };
            return Ok(as_str(s));
        }
        if let Some(keys) = numpy_keys(addrs, self.family())? {
            return match (&self.inner, &keys) {
                (Inner::V4(t), Keys::V4(k)) => {
                    let k = k.as_array().to_vec();
                    let r = prefixes(py, t, &k);
                    let nets: Vec<u32> = r.iter().map(|x| x.map_or(0, |(p, _)| p.addr())).collect();
                    let lens: Vec<i16> = r
                        .iter()
                        .map(|x| x.map_or(-1, |(p, _)| p.len() as i16))
                        .collect();
                    Ok((nets.into_pyarray(py), lens.into_pyarray(py))
                        .into_pyobject(py)?
                        .into_any()
                        .unbind())
                }
                (Inner::V6(t), Keys::V6(k)) => {
                    let mut all = Vec::new();
                    for_chunks_v6(&k.as_array(), |_, c| all.extend_from_slice(c));
                    let r = prefixes(py, t, &all);
                    let mut nets = Array2::<u8>::zeros((r.len(), 16));
                    for (i, x) in r.iter().enumerate() {
                        if let Some((p, _)) = x {
                            for (j, b) in p.addr().to_be_bytes().iter().enumerate() {
                                nets[[i, j]] = *b;
                            }
                        }
                    }
                    let lens: Vec<i16> = r
                        .iter()
                        .map(|x| x.map_or(-1, |(p, _)| p.len() as i16))
                        .collect();
                    Ok((nets.into_pyarray(py), lens.into_pyarray(py))
                        .into_pyobject(py)?
                        .into_any()
                        .unbind())
                }
                _ => unreachable!("numpy_keys checked the family"),
            };
        }
        let items: Vec<PyObject> = match &self.inner {
            Inner::V4(t) => {
                let keys = iter_addrs(addrs)?
                    .enumerate()
                    .map(|(i, v)| to_addr::<u32>(&v?, Some(i)))
                    .collect::<PyResult<Vec<_>>>()?;
                prefixes(py, t, &keys)
                    .into_iter()
                    .map(|x| as_str(x.map(|(p, _)| p.to_string())))
                    .collect()
            }
            Inner::V6(t) => {
                let keys = iter_addrs(addrs)?
                    .enumerate()
                    .map(|(i, v)| to_addr::<u128>(&v?, Some(i)))
                    .collect::<PyResult<Vec<_>>>()?;
                prefixes(py, t, &keys)
                    .into_iter()
                    .map(|x| as_str(x.map(|(p, _)| p.to_string())))
                    .collect()
            }
        };
        Ok(PyList::new(py, items)?.into_any().unbind())
    }
}

fn check_out(len: usize, n: usize) -> PyResult<()> {
    if len != n {
        return Err(PyValueError::new_err(format!(
            "out has {len} elements, the input {n}"
        )));
    }
    Ok(())
}

impl Table {
    /// Ids of a numpy array written to `out` (its length), GIL released.
    fn ids_into(&self, py: Python<'_>, keys: &Keys<'_>, out: &mut [u32]) {
        match (&self.inner, keys) {
            (Inner::V4(t), Keys::V4(k)) => {
                let k = k.as_array();
                py.allow_threads(|| {
                    for_chunks_v4(&k, |at, c| t.lookup_ids(c, &mut out[at..at + c.len()]))
                })
            }
            (Inner::V6(t), Keys::V6(k)) => {
                let k = k.as_array();
                py.allow_threads(|| {
                    for_chunks_v6(&k, |at, c| t.lookup_ids(c, &mut out[at..at + c.len()]))
                })
            }
            _ => unreachable!("numpy_keys checked the family"),
        }
    }

    /// The int64 result: ids mapped through `ints` chunk by chunk, GIL released.
    fn lookup_ints(
        &self,
        py: Python<'_>,
        keys: &Keys<'_>,
        ints: &[i64],
        default: i64,
        out: Option<&Bound<'_, PyArray1<i64>>>,
    ) -> PyResult<PyObject> {
        let n = match keys {
            Keys::V4(k) => k.len(),
            Keys::V6(k) => k.shape()[0],
        };
        let arr = match out {
            Some(o) => {
                check_out(o.len(), n)?;
                o.clone()
            }
            // SAFETY: every element is written below before the array is returned.
            None => unsafe { PyArray1::<i64>::new(py, n, false) },
        };
        let mut late = false;
        {
            let mut w = arr.try_readwrite().map_err(|_| {
                PyValueError::new_err("out is not writeable (or is borrowed elsewhere)")
            })?;
            let o = w
                .as_slice_mut()
                .map_err(|_| PyValueError::new_err("out must be C-contiguous"))?;
            // Id 0 (no route) maps to `default` in the table itself: one load per key, no
            // branch on whether the key matched (random keys make it unpredictable).
            let mut lut = ints.to_vec();
            if let Some(first) = lut.first_mut() {
                *first = default;
            }
            let map = |ids: &[u32], o: &mut [i64], late: &mut bool| {
                for (d, &id) in o.iter_mut().zip(ids) {
                    *d = match lut.get(id as usize) {
                        Some(&v) => v,
                        // A value added by another thread during this call.
                        None => match self.value(id) {
                            Some(Value::Int(i)) if i64::try_from(*i).is_ok() => *i as i64,
                            _ => {
                                *late = true;
                                default
                            }
                        },
                    };
                }
            };
            let mut ids = vec![0u32; CHUNK];
            match (&self.inner, keys) {
                (Inner::V4(t), Keys::V4(k)) => {
                    let k = k.as_array();
                    py.allow_threads(|| {
                        for_chunks_v4(&k, |at, c| {
                            let ids = &mut ids[..c.len()];
                            t.lookup_ids(c, ids);
                            map(ids, &mut o[at..at + c.len()], &mut late);
                        })
                    })
                }
                (Inner::V6(t), Keys::V6(k)) => {
                    let k = k.as_array();
                    py.allow_threads(|| {
                        for_chunks_v6(&k, |at, c| {
                            let ids = &mut ids[..c.len()];
                            t.lookup_ids(c, ids);
                            map(ids, &mut o[at..at + c.len()], &mut late);
                        })
                    })
                }
                _ => unreachable!("numpy_keys checked the family"),
            }
        }
        if late {
            return Err(PyValueError::new_err(
                "another thread added a non-int64 value during the lookup; look up again",
            ));
        }
        Ok(arr.into_any().unbind())
    }
}

/// Pickling support: `Table.__reduce__` names this.
#[pyfunction]
fn _table_from_bytes(py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<Table> {
    Table::from_bytes(py, data)
}

/// The schemes a table can use for `family`, `auto` first.
#[pyfunction]
#[pyo3(signature = (family = None))]
fn schemes(family: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<&'static str>> {
    let family = family.map(parse_family).transpose()?;
    let mut v = vec![AUTO];
    v.extend(
        lpmkit::registry::schemes()
            .iter()
            .filter(|s| family.is_none_or(|f| s.supports(f)))
            .map(|s| s.name),
    );
    Ok(v)
}

#[pymodule]
fn _lpmkit(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Table>()?;
    m.add_function(wrap_pyfunction!(_table_from_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(schemes, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
