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
