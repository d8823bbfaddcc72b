//! Run-time CPU-feature dispatch shared by the schemes, and the vector layer their kernels
//! are written over.
//!
//! A scheme that has SIMD kernels asks for tokens once, when it is built, and keeps them
//! (or `None`) beside its tables (`Kernels`); the kernels take a token as a parameter, so
//! holding one is the proof that the CPU supports the instructions (the habit of
//! `memchr`'s `avx2::One::new`). The tokens, internal to the schemes' kernels, are
//! `Avx512` (AVX-512 F, BW, DQ and VL, what every AVX-512 kernel needs), the extensions a
//! kernel may need on top of it (`Vpopcntdq`, `Bitalg`, `Vbmi`), `Avx2` (with POPCNT) and
//! `Popcnt`. A table dispatches once: the best path the CPU has and the *ceiling* allows,
//! AVX-512 → AVX2 → scalar.
//!
//! The kernels are written once over `lanes`: a trait of 32-bit lanes implemented for
//! AVX2's `__m256i` and AVX-512's `__m512i`, instantiated per instruction set behind thin
//! `#[target_feature]` entry points.
//!
//! The ceiling ([`Isa`]) is the lowest of what the build options ask for
//! (`BuildOptions::isa`, or scalar with `BuildOptions::force_scalar`) and what the
//! environment asks for: `LPMKIT_FORCE_ISA=avx2|scalar` (DPDK's "maximum SIMD width"), or
//! `LPMKIT_FORCE_SCALAR=1`. Every kernel has a scalar twin that produces the same answers
//! and is used below its ceiling, on other CPUs and on other architectures.

use core::fmt;
use core::str::FromStr;
use std::sync::OnceLock;

mod calibrate;
pub(crate) mod lanes;
pub mod roofline;

pub(crate) use calibrate::{apply_choice, enabled as calibration_enabled, race, Pace, MARGIN};
pub use calibrate::{calibrate, CALIBRATE_FROM};

/// An instruction-set level the lookup kernels may use, lowest first: a *ceiling* lets a
/// table use its level and every lower one.
///
/// ```
/// use lpmkit::simd::Isa;
/// assert!(Isa::Scalar < Isa::Avx2 && Isa::Avx2 < Isa::Avx512);
/// assert_eq!("avx2".parse::<Isa>(), Ok(Isa::Avx2));
/// assert_eq!(Isa::ceiling(true, Some(Isa::Avx512)), Isa::Scalar);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Isa {
    /// Portable scalar code only (hardware `popcnt` excluded).
    Scalar,
    /// AVX2 kernels (and `popcnt`).
    Avx2,
    /// AVX-512 kernels (F, BW, DQ, VL; and the extensions a kernel names).
    Avx512,
}

impl Isa {
    /// Every level, lowest first.
    pub const ALL: [Isa; 3] = [Isa::Scalar, Isa::Avx2, Isa::Avx512];

    /// The name: `scalar`, `avx2` or `avx512`.
    pub fn as_str(self) -> &'static str {
        match self {
            Isa::Scalar => "scalar",
            Isa::Avx2 => "avx2",
            Isa::Avx512 => "avx512",
        }
    }

    /// Whether this CPU can run the level's kernels (ignoring the environment).
    pub fn supported(self) -> bool {
        match self {
            Isa::Scalar => true,
            Isa::Avx2 => Avx2::detect().is_some(),
            Isa::Avx512 => Avx512::detect().is_some(),
        }
    }

    /// The highest level this CPU supports (ignoring the environment).
    pub fn best_supported() -> Isa {
        *Isa::ALL
            .iter()
            .rev()
            .find(|i| i.supported())
            .unwrap_or(&Isa::Scalar)
    }

    /// Every level this CPU supports, highest first: the ceilings under which a table can
    /// run a different path (what the differential tests and `lpmkit verify` check).
    pub fn supported_levels() -> Vec<Isa> {
        Isa::ALL
            .into_iter()
            .rev()
            .filter(|i| i.supported())
            .collect()
    }

    /// The ceiling the environment sets: `LPMKIT_FORCE_SCALAR` (non-empty, not `0`) caps at
    /// [`Isa::Scalar`], `LPMKIT_FORCE_ISA` at the level it names; unset, [`Isa::Avx512`]
    /// (no cap). A value of `LPMKIT_FORCE_ISA` that names no level caps at `Scalar`, the
    /// safe choice ([`env_error`] says why, for a tool to report). Read once per process.
    #[doc(hidden)]
    pub fn env_ceiling() -> Isa {
        env().0
    }

    /// The ceiling of a table: the lowest of `isa` (`None`: no cap), scalar if
    /// `force_scalar`, and [`env_ceiling`](Self::env_ceiling).
    pub fn ceiling(force_scalar: bool, isa: Option<Isa>) -> Isa {
        let asked = if force_scalar {
            Isa::Scalar
        } else {
            isa.unwrap_or(Isa::Avx512)
        };
        asked.min(Isa::env_ceiling())
    }
}

impl fmt::Display for Isa {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Isa {
    type Err = String;

    /// `scalar`, `avx2` or `avx512` (case-insensitive).
    fn from_str(s: &str) -> Result<Isa, String> {
        Isa::ALL
            .into_iter()
            .find(|i| i.as_str().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| format!("{s:?} is not an instruction set (scalar, avx2, avx512)"))
    }
}

/// The ceilings the unit tests build every table under: [`Isa::supported_levels`], with a
/// note on stderr naming the levels this CPU cannot run (their kernels go unchecked).
#[cfg(test)]
pub(crate) fn test_levels() -> Vec<Isa> {
    for isa in Isa::ALL.into_iter().filter(|i| !i.supported()) {
        eprintln!("note: this CPU has no {isa}; the {isa} kernels are not checked");
    }
    Isa::supported_levels()
}

/// The environment's ceiling and, if `LPMKIT_FORCE_ISA` could not be read, why.
fn env() -> &'static (Isa, Option<String>) {
    static ENV: OnceLock<(Isa, Option<String>)> = OnceLock::new();
    ENV.get_or_init(|| {
        let scalar =
            std::env::var_os("LPMKIT_FORCE_SCALAR").is_some_and(|v| !v.is_empty() && v != "0");
        let (isa, error) = match std::env::var_os("LPMKIT_FORCE_ISA") {
            None => (Isa::Avx512, None),
            Some(v) if v.is_empty() => (Isa::Avx512, None),
            Some(v) => match v.to_str().map(str::parse::<Isa>) {
                Some(Ok(i)) => (i, None),
                Some(Err(e)) => (Isa::Scalar, Some(format!("LPMKIT_FORCE_ISA: {e}"))),
                None => (
                    Isa::Scalar,
                    Some(format!("LPMKIT_FORCE_ISA: {v:?} is not valid UTF-8")),
                ),
            },
        };
        (if scalar { Isa::Scalar } else { isa }, error)
    })
}

/// Why `LPMKIT_FORCE_ISA` could not be read (the lookups then run scalar code), if it
/// could not.
#[doc(hidden)]
pub fn env_error() -> Option<&'static str> {
    env().1.as_deref()
}

/// True if the environment caps the lookups at scalar code: `LPMKIT_FORCE_SCALAR` set to
/// a non-empty value other than `0`, or `LPMKIT_FORCE_ISA=scalar`. Read once per process.
#[doc(hidden)]
pub fn force_scalar_env() -> bool {
    Isa::env_ceiling() == Isa::Scalar
}

/// Proof that AVX2 and POPCNT instructions may be executed on this CPU (every x86-64 CPU
/// with AVX2 has POPCNT; the kernels that take it are compiled with
/// `#[target_feature(enable = "avx2,popcnt")]`).
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Avx2 {
    _private: (),
}

impl Avx2 {
    /// The token, if the CPU has AVX2 and the environment's ceiling allows it.
    pub fn new() -> Option<Avx2> {
        Self::within(Isa::Avx512)
    }

    /// The token if the CPU has AVX2 and POPCNT, ignoring the environment.
    pub fn detect() -> Option<Avx2> {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            if has!("avx2") && has!("popcnt") {
                return Some(Avx2 { _private: () });
            }
        }
        None
    }

    /// The token unless `force_scalar`; a convenience for scheme configs.
    pub fn unless(force_scalar: bool) -> Option<Avx2> {
        if force_scalar {
            None
        } else {
            Self::new()
        }
    }

    /// The token if the CPU has AVX2 and both `ceiling` and the environment allow it.
    pub fn within(ceiling: Isa) -> Option<Avx2> {
        if ceiling.min(Isa::env_ceiling()) < Isa::Avx2 {
            return None;
        }
        Self::detect()
    }
}

/// Proof that AVX-512 F, BW, DQ and VL instructions may be executed on this CPU (every
/// x86-64 CPU with AVX-512 since Skylake-SP and Zen 4 has the four). Kernels that take it
/// are compiled with `#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl")]`
/// (AVX2 and everything below it come with them); extensions have tokens of their own,
/// obtained from this one.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Avx512 {
    _private: (),
}

impl Avx512 {
    /// The token, if the CPU has AVX-512 F/BW/DQ/VL and the environment's ceiling allows it.
    pub fn new() -> Option<Avx512> {
        Self::within(Isa::Avx512)
    }

    /// The token if the CPU has AVX-512 F/BW/DQ/VL (and AVX2, POPCNT), ignoring the
    /// environment.
    pub fn detect() -> Option<Avx512> {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            if has!("avx512f")
                && has!("avx512bw")
                && has!("avx512dq")
                && has!("avx512vl")
                && has!("avx2")
                && has!("popcnt")
            {
                return Some(Avx512 { _private: () });
            }
        }
        None
    }

    /// The token if the CPU has AVX-512 F/BW/DQ/VL and both `ceiling` and the environment
    /// allow it.
    pub fn within(ceiling: Isa) -> Option<Avx512> {
        if ceiling.min(Isa::env_ceiling()) < Isa::Avx512 {
            return None;
        }
        Self::detect()
    }

    /// The token for a kernel that runs only when asked for: the ceiling is AVX-512 *given*
    /// (`isa == Some(Isa::Avx512)`, scalar not forced), the environment allows it and the
    /// CPU has it. Left to its default (`isa: None`), such a scheme runs its AVX2 kernel —
    /// for schemes whose AVX-512 kernel is not the faster one on the CPUs it was measured
    /// on, but is kept to be measured and checked on others.
    pub fn when_asked(force_scalar: bool, isa: Option<Isa>) -> Option<Avx512> {
        if force_scalar || isa != Some(Isa::Avx512) {
            return None;
        }
        Self::within(Isa::Avx512)
    }

    /// AVX2 is part of every AVX-512 CPU this token accepts.
    pub fn avx2(self) -> Avx2 {
        Avx2 { _private: () }
    }

    /// The VPOPCNTDQ token, if the CPU has the extension.
    pub fn vpopcntdq(self) -> Option<Vpopcntdq> {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512vpopcntdq") {
                return Some(Vpopcntdq { avx512: self });
            }
        }
        None
    }

    /// The BITALG token, if the CPU has the extension.
    pub fn bitalg(self) -> Option<Bitalg> {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512bitalg") {
                return Some(Bitalg { avx512: self });
            }
        }
        None
    }

    /// The VBMI token, if the CPU has the extension.
    pub fn vbmi(self) -> Option<Vbmi> {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512vbmi") {
                return Some(Vbmi { avx512: self });
            }
        }
        None
    }
}

/// Proof of AVX-512 VPOPCNTDQ (`vpopcntd`/`vpopcntq`: population counts of 32- and 64-bit
/// lanes) on top of [`Avx512`].
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Vpopcntdq {
    avx512: Avx512,
}

impl Vpopcntdq {
    /// The base token it implies.
    pub fn avx512(self) -> Avx512 {
        self.avx512
    }
}

/// Proof of AVX-512 BITALG (`vpopcntb`/`vpopcntw`, `vpshufbitqmb`) on top of [`Avx512`].
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bitalg {
    avx512: Avx512,
}

impl Bitalg {
    /// The base token it implies.
    pub fn avx512(self) -> Avx512 {
        self.avx512
    }
}

/// Proof of AVX-512 VBMI (`vpermb`, `vpermi2b`, `vpmultishiftqb`) on top of [`Avx512`].
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Vbmi {
    avx512: Avx512,
}

impl Vbmi {
    /// The base token it implies.
    pub fn avx512(self) -> Avx512 {
        self.avx512
    }
}

/// Proof that the `popcnt` instruction may be executed on this CPU (Poptrie's and DXR's
/// population counts).
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Popcnt {
    _private: (),
}

impl Popcnt {
    /// The token, if the CPU has `popcnt` and scalar code is not forced.
    pub fn new() -> Option<Popcnt> {
        Self::within(Isa::Avx512)
    }

    /// The token if the CPU has `popcnt`, ignoring the environment.
    pub fn detect() -> Option<Popcnt> {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("popcnt") {
                return Some(Popcnt { _private: () });
            }
        }
        None
    }

    /// The token unless `force_scalar`; a convenience for scheme configs.
    pub fn unless(force_scalar: bool) -> Option<Popcnt> {
        if force_scalar {
            None
        } else {
            Self::new()
        }
    }

    /// The token if the CPU has `popcnt` and the ceiling (and the environment's) is above
    /// scalar code.
    pub fn within(ceiling: Isa) -> Option<Popcnt> {
        if ceiling.min(Isa::env_ceiling()) == Isa::Scalar {
            return None;
        }
        Self::detect()
    }
}

/// The SIMD kernels a table runs, chosen when it is built: the AVX-512 instance of its
/// kernels if `avx512` is held, else the AVX2 instance if `avx2` is held, else the scalar
/// twin. Both tokens are kept where the CPU and the ceiling allow them, so both instances
/// stay callable on an AVX-512 CPU; [`choice`](Self::choice) says how the path was chosen.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Kernels {
    /// The AVX-512 instances (`None` while the table runs its AVX2 ones by choice).
    pub(crate) avx512: Option<Avx512>,
    /// The AVX2 instances.
    pub(crate) avx2: Option<Avx2>,
    /// The AVX-512 token held back while the table runs AVX2 by choice: a measurement
    /// ([`calibrate`]) may still switch to it.
    pub(crate) avx512_held: Option<Avx512>,
    /// How the path was chosen.
    pub(crate) choice: KernelChoice,
}

impl Kernels {
    /// The kernels of a table built with `force_scalar` and the ceiling `isa`
    /// ([`Isa::ceiling`]): AVX2 where the ceiling allows it; AVX-512 where the ceiling
    /// allows it and it is asked for (`isa` = AVX-512), or else if `avx512_by_default` (the
    /// scheme's AVX-512 instance measured faster than its AVX2 one on the CPUs measured,
    /// docs/simd.md). When both instances can run and none was asked for, the choice is
    /// the scheme's default until [`calibrate`] measures them on the table.
    pub(crate) fn new(force_scalar: bool, isa: Option<Isa>, avx512_by_default: bool) -> Kernels {
        let ceiling = Isa::ceiling(force_scalar, isa);
        let (avx512, avx2) = (Avx512::within(ceiling), Avx2::within(ceiling));
        let asked = force_scalar || isa.is_some();
        let choice = if asked {
            KernelChoice::Asked
        } else if avx512.is_some() && avx2.is_some() {
            KernelChoice::Default
        } else {
            KernelChoice::Only
        };
        let by_default = avx512_by_default || Avx512::when_asked(force_scalar, isa).is_some();
        Kernels {
            avx512: avx512.filter(|_| by_default),
            avx2,
            avx512_held: avx512.filter(|_| !by_default),
            choice,
        }
    }

    /// Whether [`calibrate`] may choose between the AVX-512 and AVX2 instances.
    pub(crate) fn choosable(&self) -> bool {
        matches!(
            self.choice,
            KernelChoice::Default | KernelChoice::Measured { .. }
        ) && self.avx2.is_some()
            && (self.avx512.is_some() || self.avx512_held.is_some())
    }

    /// Runs the AVX-512 instances if `avx512` (and the token is held), else the AVX2 ones.
    pub(crate) fn run_avx512(&mut self, avx512: bool) {
        let token = self.avx512.or(self.avx512_held);
        (self.avx512, self.avx512_held) = if avx512 { (token, None) } else { (None, token) };
    }

    /// No AVX-512 instance: for a table shape the AVX-512 kernels do not serve.
    pub(crate) fn without_avx512(&mut self) {
        let choosable = self.choosable();
        (self.avx512, self.avx512_held) = (None, None);
        if choosable {
            self.choice = KernelChoice::Only;
        }
    }

    /// How the path was chosen.
    pub fn choice(&self) -> KernelChoice {
        self.choice
    }
}

/// How a table's SIMD path ([`Fib::implementation`](crate::Fib::implementation)) was
/// chosen, as [`Fib::kernel_choice`](crate::Fib::kernel_choice) reports it and `lpmkit
/// info` prints it.
///
/// ```
/// use lpmkit::simd::KernelChoice;
/// let m = KernelChoice::Measured { avx512_mlps: 150.0, avx2_mlps: 162.0, micros: 9_800 };
/// assert_eq!(
///     m.to_string(),
///     "measured on this table: avx512 150 Mlps, avx2 162 Mlps (9.8 ms)"
/// );
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[non_exhaustive]
pub enum KernelChoice {
    /// The one path the CPU and the ceiling allow (or a table shape that has one).
    #[default]
    Only,
    /// The path asked for: `BuildOptions::isa` or `force_scalar` (under the environment's
    /// ceiling).
    Asked,
    /// The scheme's default: the instance that measured faster on the CPUs of
    /// docs/simd.md, where the table was not measured (a table of fewer than
    /// [`CALIBRATE_FROM`] routes, a scheme built directly, or `LPMKIT_CALIBRATE=0`).
    Default,
    /// Measured on the table when it was built ([`calibrate`]): the lookup rates of both
    /// instances on the same sample of the table's keys, and the time the measurement
    /// took (sampling the keys included).
    Measured {
        /// The AVX-512 instance's rate, millions of lookups per second.
        avx512_mlps: f32,
        /// The AVX2 instance's rate.
        avx2_mlps: f32,
        /// Microseconds the measurement took.
        micros: u32,
    },
}

impl fmt::Display for KernelChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            KernelChoice::Only => f.write_str("the one path this CPU and ceiling allow"),
            KernelChoice::Asked => f.write_str("asked for"),
            KernelChoice::Default => f.write_str("the scheme's default (not measured)"),
            KernelChoice::Measured {
                avx512_mlps,
                avx2_mlps,
                micros,
            } => write!(
                f,
                "measured on this table: avx512 {avx512_mlps:.0} Mlps, avx2 {avx2_mlps:.0} \
                 Mlps ({:.1} ms)",
                micros as f64 / 1000.0
            ),
        }
    }
}

/// For each 8-bit lane mask, the indices of its set lanes in order (then zeros), one byte
/// each: the `vpermd` indices that left-pack those lanes of a 256-bit vector of 32-bit
/// lanes (DXR's and Spider's compaction of the lanes that go on).
pub(crate) static LEFT_PACK: [u64; 256] = {
    let mut t = [0u64; 256];
    let mut m = 0;
    while m < 256 {
        let (mut v, mut n, mut lane) = (0u64, 0, 0);
        while lane < 8 {
            if m & (1 << lane) != 0 {
                v |= (lane as u64) << (8 * n);
                n += 1;
            }
            lane += 1;
        }
        t[m] = v;
        m += 1;
    }
    t
};

/// Hints the CPU to bring the cache line holding `*p` into all cache levels.
///
/// A no-op on architectures without a prefetch intrinsic. Never faults, whatever `p` is.
#[inline(always)]
pub(crate) fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetch is a hint; it never faults, even on an invalid address.
    unsafe {
        core::arch::x86_64::_mm_prefetch(p as *const i8, core::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// [`prefetch`]es every cache line of `s`.
#[inline(always)]
fn prefetch_lines<T>(s: &[T]) {
    let p = s.as_ptr() as *const u8;
    for off in (0..core::mem::size_of_val(s)).step_by(64) {
        prefetch(p.wrapping_add(off));
    }
}

/// The key stream of a bulk lookup that is about to work on `keys[at..at + n]`: the `n`
/// keys `ahead` later are prefetched ([`prefetch_lines`]) if `keys` has them, and when
/// `at` is 0 the first `ahead` too. Only the caller's keys are read.
///
/// The bulk lookups prefetch their own keys a little ahead of the keys they work on:
/// while the misses of a lookup's tables fill the core's miss buffers, the hardware's
/// stream prefetcher falls behind even a sequential key array.
#[inline(always)]
pub(crate) fn prefetch_keys_ahead<T>(keys: &[T], at: usize, n: usize, ahead: usize) {
    if at == 0 {
        prefetch_lines(&keys[..keys.len().min(ahead)]);
    }
    if let Some(later) = keys.get(at + ahead..) {
        prefetch_lines(&later[..later.len().min(n)]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernels_that_run_when_asked_need_avx512_given() {
        assert_eq!(Avx512::when_asked(false, None), None);
        assert_eq!(Avx512::when_asked(false, Some(Isa::Avx2)), None);
        assert_eq!(Avx512::when_asked(true, Some(Isa::Avx512)), None);
        assert_eq!(Avx512::when_asked(false, Some(Isa::Avx512)), Avx512::new());
    }

    #[test]
    fn kernel_choice_follows_the_options_and_switches() {
        let both = Isa::env_ceiling() == Isa::Avx512 && Isa::Avx512.supported();
        for default in [true, false] {
            let mut k = Kernels::new(false, None, default);
            if both {
                assert_eq!(k.choice(), KernelChoice::Default);
                assert!(k.choosable());
                assert_eq!(k.avx512.is_some(), default);
                assert_eq!(k.avx512_held.is_some(), !default);
                k.run_avx512(!default);
                assert_eq!(k.avx512.is_some(), !default);
                assert_eq!(k.avx512.or(k.avx512_held), Avx512::detect());
                // A table shape without an AVX-512 instance keeps none.
                k.without_avx512();
                assert_eq!((k.avx512, k.avx512_held), (None, None));
                assert_eq!(k.choice(), KernelChoice::Only);
                k.run_avx512(true);
                assert_eq!(k.avx512, None);
            } else {
                assert_eq!(k.choice(), KernelChoice::Only);
                assert!(!k.choosable());
            }
            // Asked for: never measured.
            let asked = Kernels::new(false, Some(Isa::Avx512), default);
            assert_eq!(asked.choice(), KernelChoice::Asked);
            assert!(!asked.choosable());
            assert_eq!(asked.avx512, Avx512::within(Isa::Avx512));
            let scalar = Kernels::new(true, None, default);
            assert_eq!((scalar.avx512, scalar.avx2), (None, None));
            assert_eq!(scalar.choice(), KernelChoice::Asked);
        }
        // A measured choice is carried to another build of the same scheme.
        let mut first = Kernels::new(false, None, true);
        if both {
            first.run_avx512(false);
            first.choice = KernelChoice::Measured {
                avx512_mlps: 1.0,
                avx2_mlps: 2.0,
                micros: 3,
            };
            let mut next = Kernels::new(false, None, true);
            apply_choice(&mut next, &first);
            assert_eq!(next, first);
            let mut asked = Kernels::new(false, Some(Isa::Avx512), true);
            apply_choice(&mut asked, &first);
            assert_eq!(asked.choice(), KernelChoice::Asked);
        }
    }

    #[test]
    fn levels_parse_order_and_cap() {
        for isa in Isa::ALL {
            assert_eq!(isa.as_str().parse::<Isa>(), Ok(isa));
            assert_eq!(isa.to_string().to_uppercase().parse::<Isa>(), Ok(isa));
        }
        let err = "sse".parse::<Isa>().unwrap_err();
        assert!(err.contains("scalar, avx2, avx512"), "{err}");
        assert_eq!(Isa::ceiling(true, None), Isa::Scalar);
        assert_eq!(
            Isa::ceiling(false, Some(Isa::Avx2)),
            Isa::Avx2.min(Isa::env_ceiling())
        );
        assert_eq!(Isa::ceiling(false, None), Isa::env_ceiling());
        assert_eq!(Isa::supported_levels().last(), Some(&Isa::Scalar));
        assert!(Isa::supported_levels().contains(&Isa::best_supported()));
    }

    #[test]
    fn tokens_obey_the_ceiling() {
        assert!(Avx2::within(Isa::Scalar).is_none());
        assert!(Avx512::within(Isa::Avx2).is_none());
        assert!(Popcnt::within(Isa::Scalar).is_none());
        if Isa::env_ceiling() == Isa::Avx512 {
            assert_eq!(
                Avx512::within(Isa::Avx512).is_some(),
                Isa::Avx512.supported()
            );
            assert_eq!(Avx2::within(Isa::Avx2).is_some(), Isa::Avx2.supported());
            assert_eq!(Popcnt::within(Isa::Avx2), Popcnt::detect());
        }
        // An AVX-512 CPU has AVX2: the base token implies it.
        if let Some(t) = Avx512::detect() {
            assert!(Avx2::detect().is_some());
            assert_eq!(t.avx2(), Avx2::detect().unwrap());
            for ext in [
                t.vpopcntdq().map(|e| e.avx512()),
                t.bitalg().map(|e| e.avx512()),
            ] {
                assert!(ext.is_none_or(|e| e == t));
            }
        }
    }
}
