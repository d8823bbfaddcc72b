//! The entry-width rule every scheme follows: the narrowest entry that holds the table;
//! a forced width that does not hold it is a [`BuildError`], never a truncation.
//!
//! * [`Width`]: the widths a scheme's entries (DIR-24-8's table entries, Poptrie's leaves,
//!   …) come in; configs take `Option<Width>` to force one.
//! * [`Word`]: the entry types themselves (`u16`, `u32`), so a structure is written once,
//!   generic over its entry, and instantiated per width.
//! * [`narrowest`]: the rule, for any set of layouts (Spider's element layouts use it too).
//! * [`ByWidth`] and [`with_width!`]: a structure instantiated at either width, and the
//!   one dispatch every scheme uses to reach it.

use super::arena::Zeroable;
use crate::fib::BuildError;
use crate::mem::Plain;

pub use crate::fib::Width;

/// An entry type: `u16` or `u32`.
pub(crate) trait Word: Plain + Zeroable {
    /// Its width.
    const WIDTH: Width;
    /// The value from a `u32` that fits (checked in debug builds).
    fn from_u32(v: u32) -> Self;
    /// The value as a `u32`.
    fn get(self) -> u32;
}

impl Word for u16 {
    const WIDTH: Width = Width::U16;
    #[inline(always)]
    fn from_u32(v: u32) -> Self {
        debug_assert!(v <= u16::MAX as u32, "{v} does not fit 16 bits");
        v as u16
    }
    #[inline(always)]
    fn get(self) -> u32 {
        self as u32
    }
}

impl Word for u32 {
    const WIDTH: Width = Width::U32;
    #[inline(always)]
    fn from_u32(v: u32) -> Self {
        v
    }
    #[inline(always)]
    fn get(self) -> u32 {
        self
    }
}

/// The width rule: `forced` if it holds the table, else the first of `candidates`
/// (narrowest first) that does. `holds(l)` says whether layout `l` holds the table, with
/// the error naming the limit and the value when it does not; when no candidate holds it,
/// the widest one's error is returned.
pub(crate) fn narrowest<L: Copy>(
    forced: Option<L>,
    candidates: &[L],
    holds: impl Fn(L) -> Result<(), BuildError>,
) -> Result<L, BuildError> {
    if let Some(l) = forced {
        return holds(l).map(|()| l);
    }
    let mut last = None;
    for &l in candidates {
        match holds(l) {
            Ok(()) => return Ok(l),
            Err(e) => last = Some(e),
        }
    }
    Err(last.expect("at least one candidate layout"))
}

/// The width rule for a structure whose fit shows only while it is built: `build(l)` for
/// `forced`, else for each of `candidates` (narrowest first) until one builds. `build`
/// returns `Ok(Err(e))` when the table does not fit `l` (`e` names the limit: the next
/// candidate is tried, and the widest one's error is returned when none fits) and
/// `Err(e)` for an error no width mends.
pub(crate) fn narrowest_built<L: Copy, T>(
    forced: Option<L>,
    candidates: &[L],
    mut build: impl FnMut(L) -> Result<Result<T, BuildError>, BuildError>,
) -> Result<T, BuildError> {
    let tried = match &forced {
        Some(l) => core::slice::from_ref(l),
        None => candidates,
    };
    let mut last = None;
    for &l in tried {
        match build(l)? {
            Ok(t) => return Ok(t),
            Err(e) => last = Some(e),
        }
    }
    Err(last.expect("at least one candidate layout"))
}

/// `Err(NextHopOverflow)` if `requested > max`.
pub(crate) fn check_next_hop(scheme: &str, max: u64, requested: u64) -> Result<(), BuildError> {
    if requested > max {
        return Err(BuildError::NextHopOverflow {
            scheme: scheme.to_string(),
            max,
            requested,
        });
    }
    Ok(())
}

/// `Err(CapacityExceeded)` if `requested > max`.
pub(crate) fn check_capacity(
    scheme: &str,
    what: &'static str,
    max: u64,
    requested: u64,
) -> Result<(), BuildError> {
    if requested > max {
        return Err(BuildError::CapacityExceeded {
            scheme: scheme.to_string(),
            what,
            max,
            requested,
        });
    }
    Ok(())
}

/// A structure instantiated at one of the two widths.
#[derive(Clone, Debug)]
pub(crate) enum ByWidth<N, W> {
    /// The 16-bit instance.
    U16(N),
    /// The 32-bit instance.
    U32(W),
}

impl<N, W> ByWidth<N, W> {
    /// The width in use.
    pub(crate) fn width(&self) -> Width {
        match self {
            ByWidth::U16(_) => Width::U16,
            ByWidth::U32(_) => Width::U32,
        }
    }
}

/// Runs `$body` with `$t` bound to the instance inside a [`ByWidth`] (by value, `&` or
/// `&mut`, as `$layout` is), whatever its width.
macro_rules! with_width {
    ($layout:expr, $t:ident => $body:expr) => {
        match $layout {
            $crate::schemes::common::ByWidth::U16($t) => $body,
            $crate::schemes::common::ByWidth::U32($t) => $body,
        }
    };
}
pub(crate) use with_width;

#[cfg(test)]
mod tests {
    use super::*;

    fn limit(w: Width, requested: u64) -> Result<(), BuildError> {
        let max = match w {
            Width::U16 => 100,
            Width::U32 => 1000,
        };
        check_next_hop("t", max, requested)
    }

    #[test]
    fn narrowest_that_holds() {
        assert_eq!(
            narrowest(None, &Width::ALL, |w| limit(w, 5)),
            Ok(Width::U16)
        );
        assert_eq!(
            narrowest(None, &Width::ALL, |w| limit(w, 500)),
            Ok(Width::U32)
        );
        assert!(matches!(
            narrowest(None, &Width::ALL, |w| limit(w, 5000)),
            Err(BuildError::NextHopOverflow {
                max: 1000,
                requested: 5000,
                ..
            })
        ));
        assert_eq!(
            narrowest(Some(Width::U32), &Width::ALL, |w| limit(w, 5)),
            Ok(Width::U32)
        );
        assert!(matches!(
            narrowest(Some(Width::U16), &Width::ALL, |w| limit(w, 500)),
            Err(BuildError::NextHopOverflow {
                max: 100,
                requested: 500,
                ..
            })
        ));
    }
}
