//! The serialised form of a [`RouteTable`](super::RouteTable), version 1 (all integers
//! little-endian):
//!
//! ```text
//! magic    8 bytes  "LPMKITRT"
//! version  u16      1
//! family   u8       4 or 6
//! vtag     u8       the value type's TableValue::TAG
//! scheme   u32 length + UTF-8
//! scalar   u8       BuildOptions::force_scalar
//! ways     u32      BuildOptions::ways (0 = none)
//! settings u32 count, then count × (key, value) strings
//! values   u32 count, then count × the value type's encoding (value id i+1 at index i)
//! routes   u64 count, then count × (address, 4 or 16 bytes big-endian; length u8; value id u32)
//! check    u64      FNV-1a 64 of every byte before it
//! ```
//!
//! Decoding checks every part and stops at the first that fails, naming it. The checksum
//! catches accidental corruption; whatever the bytes, decoding never panics and never
//! produces a table that breaks an invariant (prefixes canonical, value ids in range,
//! values distinct), because each of those is checked too.

use super::values::{put_str, take, take_array, take_str, TableValue};
use super::TableError;
use crate::nexthop::NextHop;
use crate::prefix::{Address, Family, Prefix};
use crate::registry::BuildOptions;
use crate::rib::Rib;

const MAGIC: &[u8; 8] = b"LPMKITRT";
const VERSION: u16 = 1;

fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

fn family_byte(f: Family) -> u8 {
    match f {
        Family::V4 => 4,
        Family::V6 => 6,
    }
}

pub(super) fn encode<'v, A: Address, V: TableValue>(
    scheme: &str,
    options: &BuildOptions,
    values: impl Iterator<Item = &'v V>,
    value_count: usize,
    rib: &Rib<A>,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 + rib.len() * (A::BITS as usize / 8 + 5));
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.push(family_byte(A::FAMILY));
    out.push(V::TAG);
    put_str(&mut out, scheme);
    out.push(options.force_scalar as u8);
    out.extend_from_slice(&(options.ways.unwrap_or(0) as u32).to_le_bytes());
    out.extend_from_slice(&(options.settings.len() as u32).to_le_bytes());
    for (k, v) in &options.settings {
        put_str(&mut out, k);
        put_str(&mut out, v);
    }
    out.extend_from_slice(&(value_count as u32).to_le_bytes());
    for v in values {
        v.encode(&mut out);
    }
    out.extend_from_slice(&(rib.len() as u64).to_le_bytes());
    let addr_bytes = A::BITS as usize / 8;
    for (p, nh) in rib.iter() {
        out.extend_from_slice(&p.addr().to_u128().to_be_bytes()[16 - addr_bytes..]);
        out.push(p.len());
        out.extend_from_slice(&nh.get().to_le_bytes());
    }
    let check = fnv1a(&out);
    out.extend_from_slice(&check.to_le_bytes());
    out
}

/// What a blob holds.
pub(super) struct Decoded<A: Address, V> {
    pub scheme: String,
    pub options: BuildOptions,
    pub values: Vec<V>,
    pub rib: Rib<A>,
}

fn bad(why: impl Into<String>) -> TableError {
    TableError::Blob(why.into())
}

/// The header up to the family byte: the family of a serialised table, so that code that
/// handles both families can pick the type to read it as.
#[doc(hidden)]
pub fn blob_family(bytes: &[u8]) -> Result<Family, TableError> {
    let mut input = bytes;
    let magic = take(&mut input, 8).ok_or_else(|| bad("shorter than the header"))?;
    if magic != MAGIC {
        return Err(bad("no LPMKITRT magic: not a serialised lpmkit table"));
    }
    let version =
        u16::from_le_bytes(take_array(&mut input).ok_or_else(|| bad("truncated header"))?);
    if version != VERSION {
        return Err(bad(format!(
            "format version {version}, this lpmkit reads version {VERSION}"
        )));
    }
    match take_array::<1>(&mut input).ok_or_else(|| bad("truncated header"))?[0] {
        4 => Ok(Family::V4),
        6 => Ok(Family::V6),
        b => Err(bad(format!("unknown address family byte {b}"))),
    }
}

pub(super) fn decode<A: Address, V: TableValue>(bytes: &[u8]) -> Result<Decoded<A, V>, TableError> {
    let family = blob_family(bytes)?;
    if family != A::FAMILY {
        return Err(bad(format!(
            "the table is {family}, an {} table was asked for",
            A::FAMILY
        )));
    }
    if bytes.len() < 8 {
        return Err(bad("truncated"));
    }
    let (body, check) = bytes.split_at(bytes.len() - 8);
    if fnv1a(body).to_le_bytes() != check {
        return Err(bad("checksum mismatch: the bytes are corrupt or truncated"));
    }
    let mut input = &body[11..];
    let vtag = take_array::<1>(&mut input).ok_or_else(|| bad("truncated header"))?[0];
    if vtag != V::TAG {
        return Err(bad(format!(
            "value type tag {vtag}, this table's value type has tag {}",
            V::TAG
        )));
    }
    let scheme = take_str(&mut input).ok_or_else(|| bad("bad scheme name"))?;
    let scalar = take_array::<1>(&mut input).ok_or_else(|| bad("truncated options"))?[0];
    let ways = u32::from_le_bytes(take_array(&mut input).ok_or_else(|| bad("truncated options"))?);
    let n = u32::from_le_bytes(take_array(&mut input).ok_or_else(|| bad("truncated settings"))?);
    let mut options = BuildOptions::scalar(scalar != 0);
    options.ways = (ways != 0).then_some(ways as usize);
    for _ in 0..n {
        let k = take_str(&mut input).ok_or_else(|| bad("bad setting"))?;
        let v = take_str(&mut input).ok_or_else(|| bad("bad setting"))?;
        options.settings.push((k, v));
    }
    let n = u32::from_le_bytes(take_array(&mut input).ok_or_else(|| bad("truncated values"))?);
    let mut values = Vec::new();
    let mut distinct = std::collections::HashSet::new();
    for i in 0..n {
        let v = V::decode(&mut input).ok_or_else(|| bad(format!("value {i} is malformed")))?;
        if !distinct.insert(v.clone()) {
            return Err(bad(format!("value {i} repeats an earlier one")));
        }
        values.push(v);
    }
    let routes = u64::from_le_bytes(take_array(&mut input).ok_or_else(|| bad("truncated routes"))?);
    let addr_bytes = A::BITS as usize / 8;
    let mut rib = Rib::new();
    for i in 0..routes {
        let rec = take(&mut input, addr_bytes + 5)
            .ok_or_else(|| bad(format!("route {i} of {routes} is truncated")))?;
        let mut a = [0u8; 16];
        a[16 - addr_bytes..].copy_from_slice(&rec[..addr_bytes]);
        let addr = A::from_u128(u128::from_be_bytes(a));
        let len = rec[addr_bytes];
        let p = Prefix::new(addr, len).map_err(|e| bad(format!("route {i}: {e}")))?;
        let id = u32::from_le_bytes(rec[addr_bytes + 1..].try_into().expect("4 bytes"));
        let nh = NextHop::new(id)
            .filter(|_| id <= n)
            .ok_or_else(|| bad(format!("route {i} ({p}) has value id {id} of {n}")))?;
        if rib.insert(p, nh).is_some() {
            return Err(bad(format!("route {i} ({p}) repeats a prefix")));
        }
    }
    if !input.is_empty() {
        return Err(bad(format!("{} bytes after the routes", input.len())));
    }
    Ok(Decoded {
        scheme,
        options,
        values,
        rib,
    })
}

/// The checksum, for the tests that forge blobs with a valid one.
#[cfg(test)]
pub(super) fn tests_fnv(bytes: &[u8]) -> u64 {
    fnv1a(bytes)
}
