//! What the memory system allows, measured beside the schemes on the same keys.
//!
//! Two stand-ins for a lookup, timed by the same loop as every scheme:
//!
//! * [`OneRead`]: one random read per key into an array as large as a scheme's table (the
//!   key hashed to an index, the element read and written as the answer). The reads of
//!   different keys are independent, so they overlap as a scheme's do; a scheme needs at
//!   least one read of its table per key, so this is the most a scheme of that size can
//!   reach on this machine, from the caches its size fits in or from DRAM.
//! * [`Stream`]: the keys streamed and an answer written per key, nothing else: the harness
//!   and memory bandwidth's limit, the same for every scheme.
//!
//! Their answers are not routes: they are measured, never checked.

use std::sync::Arc;

use lpmkit::mem::TableBuf;
use lpmkit::{Address, Fib, NextHop};

/// A 32-bit hash of a key (multiply-shift of its folded bits): cheap, and spread over the
/// whole index range whatever the keys' pattern.
#[inline(always)]
fn hash<A: Address>(key: A) -> u32 {
    let v = key.to_u128();
    let folded = (v as u64) ^ ((v >> 64) as u64);
    (folded.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32) as u32
}

/// One random read per key into the first `len` elements of a shared array.
pub(super) struct OneRead {
    data: Arc<TableBuf<u32>>,
    len: u64,
}

impl OneRead {
    /// An array of at least `bytes` bytes, shared by the stand-ins of every smaller scheme:
    /// table memory as the schemes' own (huge pages where the OS gives them), filled so
    /// every page is mapped.
    pub(super) fn array(bytes: usize) -> Arc<TableBuf<u32>> {
        let mut data = TableBuf::zeroed(bytes.div_ceil(4).max(1));
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for v in data.iter_mut() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *v = x as u32;
        }
        Arc::new(data)
    }

    /// Reads into the first `bytes` bytes of `data` (at most all of it).
    pub(super) fn new(data: Arc<TableBuf<u32>>, bytes: usize) -> Self {
        let len = (bytes.div_ceil(4).max(1)).min(data.len()) as u64;
        OneRead { data, len }
    }

    #[inline(always)]
    fn read<A: Address>(&self, key: A) -> u32 {
        // Multiply-shift into 0..len: always in range.
        let i = ((hash(key) as u64 * self.len) >> 32) as usize;
        self.data[i]
    }
}

impl<A: Address> Fib<A> for OneRead {
    fn name(&self) -> &str {
        "one read"
    }

    fn lookup(&self, addr: A) -> Option<NextHop> {
        NextHop::new(self.read(addr))
    }

    fn lookup_batch(&self, addrs: &[A], out: &mut [u32]) {
        for (o, &k) in out.iter_mut().zip(addrs) {
            *o = self.read(k);
        }
    }

    fn memory_bytes(&self) -> usize {
        self.len as usize * 4
    }
}

/// The keys read and an answer written per key.
pub(super) struct Stream;

impl<A: Address> Fib<A> for Stream {
    fn name(&self) -> &str {
        "stream"
    }

    fn lookup(&self, addr: A) -> Option<NextHop> {
        NextHop::new(hash(addr))
    }

    fn lookup_batch(&self, addrs: &[A], out: &mut [u32]) {
        for (o, &k) in out.iter_mut().zip(addrs) {
            *o = hash(k);
        }
    }

    fn memory_bytes(&self) -> usize {
        0
    }
}
