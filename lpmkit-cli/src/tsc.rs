//! The time-stamp counter: a cheap monotonic count for timing parts of a loop (the
//! forwarding engine's phases, an update replay's `Rib` and structure work).

/// The time-stamp counter on x86-64 (invariant on the CPUs lpmkit targets; not
/// serialized), nanoseconds since the first call elsewhere.
#[inline]
pub fn ticks() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: rdtsc has no preconditions on x86-64.
        #[allow(unused_unsafe)]
        unsafe {
            core::arch::x86_64::_rdtsc()
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        use std::sync::OnceLock;
        static T0: OnceLock<std::time::Instant> = OnceLock::new();
        T0.get_or_init(std::time::Instant::now).elapsed().as_nanos() as u64
    }
}

/// [`ticks`] read in program order: every instruction before it has completed (its loads
/// are done) and none after it has started when the counter is read (`lfence; rdtsc;
/// lfence`, the fencing Intel's and AMD's guides give for timing short code). A plain
/// `rdtsc` may be read while earlier loads are still in flight, so the end of one timed
/// piece (the last misses of a `Rib` change, say) would be counted in the next one: on a
/// ~200-tick piece after a ~300-tick one, a large share. Elsewhere: [`ticks`].
#[inline]
pub fn ticks_fenced() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: lfence and rdtsc have no preconditions on x86-64 (SSE2 is baseline).
        #[allow(unused_unsafe)]
        unsafe {
            core::arch::x86_64::_mm_lfence();
            let t = core::arch::x86_64::_rdtsc();
            core::arch::x86_64::_mm_lfence();
            t
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        ticks()
    }
}

/// Ticks an empty interval counts: two back-to-back [`ticks_fenced`] reads, the median of
/// 10,001 pairs after a warm-up. An interval timed around a piece of work counts the
/// work plus about this much (the reads and their fences), which weighs on a short piece
/// such as one in-place update of a fast scheme.
pub fn empty_interval() -> u64 {
    let mut d: Vec<u64> = (0..11_001)
        .map(|_| {
            let a = ticks_fenced();
            let b = ticks_fenced();
            b.wrapping_sub(a)
        })
        .skip(1_000)
        .collect();
    let mid = d.len() / 2;
    *d.select_nth_unstable(mid).1
}
