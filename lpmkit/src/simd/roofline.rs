//! What the memory system allows a lookup: stand-ins for a scheme, timed beside it on the
//! same keys (`lpmkit bench`'s roofline columns).
//!
//! * [`OneRead`]: one random 32-bit read per key into an array as large as a scheme's
//!   table. The key is scaled to an index and the element read is the answer. The reads of
//!   different keys are independent, so they overlap as a scheme's do; on x86-64 they are
//!   gathers of the widest vectors the CPU has (sixteen or eight keys per `vpgatherdd`, the
//!   instruction the schemes' kernels read their tables with), which overlap more misses
//!   than a scalar loop does. A scheme that reads its table once per key, uniformly over
//!   it, cannot run faster than this; one whose reads concentrate on a part of the table
//!   that stays in a nearer cache can.
//! * [`Stream`]: the keys read and an answer written per key, nothing else: the limit of
//!   the harness and of the memory bandwidth, the same for every scheme.
//!
//! Both are [`Fib`]s whose answers are not routes: they are timed, never checked. One
//! kernel, written over the vector layer the schemes' kernels use, serves both and both widths; its
//! scalar twin computes the same indices.
//!
//! ```
//! use lpmkit::simd::roofline::{OneRead, Stream};
//! use lpmkit::{Fib, Ipv4};
//!
//! let array = OneRead::array(8 << 20);
//! let one_read = OneRead::new(array, 4 << 20); // the first 4 MiB of it
//! let keys: Vec<Ipv4> = (0..1024u32).map(|i| i.wrapping_mul(0x9e37_79b9)).collect();
//! let mut out = vec![0u32; keys.len()];
//! Fib::<Ipv4>::lookup_batch(&one_read, &keys, &mut out);
//! Fib::<Ipv4>::lookup_batch(&Stream::new(), &keys, &mut out);
//! assert_eq!(Fib::<Ipv4>::memory_bytes(&one_read), 4 << 20);
//! ```

use std::sync::Arc;

use super::{Avx2, Avx512, Isa};
use crate::fib::Implementation;
use crate::mem::TableBuf;
use crate::prefix::{v4_keys, v6_keys, Address};
use crate::{Fib, NextHop};

/// The 32-bit word of a key the index is made from: the key (IPv4) or the XOR of its four
/// words (IPv6).
#[inline(always)]
fn fold<A: Address>(key: A) -> u32 {
    let v = key.to_u128();
    (v as u32) ^ ((v >> 32) as u32) ^ ((v >> 64) as u32) ^ ((v >> 96) as u32)
}

/// The index into `len` elements of a key's word `h`: `⌊h · len / 2³²⌋`, below `len`. Keys
/// uniform over the address space give indices uniform over the array; keys of a narrower
/// pattern read the part of it that a scheme indexed by the key's first bits would. No
/// hashing: every instruction per key shortens the stretch of keys the out-of-order core
/// overlaps, and the stand-in must not cost more per key than a scheme's index does.
#[inline(always)]
fn index(h: u32, len: u32) -> u32 {
    ((h as u64 * len as u64) >> 32) as u32
}

/// The instruction set the stand-ins run: the widest the CPU and the environment's ceiling
/// (`LPMKIT_FORCE_ISA`) allow.
#[derive(Clone, Copy, Debug)]
enum Path {
    Avx512(Avx512),
    Avx2(Avx2),
    Scalar,
}

impl Path {
    fn best() -> Path {
        let ceiling = Isa::env_ceiling();
        match (Avx512::within(ceiling), Avx2::within(ceiling)) {
            (Some(t), _) => Path::Avx512(t),
            (None, Some(t)) => Path::Avx2(t),
            (None, None) => Path::Scalar,
        }
    }

    fn implementation(self) -> Implementation {
        match self {
            Path::Avx512(_) => Implementation::Avx512,
            Path::Avx2(_) => Implementation::Avx2,
            Path::Scalar => Implementation::Scalar,
        }
    }

    /// Every key's answer: its element of `data[..len]` if `data` is given, else its word.
    fn run<A: Address>(self, data: Option<(&[u32], u32)>, keys: &[A], out: &mut [u32]) {
        assert!(out.len() >= keys.len(), "output shorter than input");
        let out = &mut out[..keys.len()];
        if let Some((d, len)) = data {
            assert!(len as usize <= d.len() && len <= i32::MAX as u32);
        }
        let done = match self {
            #[cfg(target_arch = "x86_64")]
            Path::Avx512(t) => kernel::avx512(t, data, keys, out),
            #[cfg(target_arch = "x86_64")]
            Path::Avx2(t) => kernel::avx2(t, data, keys, out),
            _ => 0,
        };
        scalar(data, &keys[done..], &mut out[done..]);
    }
}

/// The scalar twin of the kernel.
fn scalar<A: Address>(data: Option<(&[u32], u32)>, keys: &[A], out: &mut [u32]) {
    match data {
        Some((d, len)) => {
            for (o, &k) in out.iter_mut().zip(keys) {
                *o = d[index(fold(k), len) as usize];
            }
        }
        None => {
            for (o, &k) in out.iter_mut().zip(keys) {
                *o = fold(k);
            }
        }
    }
}

/// One random read per key into the first elements of a shared array.
pub struct OneRead {
    data: Arc<TableBuf<u32>>,
    len: u32,
    path: Path,
}

impl OneRead {
    /// An array of at least `bytes` bytes, to be shared by the stand-ins of several tables:
    /// table memory as the schemes' own (huge pages where the OS gives them), every element
    /// written so that every page is mapped.
    pub fn array(bytes: usize) -> Arc<TableBuf<u32>> {
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

    /// Reads into the first `bytes` bytes of `data` (all of it if it is shorter, and at
    /// most 8 GiB).
    pub fn new(data: Arc<TableBuf<u32>>, bytes: usize) -> OneRead {
        let len = bytes
            .div_ceil(4)
            .clamp(1, data.len().clamp(1, i32::MAX as usize));
        OneRead {
            data,
            len: len as u32,
            path: Path::best(),
        }
    }
}

impl<A: Address> Fib<A> for OneRead {
    fn name(&self) -> &str {
        "one read"
    }

    fn implementation(&self) -> Implementation {
        self.path.implementation()
    }

    fn lookup(&self, addr: A) -> Option<NextHop> {
        NextHop::new(self.data[index(fold(addr), self.len) as usize])
    }

    fn lookup_batch(&self, addrs: &[A], out: &mut [u32]) {
        self.path.run(Some((&self.data, self.len)), addrs, out);
    }

    fn memory_bytes(&self) -> usize {
        self.len as usize * 4
    }
}

/// The keys read and an answer written per key, nothing else.
pub struct Stream {
    path: Path,
}

impl Stream {
    /// The stand-in, on the widest instruction set the CPU and the environment allow.
    pub fn new() -> Stream {
        Stream { path: Path::best() }
    }
}

impl Default for Stream {
    fn default() -> Self {
        Stream::new()
    }
}

impl<A: Address> Fib<A> for Stream {
    fn name(&self) -> &str {
        "stream"
    }

    fn implementation(&self) -> Implementation {
        self.path.implementation()
    }

    fn lookup(&self, addr: A) -> Option<NextHop> {
        NextHop::new(fold(addr))
    }

    fn lookup_batch(&self, addrs: &[A], out: &mut [u32]) {
        self.path.run(None, addrs, out);
    }

    fn memory_bytes(&self) -> usize {
        0
    }
}

#[cfg(target_arch = "x86_64")]
mod kernel {
    //! The kernel of both stand-ins over [`Lanes`], its AVX2 and AVX-512 instances.

    use core::arch::x86_64::{__m256i, __m512i};

    use super::*;
    use crate::simd::lanes::Lanes;

    /// The AVX-512 instance; returns how many keys it answered (whole vectors).
    pub(super) fn avx512<A: Address>(
        _: Avx512,
        data: Option<(&[u32], u32)>,
        keys: &[A],
        out: &mut [u32],
    ) -> usize {
        #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,popcnt")]
        unsafe fn run<A: Address>(d: Option<(&[u32], u32)>, k: &[A], o: &mut [u32]) -> usize {
            // SAFETY: this function's target features are `__m512i`'s.
            unsafe { lanes::<__m512i, A>(d, k, o) }
        }
        // SAFETY: the token proves AVX-512 F/BW/DQ/VL and POPCNT.
        unsafe { run(data, keys, out) }
    }

    /// The AVX2 instance; returns how many keys it answered (whole vectors).
    pub(super) fn avx2<A: Address>(
        _: Avx2,
        data: Option<(&[u32], u32)>,
        keys: &[A],
        out: &mut [u32],
    ) -> usize {
        #[target_feature(enable = "avx2,popcnt")]
        unsafe fn run<A: Address>(d: Option<(&[u32], u32)>, k: &[A], o: &mut [u32]) -> usize {
            // SAFETY: this function's target features are `__m256i`'s.
            unsafe { lanes::<__m256i, A>(d, k, o) }
        }
        // SAFETY: the token proves AVX2 and POPCNT.
        unsafe { run(data, keys, out) }
    }

    /// [`super::scalar`] on whole vectors of keys.
    ///
    /// # Safety
    /// `V`'s instruction set; `out.len() >= keys.len()`; where `data` is given, `len` is at
    /// most `data.len()` and below 2³¹ (the gather's indices are signed).
    #[inline(always)]
    unsafe fn lanes<V: Lanes, A: Address>(
        data: Option<(&[u32], u32)>,
        keys: &[A],
        out: &mut [u32],
    ) -> usize {
        let whole = keys.len() / V::LANES * V::LANES;
        let (base, len) = data.map_or((core::ptr::null(), 0), |(d, l)| (d.as_ptr(), l));
        let (v4, v6) = (v4_keys(keys), v6_keys(keys));
        // SAFETY (whole block): the caller's instruction set. Keys are read and answers
        // written by whole vectors inside `keys[..whole]` and `out[..whole]`. Every index is
        // `⌊h · len / 2³²⌋ < len ≤ data.len()`, and below 2³¹, so each gathered lane is an
        // element of `data`; without `data` nothing is gathered.
        unsafe {
            let n = V::splat(len);
            for i in (0..whole).step_by(V::LANES) {
                let (x, reorder) = match (v4, v6) {
                    (Some(k), _) => (V::load(k.as_ptr().add(i)), false),
                    (_, Some(k)) => {
                        let p = k.as_ptr().add(i);
                        let x = V::u128_dword(p, 0)
                            .xor(V::u128_dword(p, 1))
                            .xor(V::u128_dword(p, 2))
                            .xor(V::u128_dword(p, 3));
                        (x, !V::U128_IN_ORDER)
                    }
                    _ => unreachable!("an address is 32 or 128 bits"),
                };
                let v = if base.is_null() {
                    x
                } else {
                    V::gather::<4>(base as *const u8, x.mul_hi(n))
                };
                let v = if reorder { v.in_key_order() } else { v };
                v.store(out.as_mut_ptr().add(i));
            }
        }
        whole
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every path answers as the scalar twin, for both families and both stand-ins.
    #[test]
    fn miri_roofline_paths_agree_with_the_scalar_twin() {
        let array = OneRead::array(1 << 12);
        let mut paths = vec![Path::Scalar];
        if let Some(t) = Avx2::detect() {
            paths.push(Path::Avx2(t));
        }
        if let Some(t) = Avx512::detect() {
            paths.push(Path::Avx512(t));
        }
        let v4: Vec<u32> = (0..1000u32)
            .map(|i| i.wrapping_mul(0x9e37_79b9) ^ i)
            .collect();
        let v6: Vec<u128> = v4
            .iter()
            .map(|&k| ((k as u128) << 77) | k as u128)
            .collect();
        for len in [1u32, 7, 1 << 10] {
            let data = Some((&array[..], len));
            for data in [data, None] {
                let (mut want4, mut want6) = (vec![0; v4.len()], vec![0; v6.len()]);
                scalar(data, &v4, &mut want4);
                scalar(data, &v6, &mut want6);
                for &p in &paths {
                    let (mut got4, mut got6) = (vec![0; v4.len()], vec![0; v6.len()]);
                    p.run(data, &v4, &mut got4);
                    p.run(data, &v6, &mut got6);
                    assert_eq!(got4, want4, "{p:?} IPv4, len {len}");
                    assert_eq!(got6, want6, "{p:?} IPv6, len {len}");
                }
            }
        }
        // The reads land on the array's elements, below `len`.
        let one = OneRead::new(array.clone(), 28);
        for &k in &v4 {
            let v = Fib::<u32>::lookup(&one, k).map_or(0, |h| h.get());
            assert!(array[..7].contains(&v) || v == 0);
        }
    }
}
