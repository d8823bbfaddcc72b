//! Next-hop identifiers and the table that interns user values into them.
//!
//! Every scheme stores small integer ids rather than user values: a [`NextHop`] is a
//! non-zero `u32`, and `0` means "no route" wherever ids appear raw (the output of
//! [`Fib::lookup_batch`](crate::Fib::lookup_batch), for instance). A [`NextHopTable`] maps
//! any hashable user value (an address, `AS64500`, an interface name) to an id and back;
//! ids are dense and start at 1, in first-seen order.
//!
//! Each scheme documents how many ids its layout holds; a build that needs more returns a
//! [`BuildError`](crate::BuildError), it never truncates.
//!
//! ```
//! use lpmkit::NextHopTable;
//!
//! let mut hops = NextHopTable::new();
//! let a = hops.intern("192.0.2.1".to_string());
//! let b = hops.intern("192.0.2.2".to_string());
//! assert_eq!(hops.intern("192.0.2.1".to_string()), a);
//! assert_eq!((a.get(), b.get()), (1, 2));
//! assert_eq!(hops.value(b).map(String::as_str), Some("192.0.2.2"));
//! ```

use core::fmt;
use core::hash::Hash;
use core::num::NonZeroU32;
use std::collections::HashMap;

/// A next-hop id: non-zero, so `Option<NextHop>` is four bytes and `0` can mean "no route".
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(transparent)]
pub struct NextHop(NonZeroU32);

impl NextHop {
    /// The id `v`, or `None` for 0.
    #[inline]
    pub const fn new(v: u32) -> Option<NextHop> {
        match NonZeroU32::new(v) {
            Some(n) => Some(NextHop(n)),
            None => None,
        }
    }

    /// The id as a `u32` (never 0).
    #[inline]
    pub const fn get(self) -> u32 {
        self.0.get()
    }

    /// The raw form used in batch outputs: the id, or 0 for `None`.
    #[inline]
    pub fn raw(nh: Option<NextHop>) -> u32 {
        nh.map_or(0, NextHop::get)
    }

    /// The inverse of [`raw`](Self::raw).
    #[inline]
    pub const fn from_raw(v: u32) -> Option<NextHop> {
        NextHop::new(v)
    }
}

impl fmt::Debug for NextHop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "nh{}", self.0)
    }
}

impl fmt::Display for NextHop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Interns user values into dense [`NextHop`] ids (1, 2, 3, … in first-seen order).
#[derive(Clone, Debug)]
pub struct NextHopTable<V> {
    values: Vec<V>,
    ids: HashMap<V, NextHop>,
}

impl<V> Default for NextHopTable<V> {
    fn default() -> Self {
        NextHopTable {
            values: Vec::new(),
            ids: HashMap::new(),
        }
    }
}

impl<V: Eq + Hash + Clone> NextHopTable<V> {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// The id of `value`, allocating the next one if it is new.
    ///
    /// # Panics
    /// After `u32::MAX - 1` distinct values (no table can hold that many routes anyway).
    pub fn intern(&mut self, value: V) -> NextHop {
        if let Some(&id) = self.ids.get(&value) {
            return id;
        }
        let id = u32::try_from(self.values.len() + 1)
            .ok()
            .and_then(NextHop::new)
            .expect("more than u32::MAX - 1 next hops");
        self.values.push(value.clone());
        self.ids.insert(value, id);
        id
    }

    /// The id of `value` if it was interned.
    pub fn id(&self, value: &V) -> Option<NextHop> {
        self.ids.get(value).copied()
    }
}

impl<V> NextHopTable<V> {
    /// The value behind an id.
    pub fn value(&self, id: NextHop) -> Option<&V> {
        self.values.get(id.get() as usize - 1)
    }

    /// Number of distinct values (= the largest id).
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// True if nothing was interned.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// `(id, value)` pairs in id order.
    pub fn iter(&self) -> impl Iterator<Item = (NextHop, &V)> + '_ {
        self.values
            .iter()
            .enumerate()
            .map(|(i, v)| (NextHop::new(i as u32 + 1).unwrap(), v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn niche() {
        assert_eq!(core::mem::size_of::<Option<NextHop>>(), 4);
        assert_eq!(NextHop::new(0), None);
        assert_eq!(NextHop::raw(None), 0);
        assert_eq!(NextHop::raw(NextHop::new(7)), 7);
    }

    #[test]
    fn interning() {
        let mut t = NextHopTable::new();
        let a = t.intern("a");
        let b = t.intern("b");
        assert_eq!(t.intern("a"), a);
        assert_eq!(t.len(), 2);
        assert_eq!(t.value(a), Some(&"a"));
        assert_eq!(t.id(&"b"), Some(b));
        assert_eq!(t.id(&"c"), None);
        let all: Vec<_> = t.iter().map(|(id, v)| (id.get(), *v)).collect();
        assert_eq!(all, vec![(1, "a"), (2, "b")]);
    }
}
