//! Address families and prefixes.
//!
//! lpmkit represents an address as a plain unsigned integer in host byte order: an IPv4
//! address is a `u32` ([`Ipv4`]), an IPv6 address a `u128` ([`Ipv6`]). Both implement the
//! sealed [`Address`] trait, which is everything generic code (the [`Rib`](crate::Rib), the
//! schemes, the tests) needs to know about a family: its width, bit extraction, masks and
//! conversions to and from [`std::net`].
//!
//! A [`Prefix`] is an address plus a length. It is always canonical: the host bits (those
//! past the length) are zero. [`Prefix::new`] refuses an address with host bits set, naming
//! the prefix; [`Prefix::new_truncating`] clears them instead, for callers that ask to
//! normalize.
//!
//! ```
//! use lpmkit::{Ipv4, Prefix};
//!
//! let p: Prefix<Ipv4> = "10.0.0.0/8".parse()?;
//! assert!(p.contains(0x0a01_0203));
//! assert_eq!(p.last(), 0x0aff_ffff);
//! assert!("10.0.0.1/8".parse::<Prefix<Ipv4>>().is_err()); // host bits set
//! # Ok::<(), lpmkit::PrefixError>(())
//! ```

use core::fmt;
use core::hash::Hash;
use core::str::FromStr;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// IPv4 addresses: `u32` in host byte order.
pub type Ipv4 = u32;
/// IPv6 addresses: `u128` in host byte order.
pub type Ipv6 = u128;

/// `keys` as `u32`s when `A` is IPv4, for kernels that load them by vectors.
#[inline(always)]
pub(crate) fn v4_keys<A: Address>(keys: &[A]) -> Option<&[u32]> {
    if A::BITS != 32 || core::mem::size_of::<A>() != 4 {
        return None;
    }
    // SAFETY: `Address` is sealed and implemented for `u32` and `u128` only, so a 32-bit
    // `A` is `u32`: same size, alignment and validity.
    Some(unsafe { core::slice::from_raw_parts(keys.as_ptr() as *const u32, keys.len()) })
}

/// `keys` as `u128`s when `A` is IPv6.
#[inline(always)]
pub(crate) fn v6_keys<A: Address>(keys: &[A]) -> Option<&[u128]> {
    if A::BITS != 128 || core::mem::size_of::<A>() != 16 {
        return None;
    }
    // SAFETY: `Address` is sealed and implemented for `u32` and `u128` only, so a 128-bit
    // `A` is `u128`: same size, alignment and validity.
    Some(unsafe { core::slice::from_raw_parts(keys.as_ptr() as *const u128, keys.len()) })
}

/// Which address family a value belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Family {
    /// IPv4 (32-bit addresses).
    V4,
    /// IPv6 (128-bit addresses).
    V6,
}

impl Family {
    /// `"ipv4"` or `"ipv6"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Family::V4 => "ipv4",
            Family::V6 => "ipv6",
        }
    }

    /// Address width in bits (32 or 128).
    pub fn bits(self) -> u8 {
        match self {
            Family::V4 => 32,
            Family::V6 => 128,
        }
    }
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for u32 {}
    impl Sealed for u128 {}
}

/// An address family: implemented for `u32` (IPv4) and `u128` (IPv6) only.
///
/// Bits are numbered from the most significant one: bit 0 is the first bit of the address
/// as written, so the first `len` bits of an address are its `/len` network part.
pub trait Address:
    Copy
    + Eq
    + Ord
    + Hash
    + Default
    + fmt::Debug
    + fmt::LowerHex
    + Send
    + Sync
    + 'static
    + sealed::Sealed
{
    /// Width in bits: 32 or 128.
    const BITS: u8;
    /// The family.
    const FAMILY: Family;
    /// The all-zero address.
    const ZERO: Self;
    /// The all-ones address.
    const MAX: Self;
    /// The matching `std::net` type.
    type Std: Copy + fmt::Display + FromStr + Into<IpAddr>;

    /// Converts from the `std::net` type.
    fn from_std(a: Self::Std) -> Self;
    /// Converts to the `std::net` type.
    fn to_std(self) -> Self::Std;
    /// Widens to `u128` (IPv4 addresses occupy the low 32 bits).
    #[doc(hidden)]
    fn to_u128(self) -> u128;
    /// Narrows from `u128`, keeping the low [`BITS`](Self::BITS) bits.
    #[doc(hidden)]
    fn from_u128(v: u128) -> Self;
    /// Extracts the address from an [`IpAddr`], or `None` for the other family.
    fn from_ip(ip: IpAddr) -> Option<Self>;

    /// The network mask of a `/len` prefix: `len` leading ones. `len` must be `<= BITS`.
    #[doc(hidden)]
    fn netmask(len: u8) -> Self;
    /// The host mask of a `/len` prefix: `BITS - len` trailing ones.
    #[doc(hidden)]
    fn hostmask(len: u8) -> Self;
    #[doc(hidden)]
    /// Bit `i` counted from the most significant bit (`i < BITS`).
    fn bit(self, i: u8) -> bool;
    #[doc(hidden)]
    /// `width` bits (`1..=32`) starting at bit `offset` from the most significant end,
    /// as the low bits of a `u32`. Bits past the end of the address read as zero.
    fn bits_at(self, offset: u8, width: u8) -> u32;
    #[doc(hidden)]
    /// Number of leading bits `self` and `other` share.
    fn common_prefix_len(self, other: Self) -> u8;
    #[doc(hidden)]
    /// `self & other`.
    fn and(self, other: Self) -> Self;
    #[doc(hidden)]
    /// `self | other`.
    fn or(self, other: Self) -> Self;
    /// `self + 1`, or `None` on overflow.
    #[doc(hidden)]
    fn checked_inc(self) -> Option<Self>;
    /// `self - 1`, or `None` below zero.
    #[doc(hidden)]
    fn checked_dec(self) -> Option<Self>;
    #[doc(hidden)]
    /// `self` with bit `i` (from the most significant end) set.
    fn with_bit(self, i: u8) -> Self;
    #[doc(hidden)]
    /// `self << n` (`n < BITS`): stride walks shift the bits they consumed out.
    fn shl(self, n: u32) -> Self;
    #[doc(hidden)]
    /// The first `n` bits (`n < 32`) as the low bits of a `u32` (0 for `n = 0`): the
    /// index of a direct-pointing table or of a stride at the top of a shifted address.
    fn top_bits(self, n: u32) -> u32;
}

macro_rules! impl_address {
    ($t:ty, $bits:expr, $fam:expr, $std:ty, $ipvar:ident) => {
        impl Address for $t {
            const BITS: u8 = $bits;
            const FAMILY: Family = $fam;
            const ZERO: Self = 0;
            const MAX: Self = <$t>::MAX;
            type Std = $std;

            #[inline]
            fn from_std(a: $std) -> Self {
                <$t>::from(a)
            }
            #[inline]
            fn to_std(self) -> $std {
                <$std>::from(self)
            }
            #[inline]
            fn to_u128(self) -> u128 {
                self as u128
            }
            #[inline]
            fn from_u128(v: u128) -> Self {
                v as $t
            }
            #[inline]
            fn from_ip(ip: IpAddr) -> Option<Self> {
                match ip {
                    IpAddr::$ipvar(a) => Some(<$t>::from(a)),
                    _ => None,
                }
            }
            #[inline]
            fn netmask(len: u8) -> Self {
                debug_assert!(len <= $bits);
                if len == 0 {
                    0
                } else {
                    <$t>::MAX << ($bits - len)
                }
            }
            #[inline]
            fn hostmask(len: u8) -> Self {
                !Self::netmask(len)
            }
            #[inline]
            fn bit(self, i: u8) -> bool {
                debug_assert!(i < $bits);
                (self >> ($bits - 1 - i)) & 1 == 1
            }
            #[inline]
            fn bits_at(self, offset: u8, width: u8) -> u32 {
                debug_assert!((1..=32).contains(&width));
                let end = offset as u32 + width as u32;
                if $bits <= 32 && end <= 64 {
                    // The address in the high half of a u64: one shift, no branch on
                    // where the field ends (bits past the address read as zeros).
                    let x = ((self as u64) << (64 - $bits)) >> (64 - end);
                    return (x as u32) & (u32::MAX >> (32 - width as u32));
                }
                let v = if end <= $bits {
                    self >> ($bits - end)
                } else if (offset as u32) < $bits {
                    self << (end - $bits)
                } else {
                    0
                };
                (v as u32) & (u32::MAX >> (32 - width as u32))
            }
            #[inline]
            fn common_prefix_len(self, other: Self) -> u8 {
                (self ^ other).leading_zeros() as u8
            }
            #[inline]
            fn and(self, other: Self) -> Self {
                self & other
            }
            #[inline]
            fn or(self, other: Self) -> Self {
                self | other
            }
            #[inline]
            fn checked_inc(self) -> Option<Self> {
                self.checked_add(1)
            }
            #[inline]
            fn checked_dec(self) -> Option<Self> {
                self.checked_sub(1)
            }
            #[inline]
            fn with_bit(self, i: u8) -> Self {
                debug_assert!(i < $bits);
                self | (1 << ($bits - 1 - i))
            }
            #[inline(always)]
            fn shl(self, n: u32) -> Self {
                debug_assert!(n < $bits);
                self << n
            }
            #[inline(always)]
            fn top_bits(self, n: u32) -> u32 {
                debug_assert!(n < 32);
                ((self >> ($bits - 32)) as u32) >> 1 >> (31 - n)
            }
        }
    };
}

impl_address!(u32, 32, Family::V4, Ipv4Addr, V4);
impl_address!(u128, 128, Family::V6, Ipv6Addr, V6);

/// Formats an address the way `std::net` does (dotted quad, RFC 5952).
#[doc(hidden)]
pub fn format_addr<A: Address>(a: A) -> String {
    a.to_std().to_string()
}

/// Parses an address of family `A`, or `None`.
#[doc(hidden)]
pub fn parse_addr<A: Address>(s: &str) -> Option<A> {
    s.parse::<A::Std>().ok().map(A::from_std)
}

/// A canonical prefix: network address (host bits zero) and length.
///
/// Ordering is by address, then length, which is also the order of a pre-order walk of a
/// binary trie: a covering prefix comes before everything it covers.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Prefix<A: Address> {
    addr: A,
    len: u8,
}

/// Why a prefix was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PrefixError {
    /// The length exceeds the family's width.
    LengthTooLong {
        /// The length given.
        len: u32,
        /// The family's maximum (32 or 128).
        max: u8,
    },
    /// Bits past the length are set: the text names the prefix and its canonical form.
    HostBitsSet {
        /// The prefix as given.
        given: String,
        /// The canonical prefix with the host bits cleared.
        canonical: String,
    },
    /// The text is not `ADDRESS/LEN` of the expected family.
    Syntax {
        /// The text as given.
        text: String,
        /// What is wrong with it.
        reason: &'static str,
    },
}

impl fmt::Display for PrefixError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PrefixError::LengthTooLong { len, max } => {
                write!(f, "prefix length /{len} exceeds the maximum /{max}")
            }
            PrefixError::HostBitsSet { given, canonical } => write!(
                f,
                "prefix {given} has host bits set (did you mean {canonical}?)"
            ),
            PrefixError::Syntax { text, reason } => {
                write!(f, "bad prefix {:?}: {reason}", crate::shown::Shown(text))
            }
        }
    }
}

impl std::error::Error for PrefixError {}

impl<A: Address> Prefix<A> {
    /// The default route `/0`.
    pub const DEFAULT: Prefix<A> = Prefix {
        addr: A::ZERO,
        len: 0,
    };

    /// A prefix from a network address and a length; refuses host bits and overlong lengths.
    pub fn new(addr: A, len: u8) -> Result<Self, PrefixError> {
        if len > A::BITS {
            return Err(PrefixError::LengthTooLong {
                len: len as u32,
                max: A::BITS,
            });
        }
        let canon = addr.and(A::netmask(len));
        if canon != addr {
            return Err(PrefixError::HostBitsSet {
                given: format!("{}/{}", format_addr(addr), len),
                canonical: format!("{}/{}", format_addr(canon), len),
            });
        }
        Ok(Prefix { addr, len })
    }

    /// A prefix from any address in it: the host bits are cleared.
    ///
    /// # Panics
    /// If `len` exceeds the family's width.
    pub fn new_truncating(addr: A, len: u8) -> Self {
        assert!(len <= A::BITS, "prefix length /{len} exceeds /{}", A::BITS);
        Prefix {
            addr: addr.and(A::netmask(len)),
            len,
        }
    }

    /// The host route (`/32` or `/128`) of `addr`.
    pub fn host(addr: A) -> Self {
        Prefix { addr, len: A::BITS }
    }

    /// Parses `ADDRESS/LEN`; with `normalize`, host bits are cleared instead of refused.
    pub fn parse_with(s: &str, normalize: bool) -> Result<Self, PrefixError> {
        let syntax = |reason| PrefixError::Syntax {
            text: s.to_string(),
            reason,
        };
        let (a, l) = s.split_once('/').ok_or_else(|| syntax("missing '/LEN'"))?;
        let addr: A = parse_addr(a).ok_or_else(|| {
            syntax(match A::FAMILY {
                Family::V4 => "not an IPv4 address",
                Family::V6 => "not an IPv6 address",
            })
        })?;
        if l.is_empty() || l.len() > 3 || !l.bytes().all(|b| b.is_ascii_digit()) {
            return Err(syntax("the length is not a number"));
        }
        let len: u32 = l
            .parse()
            .map_err(|_| syntax("the length is not a number"))?;
        if len > A::BITS as u32 {
            return Err(PrefixError::LengthTooLong { len, max: A::BITS });
        }
        if normalize {
            Ok(Self::new_truncating(addr, len as u8))
        } else {
            Self::new(addr, len as u8)
        }
    }

    /// The network address.
    #[inline]
    pub fn addr(&self) -> A {
        self.addr
    }

    /// The length.
    #[inline]
    pub fn len(&self) -> u8 {
        self.len
    }

    /// True for the default route `/0` (the prefix of length zero).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The first address in the prefix (the network address).
    #[inline]
    pub fn first(&self) -> A {
        self.addr
    }

    /// The last address in the prefix.
    #[inline]
    pub fn last(&self) -> A {
        self.addr.or(A::hostmask(self.len))
    }

    /// Whether `addr` lies in the prefix.
    #[inline]
    pub fn contains(&self, addr: A) -> bool {
        addr.and(A::netmask(self.len)) == self.addr
    }

    /// Whether `other` lies entirely in `self` (a prefix covers itself).
    #[inline]
    pub fn covers(&self, other: &Prefix<A>) -> bool {
        self.len <= other.len && self.contains(other.addr)
    }

    /// The covering prefix one bit shorter, or `None` for `/0`.
    pub fn parent(&self) -> Option<Self> {
        (self.len > 0).then(|| Self::new_truncating(self.addr, self.len - 1))
    }

    /// The two halves of the prefix, or `None` for a host route.
    pub fn children(&self) -> Option<(Self, Self)> {
        (self.len < A::BITS).then(|| {
            let l = self.len + 1;
            (
                Prefix {
                    addr: self.addr,
                    len: l,
                },
                Prefix {
                    addr: self.addr.with_bit(self.len),
                    len: l,
                },
            )
        })
    }

    /// The number of addresses in the prefix as a `u128`, saturating at `u128::MAX` for `::/0`.
    pub fn size(&self) -> u128 {
        let host = (A::BITS - self.len) as u32;
        if host >= 128 {
            u128::MAX
        } else {
            1u128 << host
        }
    }
}

impl<A: Address> FromStr for Prefix<A> {
    type Err = PrefixError;
    fn from_str(s: &str) -> Result<Self, PrefixError> {
        Self::parse_with(s, false)
    }
}

impl<A: Address> fmt::Display for Prefix<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr.to_std(), self.len)
    }
}

impl<A: Address> fmt::Debug for Prefix<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks() {
        assert_eq!(u32::netmask(0), 0);
        assert_eq!(u32::netmask(8), 0xff00_0000);
        assert_eq!(u32::netmask(32), u32::MAX);
        assert_eq!(u128::netmask(128), u128::MAX);
        assert_eq!(u128::netmask(1), 1u128 << 127);
        assert_eq!(u32::hostmask(24), 0xff);
    }

    #[test]
    fn bits_at() {
        let a: u32 = 0x1234_5678;
        assert_eq!(a.bits_at(0, 16), 0x1234);
        assert_eq!(a.bits_at(16, 8), 0x56);
        assert_eq!(a.bits_at(24, 8), 0x78);
        assert_eq!(a.bits_at(0, 32), a);
        assert_eq!(a.bits_at(28, 8), 0x80); // runs past the end: zero-filled
        assert_eq!(a.bits_at(32, 8), 0);
        // Against the bit-by-bit definition, fields inside, across and past the end.
        for x in [0u32, u32::MAX, 0x8000_0001, 0x1234_5678, 0xdead_beef] {
            for offset in 0..=40u8 {
                for width in 1..=32u8 {
                    let want = (0..width).fold(0u32, |acc, i| {
                        let b = offset as u32 + i as u32;
                        acc << 1 | (b < 32 && x >> (31 - b) & 1 == 1) as u32
                    });
                    assert_eq!(x.bits_at(offset, width), want, "{x:#x} {offset} {width}");
                }
            }
        }
        let b: u128 = 0x2001_0db8 << 96;
        assert_eq!(b.bits_at(0, 32), 0x2001_0db8);
        assert_eq!(b.bits_at(120, 8), 0);
        assert!(b.bit(2));
        assert!(!b.bit(0));
    }

    #[test]
    fn parse_display() {
        let p: Prefix<Ipv4> = "192.168.0.0/16".parse().unwrap();
        assert_eq!(p.addr(), 0xc0a8_0000);
        assert_eq!(p.to_string(), "192.168.0.0/16");
        let q: Prefix<Ipv6> = "2001:db8::/32".parse().unwrap();
        assert_eq!(q.to_string(), "2001:db8::/32");
        assert_eq!(
            "0.0.0.0/0".parse::<Prefix<Ipv4>>().unwrap(),
            Prefix::DEFAULT
        );
        assert_eq!(
            "::/0".parse::<Prefix<Ipv6>>().unwrap().size(),
            u128::MAX,
            "::/0 saturates"
        );
    }

    #[test]
    fn parse_errors() {
        let e = "10.0.0.1/8".parse::<Prefix<Ipv4>>().unwrap_err();
        assert_eq!(
            e.to_string(),
            "prefix 10.0.0.1/8 has host bits set (did you mean 10.0.0.0/8?)"
        );
        assert!(matches!(
            "10.0.0.0/33".parse::<Prefix<Ipv4>>(),
            Err(PrefixError::LengthTooLong { len: 33, max: 32 })
        ));
        assert!("10.0.0.0".parse::<Prefix<Ipv4>>().is_err());
        assert!("10.0.0.0/".parse::<Prefix<Ipv4>>().is_err());
        assert!("10.0.0.0/-1".parse::<Prefix<Ipv4>>().is_err());
        assert!("10.0.0/8".parse::<Prefix<Ipv4>>().is_err());
        assert!("::/8".parse::<Prefix<Ipv4>>().is_err());
        assert!("10.0.0.0/8".parse::<Prefix<Ipv6>>().is_err());
        assert_eq!(
            Prefix::<Ipv4>::parse_with("10.1.2.3/8", true).unwrap(),
            "10.0.0.0/8".parse().unwrap()
        );
    }

    #[test]
    fn relations() {
        let p: Prefix<Ipv4> = "10.0.0.0/8".parse().unwrap();
        let q: Prefix<Ipv4> = "10.128.0.0/9".parse().unwrap();
        assert!(p.covers(&q) && !q.covers(&p) && p.covers(&p));
        assert_eq!(q.parent().unwrap(), p);
        assert_eq!(p.children().unwrap().1, q);
        assert!(Prefix::<Ipv4>::host(1).children().is_none());
        assert!(Prefix::<Ipv4>::DEFAULT.parent().is_none());
        assert_eq!(p.last(), 0x0aff_ffff);
        assert!(p < q);
    }
}
