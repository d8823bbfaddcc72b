//! The values a [`RouteTable`](super::RouteTable) returns: the [`TableValue`] trait (what
//! a value type must do, including its encoding in a serialised table), the [`Value`]
//! type the bindings use (an integer or a string), and the append-only store readers look
//! values up in without a lock.

use core::fmt;
use core::hash::Hash;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

/// A type a [`RouteTable`](super::RouteTable) can hold as route values.
///
/// Besides being hashable (values are interned: equal values share one id), a value type
/// has a stable binary form for [`RouteTable::to_bytes`](super::RouteTable::to_bytes):
/// [`TAG`](Self::TAG) names the type in a serialised table, so that a blob of one value
/// type is refused by a table of another.
pub trait TableValue: Clone + Eq + Hash + fmt::Debug + Send + Sync + 'static {
    /// The value type's tag in a serialised table (distinct per type).
    const TAG: u8;
    /// Appends the value's encoding to `out`.
    fn encode(&self, out: &mut Vec<u8>);
    /// Reads one value from the front of `input`, advancing it; `None` if the bytes are
    /// not a value of this type.
    fn decode(input: &mut &[u8]) -> Option<Self>;
}

pub(crate) fn take<'a>(input: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
    if input.len() < n {
        return None;
    }
    let (head, rest) = input.split_at(n);
    *input = rest;
    Some(head)
}

pub(crate) fn take_array<const N: usize>(input: &mut &[u8]) -> Option<[u8; N]> {
    take(input, N).map(|b| b.try_into().expect("N bytes"))
}

pub(crate) fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

pub(crate) fn take_str(input: &mut &[u8]) -> Option<String> {
    let n = u32::from_le_bytes(take_array(input)?) as usize;
    String::from_utf8(take(input, n)?.to_vec()).ok()
}

impl TableValue for String {
    const TAG: u8 = 1;
    fn encode(&self, out: &mut Vec<u8>) {
        put_str(out, self);
    }
    fn decode(input: &mut &[u8]) -> Option<Self> {
        take_str(input)
    }
}

macro_rules! int_value {
    ($t:ty, $tag:expr) => {
        impl TableValue for $t {
            const TAG: u8 = $tag;
            fn encode(&self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn decode(input: &mut &[u8]) -> Option<Self> {
                take_array(input).map(<$t>::from_le_bytes)
            }
        }
    };
}
int_value!(u32, 2);
int_value!(u64, 3);
int_value!(i64, 4);

/// A route value of the bindings: an integer (an AS number, an index) or a string (a next
/// hop as written in the table file, a label).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Value {
    /// An integer; `i128` holds every `i64` and every `u64`.
    Int(i128),
    /// A string.
    Str(String),
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Int(v) => write!(f, "{v}"),
            Value::Str(s) => f.write_str(s),
        }
    }
}

impl From<String> for Value {
    fn from(s: String) -> Self {
        Value::Str(s)
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Self {
        Value::Str(s.to_string())
    }
}

impl From<i64> for Value {
    fn from(v: i64) -> Self {
        Value::Int(v.into())
    }
}

impl TableValue for Value {
    const TAG: u8 = 5;
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Value::Int(v) => {
                out.push(0);
                out.extend_from_slice(&v.to_le_bytes());
            }
            Value::Str(s) => {
                out.push(1);
                put_str(out, s);
            }
        }
    }
    fn decode(input: &mut &[u8]) -> Option<Self> {
        match take_array::<1>(input)?[0] {
            0 => take_array(input).map(|b| Value::Int(i128::from_le_bytes(b))),
            1 => take_str(input).map(Value::Str),
            _ => None,
        }
    }
}

/// Buckets of doubling size: bucket `b` holds `FIRST << b` slots.
const FIRST: usize = 16;
const BUCKETS: usize = 40;

/// An append-only sequence that readers index without a lock while one writer appends:
/// an element never moves and is never removed until the store is dropped, so a
/// reference to it lives as long as the store. (Safe code: each bucket and each slot is a
/// `OnceLock`, set once.)
pub(crate) struct AppendOnly<T> {
    buckets: [OnceLock<Box<[OnceLock<T>]>>; BUCKETS],
    len: AtomicUsize,
}

impl<T> Default for AppendOnly<T> {
    fn default() -> Self {
        AppendOnly {
            buckets: std::array::from_fn(|_| OnceLock::new()),
            len: AtomicUsize::new(0),
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for AppendOnly<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

#[inline]
fn locate(i: usize) -> (usize, usize) {
    let j = i + FIRST;
    let h = usize::BITS - 1 - j.leading_zeros();
    let b = h as usize - FIRST.trailing_zeros() as usize;
    (b, j - (1 << h))
}

impl<T> AppendOnly<T> {
    /// Elements appended so far.
    pub(crate) fn len(&self) -> usize {
        self.len.load(Ordering::Acquire)
    }

    /// Element `i`, if appended.
    #[inline]
    pub(crate) fn get(&self, i: usize) -> Option<&T> {
        let (b, o) = locate(i);
        self.buckets.get(b)?.get()?.get(o)?.get()
    }

    /// Appends `value` and returns its index. One writer at a time (the caller's lock):
    /// two concurrent pushes could take the same index, and the second would panic.
    pub(crate) fn push(&self, value: T) -> usize {
        let i = self.len.load(Ordering::Relaxed);
        let (b, o) = locate(i);
        assert!(b < BUCKETS, "append-only store full");
        let bucket =
            self.buckets[b].get_or_init(|| (0..FIRST << b).map(|_| OnceLock::new()).collect());
        if bucket[o].set(value).is_err() {
            panic!("two writers appended at once");
        }
        self.len.store(i + 1, Ordering::Release);
        i
    }

    /// Every element, in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        (0..self.len()).filter_map(move |i| self.get(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn append_only_indexes() {
        let s = AppendOnly::default();
        for i in 0..5000usize {
            assert_eq!(s.push(i * 3), i);
        }
        assert_eq!(s.len(), 5000);
        for i in 0..5000 {
            assert_eq!(s.get(i), Some(&(i * 3)));
        }
        assert_eq!(s.get(5000), None);
        assert_eq!(s.iter().count(), 5000);
        assert_eq!(locate(0), (0, 0));
        assert_eq!(locate(15), (0, 15));
        assert_eq!(locate(16), (1, 0));
        assert_eq!(locate(47), (1, 31));
        assert_eq!(locate(48), (2, 0));
    }

    #[test]
    fn values_round_trip() {
        let vals = [
            Value::Int(-5),
            Value::Int(u64::MAX as i128),
            Value::Str("AS64500".into()),
            Value::Str(String::new()),
        ];
        let mut buf = Vec::new();
        for v in &vals {
            v.encode(&mut buf);
        }
        let mut input = &buf[..];
        for v in &vals {
            assert_eq!(Value::decode(&mut input).as_ref(), Some(v));
        }
        assert!(input.is_empty());
        assert_eq!(Value::decode(&mut &[9u8][..]), None);
        assert_eq!(String::decode(&mut &[5, 0, 0, 0, b'a'][..]), None);
    }
}
