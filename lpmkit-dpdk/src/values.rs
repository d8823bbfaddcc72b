//! Next-hop values by lpmkit id: what a lookup turns each answer into.
//!
//! lpmkit's schemes answer with small next-hop ids (1, 2, …; 0 = no route); DPDK's next
//! hops are 64-bit values. The writer interns each distinct value once ([`Interner::intern`])
//! and readers map an id to its value with one load from a flat array whose slot 0 holds
//! the table's default next hop, so a miss costs no branch. The array only grows: a
//! larger copy is published with one pointer store, and the arrays it replaced stay
//! allocated until the table is freed (together at most as large as the last one), so a
//! reader never reads freed memory and never waits.

use std::collections::HashMap;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

use lpmkit::NextHop;

/// Values of ids `0..slots.len()`; slots past the interned ones are 0.
struct Slab {
    slots: Box<[AtomicU64]>,
}

impl Slab {
    fn new(len: usize) -> Box<Slab> {
        Box::new(Slab {
            slots: (0..len).map(|_| AtomicU64::new(0)).collect(),
        })
    }
}

/// The reader side: the current slab, looked up without a lock.
pub struct Values {
    current: AtomicPtr<Slab>,
}

/// The writer side (behind the table's lock): every slab published, the current one last,
/// kept until drop; the ids of the values interned.
pub struct Interner {
    /// Boxed: `Values::current` points to a slab, which must not move when the vector
    /// grows.
    #[allow(clippy::vec_box)]
    slabs: Vec<Box<Slab>>,
    ids: HashMap<u64, NextHop>,
    /// Ids handed out (the next is `len`).
    len: usize,
}

/// A store whose id 0 (no route) reads as `default`: its reader side and its writer side,
/// which owns the memory the reader side points to. Keep them together (one table owns
/// both) and drop them together.
pub fn new(default: u64) -> (Values, Interner) {
    let slab = Slab::new(64);
    slab.slots[0].store(default, Ordering::Relaxed);
    let current = AtomicPtr::new(&*slab as *const Slab as *mut Slab);
    (
        Values { current },
        Interner {
            slabs: vec![slab],
            ids: HashMap::new(),
            len: 1,
        },
    )
}

impl Interner {
    /// The id of `value`, interning it first if it is new. The value is readable under
    /// its id through `values` (the reader side made with this interner) before the id
    /// is returned, so before any route can carry it. `None`: ids are exhausted.
    pub fn intern(&mut self, values: &Values, value: u64) -> Option<NextHop> {
        if let Some(&id) = self.ids.get(&value) {
            return Some(id);
        }
        let id = NextHop::new(u32::try_from(self.len).ok()?)?;
        let cap = self.slabs.last().expect("one slab at least").slots.len();
        if self.len == cap {
            let old = self.slabs.last().expect("one slab at least");
            let grown = Slab::new(cap * 2);
            for (n, o) in grown.slots.iter().zip(old.slots.iter()) {
                n.store(o.load(Ordering::Relaxed), Ordering::Relaxed);
            }
            // Release: a reader that loads the new slab sees its copied slots.
            values
                .current
                .store(&*grown as *const Slab as *mut Slab, Ordering::Release);
            self.slabs.push(grown);
        }
        let slab = self.slabs.last().expect("one slab at least");
        // Release: the route that carries this id is published after it (the schemes
        // publish with release stores), and a reader loads the slab after its lookup.
        slab.slots[self.len].store(value, Ordering::Release);
        self.len += 1;
        self.ids.insert(value, id);
        Some(id)
    }

    /// Distinct values interned.
    pub fn count(&self) -> usize {
        self.len - 1
    }
}

impl Values {
    /// Writes the value of each id in `ids` to `out` (id 0 or an id past the array: the
    /// default). Call after the lookup that produced `ids`.
    #[inline]
    pub fn translate(&self, ids: &[u32], out: &mut [u64]) {
        // Acquire (with the fence): the lookup's loads saw routes published after their
        // values were stored, and the slab pointer read now is the one they were stored in
        // or a later copy.
        std::sync::atomic::fence(Ordering::Acquire);
        // SAFETY: `current` points to a slab of the interner made with this value, which
        // its owner keeps as long as this value (see `new`); `&self` outlives this call.
        let slab = unsafe { &*self.current.load(Ordering::Acquire) };
        let default = slab.slots[0].load(Ordering::Relaxed);
        for (o, &id) in out.iter_mut().zip(ids) {
            *o = slab
                .slots
                .get(id as usize)
                .map_or(default, |s| s.load(Ordering::Relaxed));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_map_to_their_values_and_zero_to_the_default() {
        let (v, mut w) = new(999);
        let ids: Vec<u32> = (0..1000u64)
            .map(|i| w.intern(&v, i * 7 + (1 << 40)).unwrap().get())
            .collect();
        assert_eq!(w.intern(&v, 7 + (1 << 40)).unwrap().get(), ids[1]);
        assert_eq!(w.count(), 1000);
        let mut out = vec![0u64; 1002];
        let mut all = ids.clone();
        all.push(0);
        all.push(5000);
        v.translate(&all, &mut out);
        for (i, &o) in out[..1000].iter().enumerate() {
            assert_eq!(o, i as u64 * 7 + (1 << 40));
        }
        assert_eq!(&out[1000..], &[999, 999]);
    }
}
